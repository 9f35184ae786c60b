"""The benches' lean HTTP client against a real server on a loopback port."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from app.cli.wire import LeanConnection


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    # Client ports: a socket's id() can be reused once the first connection is gone.
    connections: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        _Handler.connections.add(self.client_address[1])
        body = self.rfile.read(int(self.headers["content-length"]))
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"2\r\n{}\r\n0\r\n\r\n")
            return
        answer = b'{"path": "%s", "got": %s, "tag": "%s"}' % (
            self.path.encode(), body, (self.headers["x-tag"] or "").encode())
        self.send_response(404 if self.path == "/missing" else 200)
        self.send_header("content-length", str(len(answer)))
        if self.path == "/close":
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(answer)
        if self.path == "/idle":  # as a keep-alive timeout does: closed, unannounced
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.connections.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_answers_come_back_whole_over_one_connection(url: str) -> None:
    conn = LeanConnection(url)
    big = b'"' + b"x" * 300_000 + b'"'  # larger than one read
    status, body = conn.post("/a", big, {"x-tag": "one"})
    assert status == 200 and body == b'{"path": "/a", "got": %s, "tag": "one"}' % big
    status, body = conn.post("/missing", b"[1]")
    assert status == 404 and body.endswith(b'"got": [1], "tag": ""}')
    assert len(_Handler.connections) == 1  # kept alive
    conn.close()


# /close: the server says it closes; /idle: it lets the kept-alive connection go later,
# without a word, as a server's keep-alive timeout does.
@pytest.mark.parametrize("first", ["/close", "/idle"])
def test_a_connection_the_server_closed_is_opened_again(url: str, first: str) -> None:
    conn = LeanConnection(url)
    assert conn.post(first, b"1")[0] == 200
    assert conn.post("/b", b"2") == (200, b'{"path": "/b", "got": 2, "tag": ""}')
    assert len(_Handler.connections) == 2
    conn.close()


def test_an_answer_without_its_length_is_refused(url: str) -> None:
    conn = LeanConnection(url)
    with pytest.raises(RuntimeError, match="no Content-Length"):
        conn.post("/chunked", b"{}")
    with pytest.raises(ValueError, match="plain http"):
        LeanConnection("https://example.org")
