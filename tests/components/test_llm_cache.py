import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from haystack_integrations.components.needle import _llm_cache as llm_cache
from haystack_integrations.components.needle._llm_cache import LLMCache, cache_key, model_label

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from haystack_integrations.components.needle._llm_cache import LLMCache
cache = LLMCache(sys.argv[1], ttl_hours=1)
for i in range(150):
    cache.put("rerank", "q", "m", {"writer": sys.argv[2], "i": i}, extra=f"{sys.argv[2]}-{i}")
    cache.get("rerank", "q", "m", extra=f"{sys.argv[2]}-{i}")
cache.put_many("expansion", "q", "m", {f"{sys.argv[2]}-batch-{i}": i for i in range(100)})
"""


class TestLLMCache:
    def test_init_defaults(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        assert cache.ttl_hours == 168
        assert cache.enabled

    @pytest.mark.parametrize("kwargs, message", [({"ttl_hours": 0}, "ttl_hours"), ({"busy_timeout": 0}, "busy")])
    def test_bad_params_raise(self, tmp_path, kwargs, message):
        with pytest.raises(ValueError, match=message):
            LLMCache(str(tmp_path / "c.sqlite"), **kwargs)

    def test_none_path_disables_caching(self):
        cache = LLMCache(None)
        cache.put("expansion", "q", "m", [1])
        assert not cache.enabled
        assert cache.get("expansion", "q", "m") is None
        assert cache.get_many("rerank", "q", "m", ["a"]) == {}
        assert cache.prune() == 0

    def test_creates_parent_folders_in_wal_mode(self, tmp_path):
        path = tmp_path / "deep" / "er" / "llm.sqlite"
        LLMCache(str(path)).put("expansion", "q", "m", [1])
        assert path.exists()
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def test_round_trips_json_values(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        value = [{"kind": "lex", "text": "docker network"}, {"kind": "hyde", "text": "ünïcode"}]
        cache.put("expansion", "docker", "m", value, extra="v1")
        assert cache.get("expansion", "docker", "m", extra="v1") == value
        assert cache.get("expansion", "docker", "m") is None

    def test_every_key_part_counts(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        cache.put("rerank", "q", "m", 0.5, extra="x")
        for args in [("expansion", "q", "m", "x"), ("rerank", "q2", "m", "x"), ("rerank", "q", "m2", "x")]:
            assert cache.get(*args) is None
        assert cache.get("rerank", "q", "m", "x") == 0.5

    def test_colons_cannot_make_keys_collide(self):
        assert cache_key("rerank", "a:b", "c", "") != cache_key("rerank", "a", "b:c", "")

    def test_get_many_returns_only_hits(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        cache.put_many("rerank", "q", "m", {"a": 0.1, "b": 0.0})
        assert cache.get_many("rerank", "q", "m", ["a", "b", "c"]) == {"a": 0.1, "b": 0.0}

    def test_get_many_handles_more_keys_than_sqlite_parameters(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        cache.put_many("rerank", "q", "m", {str(i): i for i in range(1500)})
        assert len(cache.get_many("rerank", "q", "m", [str(i) for i in range(1600)])) == 1500

    def test_put_replaces_an_older_value(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        cache.put("rerank", "q", "m", 0.1)
        cache.put("rerank", "q", "m", 0.9)
        assert cache.get("rerank", "q", "m") == 0.9

    def test_expired_entries_are_missing_and_pruned(self, tmp_path, monkeypatch):
        cache = LLMCache(str(tmp_path / "c.sqlite"), ttl_hours=1)
        cache.put("rerank", "q", "m", 0.1, extra="old")
        later = time.time() + 2 * 3600
        monkeypatch.setattr(llm_cache.time, "time", lambda: later)
        cache.put("rerank", "q", "m", 0.2, extra="new")
        assert cache.get_many("rerank", "q", "m", ["old", "new"]) == {"new": 0.2}
        assert cache.prune() == 1
        assert cache.prune() == 0

    def test_unreadable_file_is_a_miss_not_an_error(self, tmp_path):
        path = tmp_path / "c.sqlite"
        path.write_bytes(b"this is not a database" * 100)
        cache = LLMCache(str(path))
        assert cache.get("expansion", "q", "m") is None
        cache.put("expansion", "q", "m", [1])

    def test_concurrent_threads_do_not_lose_writes(self, tmp_path):
        cache = LLMCache(str(tmp_path / "c.sqlite"))
        errors: list[BaseException] = []

        def write(n: int) -> None:
            try:
                for i in range(40):
                    cache.put("rerank", "q", "m", i, extra=f"{n}-{i}")
                    assert cache.get("rerank", "q", "m", extra=f"{n}-{i}") == i
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(cache.get_many("rerank", "q", "m", [f"{n}-{i}" for n in range(8) for i in range(40)])) == 320

    def test_two_processes_write_at_once(self, tmp_path):
        path = str(tmp_path / "c.sqlite")
        started = time.monotonic()
        writers = [
            subprocess.Popen([sys.executable, "-c", WRITER, path, name], cwd=REPO, stderr=subprocess.PIPE)
            for name in ("a", "b")
        ]
        results = [(w.wait(timeout=60), w.stderr.read().decode()) for w in writers]
        assert all(code == 0 for code, _ in results), results
        assert all("not written" not in err and "unreadable" not in err for _, err in results), results
        assert time.monotonic() - started < 30
        cache = LLMCache(path)
        for name in ("a", "b"):
            assert len(cache.get_many("rerank", "q", "m", [f"{name}-{i}" for i in range(150)])) == 150
            assert len(cache.get_many("expansion", "q", "m", [f"{name}-batch-{i}" for i in range(100)])) == 100
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


class TestModelLabel:
    def test_prefers_model_then_model_name(self):
        class A:
            model = "gpt"
            model_name = "other"

        class B:
            model_name = "minilm"

        assert model_label(A()) == "gpt"
        assert model_label(B()) == "minilm"

    def test_looks_into_wrapped_components_then_class_name(self):
        class Generator:
            model = "qwen"

        class Judge:
            def __init__(self):
                self.chat_generator = Generator()

        class Bare:
            pass

        assert model_label(Judge()) == "qwen"
        assert model_label(Bare()).endswith("Bare")
