"""GraphPool: a few instances of one graph, each lent to one run at a time."""

import threading

import pytest

from needle.runtime.pool import GraphPool


class Graph:
    made = 0

    def __init__(self) -> None:
        Graph.made += 1
        self.number = Graph.made


@pytest.fixture(autouse=True)
def fresh():
    Graph.made = 0


class TestGraphPool:
    def test_builds_the_first_instance_at_once_and_the_others_on_demand(self):
        pool = GraphPool(Graph, size=3)
        assert (pool.made, pool.first.number) == (1, 1)
        with pool.lend() as a, pool.lend() as b:
            assert {a.number, b.number} == {1, 2}
        assert pool.made == 2
        with pool.lend() as again:
            assert again.number in (1, 2)  # an idle instance is lent again, none is built
        assert pool.made == 2

    def test_fill_builds_every_instance(self):
        pool = GraphPool(Graph, size=3)
        pool.fill()
        assert pool.made == 3
        pool.fill()
        assert pool.made == 3

    def test_bad_size_raises(self):
        with pytest.raises(ValueError, match="size must be >= 1, got 0"):
            GraphPool(Graph, size=0)

    def test_concurrent_runs_get_different_instances_and_the_next_waits(self):
        pool = GraphPool(Graph, size=2)
        inside, release = threading.Barrier(3), threading.Event()
        seen = []

        def run() -> None:
            with pool.lend() as graph:
                seen.append(graph.number)
                inside.wait(timeout=5)
                release.wait(timeout=5)

        runners = [threading.Thread(target=run) for _ in range(2)]
        for runner in runners:
            runner.start()
        inside.wait(timeout=5)  # both runs hold an instance at the same time
        assert sorted(seen) == [1, 2]
        third = threading.Thread(target=lambda: pool.lend().__enter__())
        third.start()
        third.join(timeout=0.3)
        assert third.is_alive()  # all instances lent: the third run waits
        release.set()
        for runner in runners:
            runner.join(timeout=5)
        third.join(timeout=5)
        assert not third.is_alive() and pool.made == 2

    def test_a_failed_build_frees_its_place(self):
        calls = []

        def build():
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("model missing")
            return object()

        pool = GraphPool(build, size=2)
        with pool.lend():
            with pytest.raises(RuntimeError, match="model missing"), pool.lend():
                pass
            assert pool.made == 1
            with pool.lend() as second:
                assert second is not pool.first
        assert pool.made == 2

    def test_an_instance_comes_back_after_a_failed_run(self):
        pool = GraphPool(Graph, size=1)
        with pytest.raises(ValueError), pool.lend():
            raise ValueError("bad query")
        lent = []

        def borrow() -> None:
            with pool.lend() as graph:
                lent.append(graph)

        borrower = threading.Thread(target=borrow, daemon=True)
        borrower.start()
        borrower.join(timeout=30)  # an instance never given back would leave the borrower waiting for ever
        assert lent == [pool.first]


class TestNeedleGraphs:
    """`Needle` builds each graph once, and a graph that is loading holds up no run of another one."""

    @staticmethod
    def _needle(settings, monkeypatch, slow: threading.Event, loading: threading.Event):
        from needle.facade import api as app
        from needle.facade import graph_loading as graphs

        class Loaded:
            def __init__(self, name: str) -> None:
                self.name = name

            def warm_up(self) -> None:
                pass

        def load(name, environment, overrides):
            if name == "slow":
                loading.set()
                assert slow.wait(30), "the slow graph was never released"
            return Loaded(name)

        monkeypatch.setattr(graphs, "load_pipeline", load)
        return app.Needle(settings)

    def test_a_loaded_graph_answers_while_another_loads(self, settings, monkeypatch):
        slow, loading = threading.Event(), threading.Event()
        needle = self._needle(settings, monkeypatch, slow, loading)
        needle.pipeline("fast")
        builder = threading.Thread(target=needle.pipeline, args=("slow",))
        builder.start()
        assert loading.wait(30)
        served: list[str] = []
        reader = threading.Thread(target=lambda: served.append(needle.pipeline("fast").name))
        reader.start()
        reader.join(10)
        answered_while_loading = not reader.is_alive() and builder.is_alive()
        slow.set()
        builder.join(30)
        reader.join(30)
        assert served == ["fast"] and answered_while_loading

    def test_two_callers_of_a_loading_graph_get_the_same_one(self, settings, monkeypatch):
        slow, loading = threading.Event(), threading.Event()
        needle = self._needle(settings, monkeypatch, slow, loading)
        got: list[object] = []
        callers = [threading.Thread(target=lambda: got.append(needle.pipeline("slow"))) for _ in range(2)]
        for caller in callers:
            caller.start()
        assert loading.wait(30)
        slow.set()
        for caller in callers:
            caller.join(30)
        assert len(got) == 2 and got[0] is got[1]
