"""`needle.owner.wire`: the thin client's HTTP/1.1 over a loopback socket, against the standard library's own server."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from needle.owner.wire import Connection, WireError


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/sized":
            body = b'{"pid": 1}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/garbage":
            self.wfile.write(b"SSH-2.0-OpenSSH\r\n\r\n")
            self.close_connection = True
        elif self.path == "/short":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"only this")
            self.close_connection = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in (b'{"alive": 1}\n{"prog', b'ress": "' + body + b'"}\n', b'{"done": 0}\n'):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port
    server.shutdown()


def test_a_sized_answer_then_a_chunked_stream_line_by_line_on_one_connection(port):
    connection = Connection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/sized")
        first = connection.getresponse()
        assert (first.status, first.headers["content-length"], first.read()) == (200, "10", b'{"pid": 1}')
        connection.request("POST", "/cli", body='a "b"', headers={"Authorization": "Bearer t"})
        stream = connection.getresponse()
        lines = [stream.readline() for _ in range(4)]
    finally:
        connection.close()
    assert stream.status == 201
    assert lines == [b'{"alive": 1}\n', b'{"progress": "a "b""}\n', b'{"done": 0}\n', b""]


@pytest.mark.parametrize("path", ["/garbage", "/short"])
def test_what_is_not_a_whole_http_answer_is_an_error(port, path):
    connection = Connection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        with pytest.raises(WireError):
            connection.getresponse().read()
    finally:
        connection.close()


def test_nothing_listening_is_an_os_error():
    import socket

    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(OSError):
        Connection("127.0.0.1", port, timeout=2)


@pytest.mark.parametrize("key_size", [0, 32, 64, 65, 200])
def test_the_challenge_hmac_is_the_standard_one_without_openssl(key_size):
    import hashlib
    import hmac

    from needle.owner.code_stamp import hmac_sha256, sha256
    from needle.owner.record import proof

    key = bytes(range(256))[:key_size]
    message = b"0123456789abcdef:4242"
    assert hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).hexdigest()
    assert sha256(message).hexdigest() == hashlib.sha256(message).hexdigest()
    token = "t" * key_size
    assert proof(token, "0123456789abcdef", 4242) == hmac.new(token.encode(), message, hashlib.sha256).hexdigest()
