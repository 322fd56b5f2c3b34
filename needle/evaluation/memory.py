"""The memory (and CPU time) of processes, read from /proc: a command's whole process tree, one process, the machine.

`run_measured` runs a command and samples the peak memory of its whole process tree (children of children
included): `getrusage(RUSAGE_CHILDREN)` misses a grandchild whose parent was not waited for (a forkserver's
children), so the tree is found by its session: the command starts a session of its own, and every process in
it is sampled from /proc every `interval` seconds. `run_timed` is the cheap reading of one command (its wall
time and its own peak, from `wait4`, nothing sampled); `process_memory_mb`, `cpu_seconds` and
`system_memory_mb` read one process or the machine now. Linux only.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


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


@dataclass(frozen=True)
class Timed:
    """A finished command's wall time, its own peak memory and its CPU time (user + system)."""

    seconds: float
    peak_mb: float
    returncode: int
    cpu_seconds: float


def run_timed(args: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None) -> Timed:
    """
    Run `args` to its end, its output discarded, and read what it cost from `wait4` (no sampling).

    :param args: The command.
    :param env: Its environment.
    :param cwd: Its working folder.
    :returns: Wall seconds, the process's peak resident memory (MB) and its exit code.
    """
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return Timed(wall, usage.ru_maxrss / 1024, process.returncode, usage.ru_utime + usage.ru_stime)


def process_memory_mb(pid: int) -> dict[str, float]:
    """
    A process's memory now (MB): `VmRSS` (resident), `RssAnon` (anonymous: what the kernel cannot drop),
    `RssFile` (file pages: memory-mapped index files among them) and `VmHWM` (the resident peak so far).

    :returns: The fields found; none when the process is gone.
    """
    values: dict[str, float] = {}
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return values
    for line in lines:
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            values[key] = round(int(rest.split()[0]) / 1024, 1)
    return values


def reset_peak_memory() -> None:
    """Reset this process's `VmHWM` to its resident memory now (write 5 to clear_refs), so a phase has its own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def system_memory_mb(field: str) -> float | None:
    """A line of /proc/meminfo in MB (`MemTotal`, `MemAvailable`...); `None` when it is not there."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float:
    """The CPU seconds (user + system) a running process has spent so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


__all__ = [
    "Measured",
    "Timed",
    "cpu_seconds",
    "process_memory_mb",
    "reset_peak_memory",
    "run_measured",
    "run_timed",
    "system_memory_mb",
]
