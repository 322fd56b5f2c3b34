"""A costly call runs in a child process stopped at its time and memory bounds; the caller goes on."""

from __future__ import annotations

import os
import signal
import time

import pytest

from needle.core.bounded import Bounds, OutOfBounds, run_bounded


def add(a: int, b: int) -> int:
    return a + b


def fail(message: str) -> None:
    raise KeyError(message)


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 2**20))


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class TestBounds:
    @pytest.mark.parametrize(
        "kwargs", [{"max_seconds": 0}, {"max_seconds": True}, {"max_memory_mb": 0}, {"max_memory_mb": 1.5}]
    )
    def test_bad_bounds_are_refused(self, kwargs):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            Bounds(**kwargs)


class TestRunBounded:
    def test_the_result_comes_back(self):
        assert run_bounded(add, 2, 3, bounds=Bounds()) == 5

    def test_what_the_call_raises_is_raised_here(self):
        with pytest.raises(KeyError, match="no such key"):
            run_bounded(fail, "no such key", bounds=Bounds())

    def test_a_call_past_its_seconds_is_stopped(self):
        with pytest.raises(OutOfBounds, match=r"took over 1 s \(max_seconds\)"):
            run_bounded(sleep, 600, bounds=Bounds(max_seconds=1))

    def test_a_call_past_its_memory_is_stopped(self):
        with pytest.raises(OutOfBounds, match=r"needs more than 64 MB of memory \(max_memory_mb\)"):
            run_bounded(allocate, 4096, bounds=Bounds(max_memory_mb=64))
        assert run_bounded(allocate, 16, bounds=Bounds(max_memory_mb=64)) == 16 * 2**20

    def test_a_child_that_dies_is_a_reason_not_a_crash(self):
        with pytest.raises(OutOfBounds, match="stopped its reader"):
            run_bounded(die, bounds=Bounds())
