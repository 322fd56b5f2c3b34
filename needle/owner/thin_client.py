"""The thin client: a `needle` command sent whole to the process that owns the index, without Haystack.

A command that an owner can run (`THIN_COMMANDS`) finds the owner (`needle.owner.record`, which checks the record
and the listener before anything is sent), posts its parsed arguments to `POST /needle/cli` and prints what
comes back: the owner runs the very code the command would have run here (`needle.commands.dispatch.run`), so the
output and the exit code are byte for byte the same. While the owner works it sends a line every second
(and an index run's progress); a client that hears nothing for `owner.answer_timeout` seconds says so and
exits 1 instead of waiting on a stopped owner. When no owner runs and `owner.autostart` is on, a command that
needs the index starts one in the background (`needle owner run`, logging to `DATA_DIR/owner.log`) and
goes through it. Which commands go to an owner, which start one and which are sent again comes from the command
table (`needle.commands.table`). This module imports only the standard library, `needle.owner.locate`,
`needle.owner.record` and `needle.commands` (its table and renderer).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle.commands.render import terminal_safe
from needle.commands.table import COMMANDS, command_of
from needle.owner import record as records
from needle.owner.code_stamp import code_stamp
from needle.owner.locate import Location, locate
from needle.owner.wire import WireError

if TYPE_CHECKING:
    from subprocess import Popen

CLI_PATH = "/needle/cli"
OWNER_LOG = "owner.log"
SPAWN_LOCK = "owner.start.lock"
# How long a command waits for the background owner it started to load its graphs and answer.
START_TIMEOUT = 300.0
# Commands an owner runs for a client (all but those that run without the index); those in `NEEDS_INDEX` also
# start a background owner when none runs. `restore` and `migrate` go to an owner that runs, which queues them
# behind the requests and index runs under way; with none they open the index here.
THIN_COMMANDS = frozenset(c.name for c in COMMANDS if c.index != "none")
NEEDS_INDEX = frozenset(c.name for c in COMMANDS if c.starts_owner)
# The graphs a command's route runs (`search`, `vsearch`, `query`, `ingest`): an owner it starts warms them first.
WARMED = frozenset(c.graph for c in COMMANDS if c.graph)


class OwnerGoneError(ConnectionError):
    """The owner's connection closed before the command's answer came."""


class OwnerExitingError(OwnerGoneError):
    """The owner refused the command because it is exiting: the command did not run there."""


RETIRE_PATH = "/needle/retire"
# How long a client waits for an owner that is exiting to be gone.
EXIT_WAIT = 30.0


def other_code(record: records.OwnerRecord, location: Location) -> records.OwnerRecord | None:
    """
    The owner runs other code than this command (`needle.owner.code_stamp`: an upgrade or a `git pull` since it started).

    A background owner is asked to exit (`POST /needle/retire`): when idle it does, and this returns `None`
    once it is gone (the caller starts a fresh one). When it is busy (an index run under way), the command
    still goes through it, since the index is its until the run ends (waiting could take minutes, stopping it
    would lose the run), with one line saying so; it exits by itself once idle, and the next command starts a
    fresh one. An owner the user started (`serve`, `mcp`, `watch`) is used, with one line on how to restart it.

    :returns: The owner to send the command to, or `None` when it is gone.
    """
    who = f"the owner (pid {record.pid}, needle {record.command or 'serve'})"
    theirs = record.code.split("+")[0] if record.code else "an older version"
    if record.command != records.BACKGROUND:
        print(
            f"needle: {who} runs other code ({theirs}, started before Needle changed); restart it to use "
            f"this code (stop it, then run `needle {record.command or 'serve'}` again)",
            file=sys.stderr,
        )
        return record
    answer = _retire(record)
    if answer.get("exiting"):  # it refuses every request from now on: stop it as `needle owner stop` does
        records.stop_owner(record, EXIT_WAIT)
        return None
    busy = answer.get("busy") or "an owner from before code stamps"
    ending = (
        "it exits once idle, and the next command starts one with this code"
        if "busy" in answer
        else "`needle owner stop` replaces it"
    )
    print(
        f"needle: {who} runs other code ({theirs}) but is busy ({busy}): this command goes through it; {ending}",
        file=sys.stderr,
    )
    return record


def _retire(record: records.OwnerRecord) -> dict[str, Any]:
    """Ask a background owner to exit when idle; `{}` when it does not know the route (older code)."""
    connection = records.connect(record)
    try:
        connection.request(
            "POST", RETIRE_PATH, body="{}", headers={**record.headers, "Content-Type": "application/json"}
        )
        connection.deadline(EXIT_WAIT)
        response = connection.getresponse()
        body = response.read(limit=MAX_DETAIL)
        if response.status != 200:
            return {}
        answer = json.loads(body)
        return answer if isinstance(answer, dict) else {}
    except (OSError, ValueError):
        return {}
    finally:
        connection.close()


def gone(record: records.OwnerRecord, timeout: float = EXIT_WAIT) -> None:
    """Wait for an owner that is exiting to be gone (its process ended, or its record removed)."""
    deadline = time.monotonic() + timeout
    while records.same_process(record) and time.monotonic() < deadline:
        time.sleep(0.02)


def eligible(args: Any) -> bool:
    """Whether the owner can run this parsed command for a client."""
    return command_of(args).index != "none"


def through_owner(args: Any, location: Location | None = None) -> int | None:
    """
    Run the command through the owner, starting a background one when none runs and the setting allows it.

    :param args: The parsed command line (sent as it is: the owner runs `needle.commands.dispatch.run` on it).
    :param location: Where the index lives; read from the environment when `None`.
    :returns: The exit code, or `None` when the command should run in this process (no owner, autostart off,
        a Qdrant server, a configuration only the full settings can read).
    """
    command = command_of(args)
    if not eligible(args):
        if command.name not in ("models", "eval"):  # a data folder that cannot be used: one line, before it is used
            location = location or locate()
            if location is not None:
                try:
                    records.check_folder(Path(location.data_dir))
                except records.DataFolderError as error:
                    print(f"error: {one_line(str(error))}", file=sys.stderr)
                    return 1
        return None
    location = location or locate()
    if location is None or location.store_url:
        return None
    try:
        record = records.live_owner(location)
        if record is not None and record.code != code_stamp():
            record = other_code(record, location)
        if record is None and location.autostart and command.starts_owner:
            record = start_owner(location, first=first_graphs(args))
        if record is None:
            return None
        try:
            return send(record, vars(args), location)
        except OwnerExitingError:  # refused before it ran: any command goes to the next owner
            gone(record)
            record = records.live_owner(location) or (start_owner(location) if location.autostart else None)
            if record is None:
                return None
            return send(record, vars(args), location)
        except OwnerGoneError:
            if not command.retried:  # it may have changed something before the owner went
                raise
            record = records.live_owner(location) or (start_owner(location) if location.autostart else None)
            if record is None:
                raise
            return send(record, vars(args), location)
    except ConnectionError as error:
        print(f"error: {one_line(' '.join(str(error).split()))}", file=sys.stderr)
        return 1


def first_graphs(args: Any) -> list[str]:
    """The graphs an owner started for this command should warm first: the command's own, when it runs one."""
    graph = command_of(args).graph
    wanted = getattr(args, "pipeline", None) or graph
    return [wanted] if graph is not None and wanted in WARMED else []


def send(record: records.OwnerRecord, arguments: dict[str, Any], location: Location) -> int:
    """
    Post the command to the verified owner and print its output as it comes.

    :raises OwnerSilentError: When the owner stops answering for `location.answer_timeout` seconds.
    :raises OwnerGoneError: When the connection closes before the answer.
    :raises UntrustedOwnerError: When the listener fails the owner's checks.
    """
    wait = location.answer_timeout
    connection = records.connect(record, read_timeout=wait)
    body = json.dumps({"args": arguments, "cwd": os.getcwd(), "tty": sys.stderr.isatty()})
    try:
        try:
            connection.deadline(wait)
            connection.request(
                "POST", CLI_PATH, body=body, headers={**record.headers, "Content-Type": "application/json"}
            )
            response = connection.getresponse()
            if response.status != 200:
                detail = response.read(limit=MAX_DETAIL).decode("utf-8", "replace")
                if response.status == 503:
                    raise OwnerExitingError(f"the owner (pid {record.pid}) is exiting: {_detail(detail)}")
                raise records.UntrustedOwnerError(
                    f"the owner (pid {record.pid}) refused the command: {_detail(detail)}"
                )
            while True:
                connection.deadline(wait)  # each line whole within the timeout (the owner sends one a second)
                line = response.readline(MAX_RELAY_LINE)
                if not line:
                    raise OwnerGoneError(
                        f"the owner (pid {record.pid}) went away before it answered; the command may not have finished"
                    )
                kind, value = relayed(line, record)
                if kind == "progress":
                    print(one_line(value), file=sys.stderr, flush=True)
                elif kind == "done":
                    out, err, code = value
                    # The owner printed into a pipe; a terminal here gets control characters escaped.
                    sys.stdout.write(terminal_safe(out) if sys.stdout.isatty() else out)
                    sys.stderr.write(terminal_safe(err) if sys.stderr.isatty() else err)
                    return code
        except (records.UntrustedOwnerError, OwnerGoneError):
            raise
        except TimeoutError:
            stopped = (
                f" (it is stopped: `kill -CONT {record.pid}` resumes it)" if records.pid_stopped(record.pid) else ""
            )
            raise records.OwnerSilentError(
                f"the owner (pid {record.pid}) has not answered for {wait:g} s: it may be stopped{stopped}"
            ) from None
        except WireError as error:
            raise records.UntrustedOwnerError(
                f"the owner (pid {record.pid}) sent an answer this command cannot read ({one_line(str(error))}); "
                "the command may not have finished"
            ) from None
        except (OSError, ValueError) as error:
            raise OwnerGoneError(
                f"the owner (pid {record.pid}) went away before it answered ({type(error).__name__}); "
                "the command may not have finished"
            ) from None
    finally:
        connection.close()


# The longest refusal an owner may answer with.
MAX_DETAIL = 65_536
# The longest line an owner may relay (a command's whole output comes as one line), and its escapes.
MAX_RELAY_LINE = 64 * 1024 * 1024
_LINE_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """A relayed progress line with every control character escaped (line feeds and tabs too)."""
    return _LINE_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def relayed(line: bytes, record: records.OwnerRecord) -> tuple[str, Any]:
    """
    One line the owner relayed, checked: `("progress", text)`, `("done", (stdout, stderr, code))`, or
    `("alive", None)` for the heartbeat and any other key a newer owner may send.

    :raises UntrustedOwnerError: When the line is not one of those (not JSON, not an object, a field of the
        wrong type): one line naming the owner and what was wrong, never the line's raw text.
    """
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if isinstance(message, dict):
        if "done" in message:
            done = message["done"]
            if (
                isinstance(done, dict)
                and isinstance(done.get("stdout"), str)
                and isinstance(done.get("stderr"), str)
                and type(done.get("code")) is int
            ):
                return "done", (done["stdout"], done["stderr"], done["code"])
        elif "progress" in message:
            if isinstance(message["progress"], str):
                return "progress", message["progress"]
        else:
            return "alive", None
    shown = one_line(line[:80].decode("utf-8", "replace"))
    raise records.UntrustedOwnerError(
        f"the owner (pid {record.pid}) sent a line that is not a command's answer ({shown!s}); "
        "the command may not have finished"
    )


def _detail(body: str) -> str:
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        detail = None
    return one_line(str(detail or body.strip() or "no reason given")[:1000])


def start_owner(
    location: Location, timeout: float = START_TIMEOUT, first: list[str] | None = None
) -> records.OwnerRecord | None:
    """
    Start a background owner (`needle owner run`), detached and logging to `DATA_DIR/owner.log`, and wait for it.

    One command starts it at a time (a lock file in the data folder); the others wait for its record.

    :param first: The graphs the owner warms before it answers (the command's own); `None`: all of them.

    :returns: The verified owner, or `None` when it could not start (its log says why; the command then runs
        in this process and shows its own error).
    """
    import fcntl

    data_dir = location.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / SPAWN_LOCK, "a") as spawn_lock:
        fcntl.flock(spawn_lock, fcntl.LOCK_EX)
        record = records.live_owner(location)
        if record is not None:
            return record
        if records.index_locked(location):  # held by a command, or by an owner still loading: wait for it
            return records.wait_for_owner(location, timeout)
        ready, ready_in_owner = os.pipe()
        try:
            process = spawn_owner(data_dir, first, ready_fd=ready_in_owner)
        finally:
            os.close(ready_in_owner)
        try:
            return _wait_started(location, process, ready, timeout)
        finally:
            os.close(ready)


def _wait_started(location: Location, process: Popen[bytes], ready: int, timeout: float) -> records.OwnerRecord | None:
    """
    Wait for the owner just started to answer: it writes to the `ready` pipe once it does (or closes it as it
    ends), so that no polling interval is added to the command's wait; the record is checked then (not
    before: a staged owner answers its challenge before it is ready for everything it was started for).
    """
    import select

    deadline = time.monotonic() + timeout
    told = False
    while time.monotonic() < deadline:
        if told:  # it wrote and closed its end: it answers (or it ended, a failed start)
            time.sleep(0.05)
        elif select.select([ready], [], [], min(1.0, max(0.0, deadline - time.monotonic())))[0]:
            if not os.read(ready, 64):  # closed unwritten: its start failed; the command shows why itself
                with contextlib.suppress(Exception):
                    process.wait(EXIT_WAIT)
                return None
            told = True
        if told:
            record = records.live_owner(location)
            if record is not None:
                return record
        if process.poll() is not None:
            return None
        if records.pid_stopped(process.pid):  # stopped while it loads: it would never answer
            raise records.OwnerSilentError(
                f"the owner this command started (pid {process.pid}) is stopped: `kill -CONT {process.pid}` "
                f"resumes it (or `kill -9 {process.pid}` ends it)"
            )
    return None


def owner_command(action: str) -> int:
    """
    `needle owner status|start|stop`: show the process that holds the index, start a background one, stop it.

    :returns: The exit code.
    """
    from needle.owner.locate import locate_or_load

    location = locate_or_load()
    if location.store_url:
        print(f"no owner: the index is on a Qdrant server ({location.store_url}), which every command reaches itself")
        return 0
    try:
        record = records.live_owner(location)
        if action == "start" and record is None:
            log = location.data_dir / OWNER_LOG
            logged = log.stat().st_size if log.exists() else 0
            record = start_owner(location)
            if record is None:
                print(f"error: the background owner did not start: {_why_not(log, logged)}", file=sys.stderr)
                return 1
    except ConnectionError as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    if record is None:
        automatic = (
            "the next command that needs the index starts one" if location.autostart else "owner.autostart is off"
        )
        print(f"no owner holds the index in {location.data_dir} ({automatic})")
        return 0
    if action == "stop":
        if not records.stop_owner(record):
            print(f"error: the owner (pid {record.pid}) did not exit within 30 s", file=sys.stderr)
            return 1
        print(f"stopped the owner (pid {record.pid}, needle {record.command or 'serve'})")
        return 0
    line = f"owner: pid {record.pid} (needle {record.command or 'serve'}) at {record.address} since {record.started}"
    if record.command == records.BACKGROUND:
        line += f"; exits after {location.idle_minutes:g} min without a request; log {location.data_dir / OWNER_LOG}"
    if record.code != code_stamp():
        line += "; it runs other code than this needle (started before Needle changed)"
    print(line)
    return 0


def _why_not(log: Path, offset: int) -> str:
    """The one-line error a background owner that failed to start wrote to its log after `offset`, or where to look."""
    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            lines = handle.read(1 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    errors = [line.removeprefix("error: ") for line in lines if line.startswith("error: ")]
    return one_line(errors[-1]) if errors else f"see {log}"


def spawn_owner(data_dir: Path, first: list[str] | None = None, ready_fd: int | None = None) -> Popen[bytes]:
    """
    Start `needle owner run` in its own session, its output appended to `DATA_DIR/owner.log`.

    :param first: The graphs it warms before answering (`--first`); `None`: all of them.
    :param ready_fd: A pipe's write end the owner inherits and writes to once it answers (`--ready-fd`).
    """
    import subprocess

    command = [sys.executable, "-m", "needle.shells.cli", "owner", "run"]
    if first is not None:
        command.append(f"--first={','.join(first)}")
    if ready_fd is not None:
        command.append(f"--ready-fd={ready_fd}")
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir.absolute())}
    if env.get("NEEDLE_CONFIG"):
        env["NEEDLE_CONFIG"] = str(Path(env["NEEDLE_CONFIG"]).expanduser().absolute())
    with open(data_dir / OWNER_LOG, "ab") as log:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=env,
            pass_fds=() if ready_fd is None else (ready_fd,),
        )


__all__ = [
    "CLI_PATH",
    "THIN_COMMANDS",
    "OwnerExitingError",
    "OwnerGoneError",
    "eligible",
    "first_graphs",
    "other_code",
    "owner_command",
    "send",
    "start_owner",
    "through_owner",
]
