import itertools

from haystack import Pipeline, component

from needle.evaluation.timing import ComponentTimer


@component
class _Echo:
    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, str]:
        return {"text": text}


class _TickTimer(ComponentTimer):
    """A clock that moves one second per reading: each span lasts exactly one second."""

    clock = staticmethod(itertools.count().__next__)


def test_a_timer_charges_each_component_by_its_own_clock():
    pipeline = Pipeline()
    pipeline.add_component("echo", _Echo())
    with _TickTimer.active() as timer:
        pipeline.run({"echo": {"text": "hi"}})
        pipeline.run({"echo": {"text": "again"}})
    assert timer.calls["echo"] == 2
    assert timer.seconds["echo"] == 2
    assert ComponentTimer.clock is not _TickTimer.clock
