"""The owner record (`needle.owner.record`) and what a client makes of an owner's refusals (`needle.owner.remote`)."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from needle.commands.failures import classify
from needle.core.errors import EXIT_CODE_HEADER, RemoteFailure
from needle.core.settings import load_settings
from needle.owner import record as owner
from needle.owner.remote import _failure


def settings_for(data_dir: Path, **env: str):
    return load_settings(env={"NEEDLE_DATA_DIR": str(data_dir), **env})


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


class TestRecord:
    def test_written_atomically_for_its_user_only_and_read_back(self, tmp_path):
        path = tmp_path / "data" / owner.OWNER_FILE
        record = owner.new_record("http://127.0.0.1:5000", "secret", "watch")
        owner.write(path, record)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert owner.read(path) == record
        assert json.loads(path.read_text())["pid"] == os.getpid()
        assert [p.name for p in path.parent.iterdir()] == [owner.OWNER_FILE]  # no temporary file left behind

    def test_an_owner_removes_only_its_own_record(self, tmp_path):
        path = tmp_path / owner.OWNER_FILE
        owner.write(path, owner.new_record("http://127.0.0.1:5000", "t", "serve"))
        owner.remove(path, pid=os.getpid() + 1)
        assert path.exists()
        owner.remove(path, pid=os.getpid())
        assert not path.exists()

    def test_a_malformed_record_is_not_read_and_left_to_whoever_holds_the_index(self, tmp_path):
        path = tmp_path / owner.OWNER_FILE
        path.write_text("{not json")
        path.chmod(0o600)
        assert owner.read(path) is None and path.exists()

    def test_a_record_of_a_dead_process_is_stale_and_removed(self, tmp_path):
        settings = settings_for(tmp_path)
        path = owner.owner_path(settings)
        record = owner.OwnerRecord(pid=dead_pid(), address="http://127.0.0.1:9", token="t", started="x")
        owner.write(path, record)
        assert owner.live_owner(settings) is None
        assert not path.exists()

    def test_a_live_process_that_holds_the_index_but_does_not_answer_yet_keeps_its_record(self, tmp_path):
        settings = settings_for(tmp_path)
        path = owner.owner_path(settings)
        with owner.loopback_socket() as closed:
            port = closed.getsockname()[1]
        lock = settings.index_dir / "edge" / ".edge_document_store.lock"
        lock.parent.mkdir(parents=True)
        holder = (
            f"import fcntl, os, sys, time; fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)"
        )
        sleeper = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
        try:
            assert sleeper.stdout.readline().strip() == "locked"
            assert owner.index_locked(settings)
            owner.write(
                path,
                owner.OwnerRecord(
                    pid=sleeper.pid,
                    address=f"http://127.0.0.1:{port}",
                    token="t",
                    started="x",
                    pid_start=owner.pid_start(sleeper.pid),
                ),
            )
            assert owner.live_owner(settings) is None
            assert owner.wait_for_owner(settings, timeout=0.5) is None
            assert path.exists()  # it may be an owner still loading its models
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_a_qdrant_server_has_no_owner(self, tmp_path):
        settings = settings_for(tmp_path, NEEDLE_STORE__URL="http://127.0.0.1:6333")
        owner.write(owner.owner_path(settings), owner.new_record("http://127.0.0.1:1", "t", "serve"))
        assert not owner.uses_owner(settings)
        assert owner.live_owner(settings) is None


class TestRefusals:
    def request(self, status: int, detail: str, exit_code: str | None = None) -> httpx.Response:
        headers = {EXIT_CODE_HEADER: exit_code} if exit_code else {}
        return httpx.Response(status, json={"detail": detail}, headers=headers)

    def test_the_owner_exit_code_and_message_are_kept(self):
        failure = classify(_failure(self.request(500, "server misconfigured: bad key", "2")))
        assert (failure.message, failure.exit_code, failure.http_status) == ("bad key", 2, 500)

    def test_without_an_exit_code_client_errors_exit_2_and_server_errors_1(self):
        assert classify(_failure(self.request(422, "limit: too small"))).exit_code == 2
        assert classify(_failure(self.request(503, "busy"))).exit_code == 1

    def test_a_remote_failure_is_classified_as_it_came(self):
        assert classify(RemoteFailure("locked", 1, 503)).message == "locked"


def test_without_a_record_a_locked_out_reader_does_not_wait(tmp_path):
    import time

    started = time.monotonic()
    assert owner.wait_for_owner(settings_for(tmp_path), timeout=60) is None
    assert time.monotonic() - started < owner.RECORD_GRACE_SECONDS + 1


def test_a_record_whose_process_holds_no_index_is_stale(tmp_path):
    """A live pid that does not answer and holds no lock: the pid now names another program."""
    settings = settings_for(tmp_path)
    path = owner.owner_path(settings)
    with owner.loopback_socket() as closed:
        port = closed.getsockname()[1]
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        owner.write(
            path, owner.OwnerRecord(pid=sleeper.pid, address=f"http://127.0.0.1:{port}", token="t", started="x")
        )
        (settings.index_dir / "edge").mkdir(parents=True)
        (settings.index_dir / "edge" / ".edge_document_store.lock").write_text(str(sleeper.pid))
        assert not owner.index_locked(settings)
        assert owner.live_owner(settings) is None
        assert not path.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


FAKE_OWNER = """
import fcntl, hashlib, hmac, http.server, json, os, sys, time
path, token = sys.argv[1], sys.argv[2]
lock = os.path.join(os.path.dirname(path), "index", "edge", ".edge_document_store.lock")
os.makedirs(os.path.dirname(lock))
fd = os.open(lock, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
server = http.server.HTTPServer(("127.0.0.1", 0), None)
start = int(open(f"/proc/{os.getpid()}/stat").read().rsplit(")", 1)[1].split()[19])
record = {"pid": os.getpid(), "address": f"http://127.0.0.1:{server.server_port}", "token": token, "started": "x",
          "pid_start": start}
with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
    json.dump(record, out)
time.sleep(2)  # loading its models: the port is bound but nobody answers yet


class Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        nonce = self.path.partition("/needle/hello?nonce=")[2]
        proof = hmac.new(token.encode(), f"{nonce}:{os.getpid()}".encode(), hashlib.sha256).hexdigest()
        body = json.dumps({"pid": os.getpid(), "proof": proof}).encode()
        self.send_response(200 if nonce else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server.RequestHandlerClass = Status
server.serve_forever()
"""


def test_a_locked_out_command_waits_for_a_starting_owner_to_answer(tmp_path):
    settings = settings_for(tmp_path)
    path = owner.owner_path(settings)
    starting = subprocess.Popen([sys.executable, "-c", FAKE_OWNER, str(path), "the-token"])
    try:
        record = owner.wait_for_owner(settings, timeout=30)
        assert record is not None and record.pid == starting.pid and record.token == "the-token"
        assert owner.live_owner(settings) == record
    finally:
        starting.kill()
        starting.wait()
