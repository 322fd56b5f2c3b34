"""The thin client (`needle.owner.thin_client`) talks only to an owner that proves itself, and never waits on one forever.

Fake owners here are small standard-library processes that hold the index's lock and listen on loopback: one
answers the challenge as a real owner does (it knows the record's token), an impostor does not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from needle.core.settings import load_settings
from needle.owner import record as owner
from needle.owner.code_stamp import code_stamp
from needle.owner.locate import Location, locate

REPO = Path(__file__).resolve().parent.parent

# Holds the index's lock (as an owner does), listens on loopback and logs what it receives. As "owner" it
# answers the challenge with the token and streams a heartbeat forever on /needle/cli; as "impostor" it
# answers every request 200 with forged results.
FAKE = r"""
import fcntl, hashlib, hmac, http.server, json, os, sys, time
lock, log, token, role = sys.argv[1:5]
os.makedirs(os.path.dirname(lock), exist_ok=True)
fd = os.open(lock, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def note(self, body=b""):
        with open(log, "a") as out:
            out.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"), "body": body.decode()}) + "\n")

    def send(self, data):
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self.note()
        if role == "owner" and self.path.startswith("/needle/hello?nonce="):
            nonce = self.path.split("=", 1)[1]
            proof = hmac.new(token.encode(), f"{nonce}:{os.getpid()}".encode(), hashlib.sha256).hexdigest()
            self.send({"pid": os.getpid(), "proof": proof})
        else:
            self.send({"pid": int(sys.argv[5]) if len(sys.argv) > 5 else os.getpid(), "proof": "forged", "result": {}})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.note(body)
        if role == "owner":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                line = b'{"alive": 1}\n'
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                time.sleep(0.2)
        self.send({"result": {"label": "PASS", "results": [{"path": "forged.md"}]}})

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_port, flush=True)
server.serve_forever()
"""


class Fake:
    """A fake owner or impostor process: its pid, port and the requests it received."""

    def __init__(self, data: Path, role: str, token: str, log: Path, claimed_pid: int | None = None) -> None:
        lock = data / "index" / "edge" / owner.LOCK_FILE
        args = [sys.executable, "-c", FAKE, str(lock), str(log), token, role]
        if claimed_pid is not None:
            args.append(str(claimed_pid))
        self.log = log
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())
        self.pid = self.process.pid

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.process.kill()
        self.process.wait()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


@pytest.fixture
def fakes(data: Path, tmp_path: Path) -> Iterator[list[Fake]]:
    started: list[Fake] = []
    yield started
    for fake in started:
        fake.stop()


def write_record(data: Path, pid: int, port: int, token: str = "the-token", host: str = "127.0.0.1") -> Path:
    path = data / owner.OWNER_FILE
    record = owner.OwnerRecord(
        pid=pid,
        address=f"http://{host}:{port}",
        token=token,
        started="x",
        command="background",
        pid_start=owner.pid_start(pid),
        code=code_stamp(),  # an owner of this code: not asked to make way
    )
    owner.write(path, record)
    return path


def needle(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    return subprocess.run(
        [sys.executable, "-m", "needle.shells.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "NEEDLE_DATA_DIR": str(data), "NEEDLE_OWNER__AUTOSTART": "true", **env},
    )


class TestNoImpostor:
    def test_a_listener_that_does_not_know_the_token_gets_neither_token_nor_query(self, data, fakes, tmp_path):
        real = Fake(data, "owner", "the-token", tmp_path / "owner.log")  # holds the lock, as the record says
        impostor = Fake(data / "elsewhere", "impostor", "", tmp_path / "impostor.log", claimed_pid=real.pid)
        fakes += [real, impostor]
        record = write_record(data, real.pid, impostor.port)
        done = needle(data, "search", "secret words")
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and "is not the needle owner its record names" in done.stderr
        seen = impostor.requests()
        assert seen and all(r["auth"] is None and "secret" not in r["body"] for r in seen)
        assert record.exists()  # its process holds the index: the record stays

    def test_a_record_others_may_write_is_refused(self, data, fakes, tmp_path):
        real = Fake(data, "owner", "the-token", tmp_path / "owner.log")
        fakes.append(real)
        record = write_record(data, real.pid, real.port)
        record.chmod(0o666)
        done = needle(data, "search", "secret words")
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("error: refusing the owner record") and done.stderr.count("\n") == 1
        assert real.requests() == [] and record.exists()

    def test_a_non_loopback_address_is_refused(self, data, fakes, tmp_path):
        real = Fake(data, "owner", "the-token", tmp_path / "owner.log")
        fakes.append(real)
        write_record(data, real.pid, 80, host="192.0.2.7")
        done = needle(data, "get", "notes/a.md")
        assert done.returncode == 1 and "loopback" in done.stderr and done.stderr.count("\n") == 1

    def test_a_garbled_record_is_kept_while_its_owner_holds_the_index(self, data, fakes, tmp_path):
        real = Fake(data, "owner", "the-token", tmp_path / "owner.log")
        fakes.append(real)
        path = data / owner.OWNER_FILE
        path.write_text('{"pid": 1, "addr')
        path.chmod(0o600)
        location = locate({"NEEDLE_DATA_DIR": str(data)})
        assert owner.read(path) is None and owner.live_owner(location) is None
        assert owner.wait_for_owner(location, timeout=0.5) is None
        assert path.read_text() == '{"pid": 1, "addr'

    def test_a_record_whose_pid_was_reused_is_stale(self, data, fakes, tmp_path):
        real = Fake(data, "owner", "the-token", tmp_path / "owner.log")
        fakes.append(real)
        path = write_record(data, real.pid, real.port)
        stale = json.loads(path.read_text())
        owner.write(path, owner.OwnerRecord(**{**stale, "pid_start": stale["pid_start"] + 1}))
        assert owner.live_owner(locate({"NEEDLE_DATA_DIR": str(data)})) is None and not path.exists()


def test_a_stopped_owner_is_reported_within_the_answer_timeout(data, fakes, tmp_path):
    real = Fake(data, "owner", "the-token", tmp_path / "owner.log")
    fakes.append(real)
    write_record(data, real.pid, real.port)
    client = subprocess.Popen(
        [sys.executable, "-m", "needle.shells.cli", "query", "stuck"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NEEDLE_DATA_DIR": str(data), "NEEDLE_OWNER__ANSWER_TIMEOUT": "1"},
    )
    deadline = time.monotonic() + 60
    while not any(r["path"] == "/needle/cli" for r in real.requests()):
        assert time.monotonic() < deadline and client.poll() is None, (
            client.stderr.read() if client.poll() is not None else ""
        )
        time.sleep(0.05)
    os.kill(real.pid, signal.SIGSTOP)  # mid-request
    out, err = client.communicate(timeout=60)
    assert client.returncode == 1 and out == ""
    assert err == (
        f"error: the owner (pid {real.pid}) has not answered for 1 s: it may be stopped "
        f"(it is stopped: `kill -CONT {real.pid}` resumes it)\n"
    )


class TestLocate:
    @pytest.mark.parametrize(
        "env",
        [
            {},
            {"NEEDLE_DATA_DIR": "/tmp/x/$USER"},
            {"NEEDLE_STORE__URL": "http://127.0.0.1:6333", "NEEDLE_OWNER__AUTOSTART": "false"},
            {"NEEDLE_OWNER__IDLE_MINUTES": "2.5", "NEEDLE_OWNER__ANSWER_TIMEOUT": "3", "NEEDLE_STORE__URL": "null"},
        ],
    )
    def test_reads_what_the_full_settings_read(self, env, tmp_path, monkeypatch):
        config = tmp_path / "needle.yml"
        config.write_text("data_dir: ~/notes-data\nowner: {autostart: false}\n")
        for full_env in (env, {**env, "NEEDLE_CONFIG": str(config)}):
            settings = load_settings(env=full_env)
            assert locate(full_env) == Location.of(settings)

    def test_a_value_it_cannot_judge_leaves_it_to_the_full_settings(self):
        assert locate({"NEEDLE_OWNER__AUTOSTART": "perhaps"}) is None
        assert locate({"NEEDLE_STORE": '{"url": "http://x"}'}) is None


def test_the_lock_file_name_is_the_stores(tmp_path):
    from haystack_integrations.document_stores.needle.edge.shards import LOCK_FILE_NAME

    assert owner.LOCK_FILE == LOCK_FILE_NAME


def test_an_owner_is_idle_only_while_no_request_runs():
    from needle.owner.routes import Activity

    activity = Activity()
    activity.last -= 100
    assert activity.idle_seconds() >= 100
    with activity:
        assert activity.idle_seconds() == 0.0
    assert activity.idle_seconds() < 100


def test_without_an_owner_and_autostart_off_the_command_runs_in_its_own_process(data):
    from argparse import Namespace

    from needle.owner.thin_client import through_owner

    location = Location(data, None, autostart=False, idle_minutes=1.0, answer_timeout=1.0)
    assert through_owner(Namespace(command="search"), location) is None
    assert not (data / owner.OWNER_FILE).exists() and not (data / "owner.log").exists()


class TestFirstCommandFirst:
    """An owner a command starts warms that command's graph before answering, the others after."""

    @pytest.mark.parametrize(
        ("argv", "graphs"),
        [
            (["search", "certbot"], ["search"]),
            (["query", "why", "--pipeline", "vsearch"], ["vsearch"]),
            (["search", "certbot", "--pipeline", "my-graph.yml"], []),
            (["index"], ["ingest"]),
            (["get", "notes/a.md"], []),
            (["status"], []),
        ],
    )
    def test_a_command_names_the_graph_it_runs(self, argv, graphs):
        from needle.owner.thin_client import first_graphs
        from needle.shells.cli import _parser

        assert first_graphs(_parser().parse_args(argv)) == graphs

    def test_owner_run_takes_the_graphs_to_warm_first(self):
        from needle.shells.cli import _parser

        assert _parser().parse_args(["owner", "run", "--first=search"]).first == ["search"]
        assert _parser().parse_args(["owner", "run", "--first="]).first == []
        assert _parser().parse_args(["owner", "run"]).first is None

    def test_graphs_put_off_load_after_the_first_ones_searches_before_ingest(self):
        from needle.owner import served_facade as service

        warmed: list[str] = []

        class Warming:
            def warm(self, name: str) -> str:
                warmed.append(name)
                return name

            def pipeline(self, name: str) -> str:  # one instance, before answering
                warmed.append(f"{name} (one)")
                return name

        previous = service._needle
        service.use_needle(Warming())
        try:
            service.warm_first(["search"])
            assert [service.warm(name) for name in ("ingest", "query", "search", "vsearch")] == [
                None,
                None,
                "search",
                None,
            ]
            assert warmed == ["search (one)"]
            assert service.warm_deferred() == ["query", "search", "vsearch", "ingest"]
            assert warmed == ["search (one)", "query", "search", "vsearch", "ingest"]
            assert service.warm("answer") == "answer"  # from now on at once again
        finally:
            service.use_needle(previous)
            service.warm_deferred()


def test_an_owner_counts_the_requests_it_answered():
    from needle.owner.routes import Activity

    activity = Activity()
    with activity:
        assert activity.served == 0
    assert activity.served == 1


class TestStartUp:
    """What a command sent to an owner loads before its request leaves: its own parser, no YAML, no http.client."""

    def test_one_commands_parser_is_the_whole_parsers_for_that_command(self):
        import argparse

        from needle.shells.cli import _parser

        def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
            return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

        whole = commands(_parser())
        for name, full in whole.items():
            assert list(commands(_parser(name))) == [name]
            assert commands(_parser(name))[name].format_help() == full.format_help()
        argv = ["query", "why", "-n", "3", "--tag", "k8s", "--no-rerank", "--format", "md"]
        assert _parser("query").parse_args(argv) == _parser().parse_args(argv)

    def test_a_mistyped_command_is_refused_with_every_command_named(self, capsys):
        from needle.shells.cli import main

        with pytest.raises(SystemExit):
            main(["serch", "x"])
        err = capsys.readouterr().err
        assert "did you mean 'search'?" in err and "eval" in err and "owner" in err

    def test_the_command_is_the_first_word_unless_help_comes_first(self):
        from needle.shells.cli import _command

        assert _command(["search", "-n", "3", "x"]) == "search"
        assert _command(["-h", "search"]) is None and _command([]) is None

    def test_the_client_imports_no_yaml_http_client_or_evaluation(self, tmp_path):
        probe = (
            "import sys; import needle.shells.cli, needle.owner.thin_client; from needle.owner.locate import locate; "
            "assert locate() is not None; needle.shells.cli._parser(needle.shells.cli._command(['search', 'x'])); "
            "heavy = ('yaml', 'http.client', 'email', 'ssl', 'needle.evaluation', 'subprocess', 'tempfile', 'logging', "
            "'pydantic'); "
            "print(sorted(m for m in sys.modules if m.startswith(heavy)))"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
        env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), NEEDLE_DATA_DIR=str(tmp_path / "data"))
        seen = [
            subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
            for _ in range(2)
        ]
        assert seen[0].returncode == 0 and "'yaml'" in seen[0].stdout  # the first reads the configuration file
        assert (seen[1].returncode, seen[1].stdout) == (0, "[]\n"), seen[1].stderr


class TestLocateCache:
    def test_a_changed_file_is_read_again(self, tmp_path):
        config = tmp_path / "needle.yml"
        env = {"NEEDLE_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        config.write_text("data_dir: /tmp/first\n")
        assert locate(env).data_dir == Path("/tmp/first") and locate(env).data_dir == Path("/tmp/first")
        config.write_text("data_dir: /tmp/second-one\nowner: {idle_minutes: 2}\n")
        assert locate(env) == Location.of(load_settings(env=env))
        assert locate(env).data_dir == Path("/tmp/second-one")
        config.write_text("owner: [not, a, mapping]\n")
        assert locate(env) is None and locate(env) is None

    def test_a_cache_others_may_write_is_not_believed(self, tmp_path):
        config = tmp_path / "needle.yml"
        config.write_text("data_dir: /tmp/mine\n")
        env = {"NEEDLE_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        assert locate(env).data_dir == Path("/tmp/mine")
        cache = tmp_path / "cache" / "needle" / "located.json"
        forged = cache.read_text().replace("/tmp/mine", "/tmp/theirs")
        cache.write_text(forged)
        cache.chmod(0o666)
        assert locate(env).data_dir == Path("/tmp/mine")


class TestQueue:
    """A command that needs the index to itself waits for the others in the owner, saying what it waits for."""

    def test_an_exclusive_block_waits_for_requests_under_way_and_holds_off_new_ones(self):
        import threading

        from needle.owner.routes import Activity

        activity = Activity()
        assert activity.admit()  # a search under way
        assert activity.admit()  # the restore's own request
        waited: list[int] = []
        inside = threading.Event()

        def restore() -> None:
            with activity.exclusive(waited.append, poll=0.01):
                inside.set()
                assert not activity.admit()  # a new request waits while it runs
            activity.leave()

        runner = threading.Thread(target=restore)
        runner.start()
        deadline = time.monotonic() + 30
        while not waited and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waited and set(waited) == {1} and not inside.is_set() and not activity.admit()
        activity.leave()  # the search ends
        runner.join(30)
        assert inside.is_set() and activity.admit() and activity.running == 1

    def test_restore_in_the_owner_says_what_it_waits_for_then_runs(self):
        import threading

        from needle.owner import routes as owner_routes
        from needle.owner import served_facade as service

        class Owner:
            index_lock = threading.RLock()
            index_run: ClassVar[dict[str, Any]] = {
                "collections": ["notes"],
                "phase": "indexing",
                "started": time.time(),
                "batches": 2,
                "files_read": 40,
                "files_pending": 300,
            }

            def restore(self, request: Any) -> Any:
                from needle.core.index_results import BackupReport

                return BackupReport(kind="embedded", chunks=1, files=1, path=request.path)

        previous = service._needle
        service.use_needle(Owner())
        notices: list[str] = []
        activity, owner_routes.ACTIVITY = owner_routes.ACTIVITY, owner_routes.Activity()
        try:
            owner_routes.ACTIVITY.admit()  # the index run's request
            owner_routes.ACTIVITY.admit()  # the restore's own
            done: list[dict] = []
            arguments = {"command": "restore", "path": "/backups/monday", "json": True}
            runner = threading.Thread(
                target=lambda: done.append(owner_routes.execute(arguments, "/", None, notices.append))
            )
            runner.start()
            deadline = time.monotonic() + 30
            while not notices and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not done
            owner_routes.ACTIVITY.leave()
            runner.join(30)
        finally:
            owner_routes.ACTIVITY = activity
            service.use_needle(previous)
        assert done and done[0]["code"] == 0 and json.loads(done[0]["stdout"])["path"] == "/backups/monday"
        assert notices[0].startswith(
            f"needle restore: waiting for 1 request under way in the owner (pid {os.getpid()}) to finish: "
            "index run under way for notes (indexing: 40 of 300 files read in 2 batches"
        )
        assert notices[0].endswith("; new ones wait for this restore")

    def test_restore_and_migrate_go_to_a_running_owner(self):
        from argparse import Namespace

        from needle.owner.thin_client import NEEDS_INDEX, eligible

        assert eligible(Namespace(command="restore")) and eligible(Namespace(command="migrate"))
        assert not {"restore", "migrate"} & NEEDS_INDEX  # with no owner they open the index themselves

    def test_status_shows_an_index_run_under_way(self):
        from needle.commands.render import status_text
        from needle.core.index_results import Status

        status = Status(
            store="/data/index",
            embedding_model="m",
            sparse_model="s",
            collections=[],
            data_dir="/data",
            index_run={
                "collections": ["notes"],
                "phase": "indexing",
                "started": time.time() - 12,
                "batches": 3,
                "files_read": 120,
                "files_pending": 7424,
            },
        )
        assert status_text(status, False).splitlines()[-1] == (
            "index run under way for notes (indexing: 120 of 7424 files read in 3 batches, 12 s so far)"
        )
