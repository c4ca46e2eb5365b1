"""Test plumbing: a fault-injecting HTTP proxy and a webhook receiver, on loopback."""

from __future__ import annotations

import http.server
import socketserver
import threading
import time
from typing import Any, Callable

import requests


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""


class Proxy:
    """Forwards to upstream unless a planned fault takes the request:
    a dict {status, headers, body} answered instead; "drop" (close without an
    answer); "drop-after-forward" (upstream acts, the answer is lost).
    log: each request's method, path, headers and upstream's status and headers."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.faults: list[list[Any]] = []
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        proxy = self
        self._http = requests.Session()

        class Handler(_Quiet):
            def _any(self) -> None:
                body = self._body()
                entry = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
                with proxy._lock:
                    proxy.log.append(entry)
                    action = None
                    for f in proxy.faults:
                        if f[0](self.command, self.path):
                            action = f[1]
                            f[2] -= 1
                            if f[2] <= 0:
                                proxy.faults.remove(f)
                            break
                if action == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if isinstance(action, dict):
                    import json

                    out = json.dumps(action.get("body", {})).encode()
                    self.send_response(action["status"])
                    for k, v in {"content-type": "application/json", **action.get("headers", {})}.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                hop = {"host", "connection", "content-length", "accept-encoding"}
                up = proxy._http.request(
                    self.command,
                    proxy.upstream + self.path,
                    headers={k: v for k, v in self.headers.items() if k.lower() not in hop},
                    data=body or None,
                    allow_redirects=False,
                )
                entry["status"] = up.status_code
                entry["upstream_headers"] = {k.lower(): v for k, v in up.headers.items()}
                if action == "drop-after-forward":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(up.status_code)
                for k, v in up.headers.items():
                    if k.lower() not in {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}:
                        self.send_header(k, v)
                self.send_header("content-length", str(len(up.content)))
                self.end_headers()
                self.wfile.write(up.content)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fault(self, match: str | Callable[[str, str], bool], action: Any, times: int = 1) -> None:
        """match: a function of (method, path), or "METHOD /path-prefix"."""
        if isinstance(match, str):
            method, prefix = match.split(" ", 1)
            m = lambda meth, path: meth == method and path.startswith(prefix)  # noqa: E731
        else:
            m = match
        with self._lock:
            self.faults.append([m, action, times])

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.log.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Receiver:
    """A webhook endpoint: 204 to every POST, keeping the raw body and headers."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []
        self._cv = threading.Condition()
        rx = self

        class Handler(_Quiet):
            def do_POST(self) -> None:
                d = {"body": self._body(), "headers": {k.lower(): v for k, v in self.headers.items()}}
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()
                with rx._cv:
                    rx.got.append(d)
                    rx._cv.notify_all()

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next(self, pred: Callable[[dict[str, Any]], bool], after: int = 0, timeout: float = 15.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        with self._cv:
            while True:
                for d in self.got[after:]:
                    if pred(d):
                        return d
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching delivery within {timeout} s (got {len(self.got)})")
                self._cv.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
