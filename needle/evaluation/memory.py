"""Run a command and measure the peak memory of its whole process tree (children of children included).

`getrusage(RUSAGE_CHILDREN)` misses a grandchild whose parent was not waited for (a forkserver's children),
so the tree is found by its session: the command starts a session of its own, and every process in it is
sampled from /proc every `interval` seconds.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Measured:
    """A finished command and the memory its processes held."""

    returncode: int
    stdout: str
    stderr: str
    peak_process_mb: int  # the largest resident size one process of the tree reached
    peak_total_mb: int  # the largest resident size of the whole tree at one sample
    seconds: float


def run_measured(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 900, interval: float = 0.1
) -> Measured:
    """
    Run `args` to its end, sampling the resident memory of every process of its session.

    :param args: The command.
    :param env: Its environment.
    :param timeout: Seconds before it is killed (`subprocess.TimeoutExpired` is raised).
    :param interval: Seconds between samples.
    :returns: Its exit code, output and peak memory.
    """
    started = time.perf_counter()
    process = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    peaks = {"process": 0, "total": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            sizes = _session_rss(process.pid)
            if sizes:
                peaks["process"] = max(peaks["process"], max(sizes))
                peaks["total"] = max(peaks["total"], sum(sizes))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
        if process.poll() is None:
            process.kill()
            process.wait()
    return Measured(
        process.returncode,
        stdout,
        stderr,
        peaks["process"] // 2**20,
        peaks["total"] // 2**20,
        round(time.perf_counter() - started, 1),
    )


def _session_rss(session: int) -> list[int]:
    """Resident bytes of each process in a session."""
    page = os.sysconf("SC_PAGE_SIZE")
    sizes = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, session, ... rss is the 24th field of the whole line.
        if int(fields[3]) == session:
            sizes.append(int(fields[21]) * page)
    return sizes


__all__ = ["Measured", "run_measured"]
