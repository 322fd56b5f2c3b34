"""A command cannot be raced, flooded or fooled by what sits at the owner record's path or address: the record
is opened without following links and checked once open, a data folder others can write is refused, a
record without its process's start time is stale, every answer is read with a size bound and a deadline, and
relayed lines are checked and printed with their control characters escaped. Each case is one line, exit 1.

The listeners here are small standard-library processes that hold the index's lock and know the record's
token (they pass the challenge, as an owner would), then misbehave in one way each.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from needle.owner import record as owner
from needle.owner.code_stamp import code_stamp
from needle.owner.locate import locate

REPO = Path(__file__).resolve().parent.parent
TOKEN = "the-token"

# argv: lock, token, behaviour. Prints its port, then serves until killed.
LISTENER = r"""
import fcntl, hashlib, hmac, os, socket, sys, threading, time
lock, token, behaviour = sys.argv[1:4]
os.makedirs(os.path.dirname(lock), exist_ok=True)
fd = os.open(lock, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)

def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)

def serve(conn):
    reader = conn.makefile("rb")
    while True:
        request = reader.readline()
        if not request:
            return
        length = 0
        while (line := reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        reader.read(length)
        path = request.split()[1].decode()
        if path.startswith("/needle/hello"):
            if behaviour == "silent":
                time.sleep(3600)
            if behaviour == "endless-hello":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                while True:
                    conn.sendall(chunk(b"x" * 65536))
            if behaviour == "trickle-hello":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                while True:
                    conn.sendall(b"x")
                    time.sleep(0.05)
            nonce = path.split("=", 1)[1]
            proof = hmac.new(token.encode(), f"{nonce}:{os.getpid()}".encode(), hashlib.sha256).hexdigest()
            body = ('{"pid": %d, "proof": "%s"}' % (os.getpid(), proof)).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            continue
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        if behaviour == "endless-line":
            while True:
                conn.sendall(chunk(b"y" * 65536))
        lines = {
            "not-an-object": [b"1\n"],
            "no-stdout": [b'{"done": {"code": 0}}\n'],
            "code-text": [b'{"done": {"stdout": "", "stderr": "", "code": "0"}}\n'],
            "escapes": [
                b'{"progress": "\\u001b]0;owned\\u0007\\u001b[31mred\\nsecond"}\n',
                b'{"done": {"stdout": "result\\n", "stderr": "", "code": 0}}\n',
            ],
        }[behaviour]
        for line in lines:
            conn.sendall(chunk(line))
        conn.sendall(b"0\r\n\r\n")
        conn.close()
        return

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


class Listener:
    def __init__(self, data: Path, behaviour: str) -> None:
        lock = data / "index" / "edge" / owner.LOCK_FILE
        self.process = subprocess.Popen(
            [sys.executable, "-c", LISTENER, str(lock), TOKEN, behaviour], stdout=subprocess.PIPE, text=True
        )
        self.port = int(self.process.stdout.readline())
        self.pid = self.process.pid

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.process.kill()
        self.process.wait()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def listen(data: Path) -> Iterator:
    started: list[Listener] = []

    def start(behaviour: str) -> Listener:
        listener = Listener(data, behaviour)
        started.append(listener)
        write_record(data, listener.pid, listener.port)
        return listener

    yield start
    for listener in started:
        listener.stop()


def write_record(data: Path, pid: int, port: int, **fields) -> Path:
    path = data / owner.OWNER_FILE
    values = {
        "pid": pid,
        "address": f"http://127.0.0.1:{port}",
        "token": TOKEN,
        "started": "x",
        "command": "background",
        "pid_start": owner.pid_start(pid),
        "code": code_stamp(),
        **fields,
    }
    owner.write(path, owner.OwnerRecord(**values))
    return path


def needle(data: Path, *args: str, answer_timeout: float = 3.0, memory: int | None = None) -> tuple:
    """Run a command; returns the finished process and how long it took."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
        env={
            **clean,
            "NEEDLE_DATA_DIR": str(data),
            "NEEDLE_OWNER__AUTOSTART": "true",
            "NEEDLE_OWNER__ANSWER_TIMEOUT": f"{answer_timeout:g}",
        },
    )
    return done, time.monotonic() - started


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


class TestRecord:
    def test_a_record_swapped_for_a_link_is_refused_even_when_it_points_at_a_private_file(self, data, listen, tmp_path):
        listener = listen("escapes")
        elsewhere = tmp_path / "elsewhere.json"
        (data / owner.OWNER_FILE).rename(elsewhere)  # private, the user's own: only the link is wrong
        (data / owner.OWNER_FILE).symlink_to(elsewhere)
        with pytest.raises(owner.UntrustedOwnerError, match="refusing the owner record"):
            owner._read_private(data / owner.OWNER_FILE)
        done, _ = needle(data, "search", "secret words")
        assert "refusing the owner record" in one_line_error(done)
        assert listener.process.poll() is None

    def test_a_record_opened_is_checked_as_the_file_read(self, data, listen):
        listen("escapes")
        path = data / owner.OWNER_FILE
        path.chmod(0o644)
        with pytest.raises(owner.UntrustedOwnerError, match="mode 644"):
            owner._read_private(path)

    @pytest.mark.parametrize("mode", [0o777, 0o722])
    def test_a_data_folder_others_can_write_is_refused_in_one_line(self, data, listen, mode):
        listen("escapes")
        data.chmod(mode)
        try:
            done, _ = needle(data, "search", "secret words")
        finally:
            data.chmod(0o700)
        error = one_line_error(done)
        assert f"refusing the data folder {data}: other users can write it" in error
        assert f"chmod go-w {data}" in error

    def test_a_record_without_its_start_time_is_stale_where_proc_has_one(self, data, listen):
        listener = listen("escapes")
        write_record(data, listener.pid, listener.port, pid_start=0)
        assert owner.pid_start(listener.pid) != 0
        record = owner.read(data / owner.OWNER_FILE)
        assert record is not None and not owner.same_process(record)
        assert owner.live_owner(locate({"NEEDLE_DATA_DIR": str(data)})) is None


class TestFlood:
    def test_an_endless_answer_to_the_challenge_is_cut_at_its_bound(self, data, listen):
        listen("endless-hello")
        done, took = needle(data, "search", "secret words", memory=1 << 30)
        assert "is not the needle owner its record names" in one_line_error(done)
        assert took < 30

    def test_a_trickled_answer_to_the_challenge_meets_the_answer_timeout(self, data, listen):
        listener = listen("trickle-hello")
        done, took = needle(data, "search", "secret words", answer_timeout=2.0)
        error = one_line_error(done)
        assert f"the owner (pid {listener.pid}) holds the index but has not answered for 2 s" in error
        assert f"`kill {listener.pid}`" in error
        assert took < 2.0 + 4.0

    def test_a_silent_listener_that_is_not_stopped_meets_the_answer_timeout(self, data, listen):
        listener = listen("silent")
        done, took = needle(data, "status", answer_timeout=2.0)
        assert f"pid {listener.pid}) holds the index but has not answered for 2 s" in one_line_error(done)
        assert took < 2.0 + 4.0

    def test_an_endless_line_after_the_challenge_is_cut_at_its_bound(self, data, listen):
        listener = listen("endless-line")
        done, took = needle(data, "search", "secret words", memory=1 << 30)
        error = one_line_error(done)
        assert f"the owner (pid {listener.pid}) sent an answer this command cannot read" in error
        assert "longer than" in error
        assert took < 60


class TestRelayedLines:
    @pytest.mark.parametrize("behaviour", ["not-an-object", "no-stdout", "code-text"])
    def test_a_malformed_line_is_one_line_naming_the_owner(self, data, listen, behaviour):
        listener = listen(behaviour)
        error = one_line_error(needle(data, "search", "words")[0])
        assert f"the owner (pid {listener.pid}) sent a line that is not a command's answer" in error
        assert "argument of type" not in error and "'stdout'" not in error

    def test_progress_lines_are_printed_with_control_characters_escaped(self, data, listen):
        listen("escapes")
        done, _ = needle(data, "search", "words")
        assert done.returncode == 0 and done.stdout == "result\n"
        assert "\x1b" not in done.stderr and "\x07" not in done.stderr
        assert done.stderr == "\\u001b]0;owned\\u0007\\u001b[31mred\\u000asecond\n"


def test_the_relayed_answer_is_read_whole_into_its_parts():
    from needle.owner.thin_client import relayed

    record = owner.OwnerRecord(pid=1, address="http://127.0.0.1:1", token="t", started="x")
    assert relayed(b'{"alive": 1}\n', record) == ("alive", None)
    assert relayed(b'{"progress": "a"}\n', record) == ("progress", "a")
    assert relayed(b'{"done": {"stdout": "o", "stderr": "e", "code": 3}}\n', record) == ("done", ("o", "e", 3))
    for bad in (b"[]", b'{"progress": 1}', b'{"done": {"stdout": "o", "stderr": "e", "code": true}}', b"\xff"):
        with pytest.raises(owner.UntrustedOwnerError, match="not a command's answer"):
            relayed(bad, record)
