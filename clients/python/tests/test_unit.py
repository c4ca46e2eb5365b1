"""Unit tests: no server but scripted loopback ones."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tempfile
import threading
import unittest
import zipfile

from sandman import RetryPolicy, Sandman, SandmanError, Session, verify_webhook
from sandman._transport import backoff, fill_path
from sandman.errors import parse_retry_after
from tests.helpers import _Quiet, _Server

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = RetryPolicy(base_delay=0.001, max_delay=0.002)


class Scripted:
    """A server answering each request with the next scripted (status, headers, body), or "drop"."""

    def __init__(self, answers: list) -> None:
        self.answers, self.log = list(answers), []
        me = self

        class H(_Quiet):
            def _any(self) -> None:
                me.log.append({"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": self._body()})
                a = me.answers.pop(0) if me.answers else (500, {}, {})
                if a == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, headers, body = a
                out = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        self.server = _Server(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def env(status: int, error_type: str) -> tuple:
    return (status, {}, {"status": "error", "error": f"a {error_type}", "error_type": error_type})


SESSION = {"id": "ses_x", "state": "running", "metadata": {}, "app": None}


class TransportTest(unittest.TestCase):
    def test_a_create_sends_one_idempotency_key_the_same_on_each_retry(self):
        s = Scripted([env(429, "quota_exceeded"), "drop", env(503, "unavailable"), (201, {}, SESSION), (201, {}, SESSION)])
        try:
            sm = Sandman(s.url, "sk_1", retry=FAST)
            got = sm.sessions.create("web", app={"port": 3000, "start_command": "x"})
            self.assertIsInstance(got, Session)
            keys = [r["headers"].get("idempotency-key") for r in s.log]
            self.assertEqual(len(keys), 4)
            self.assertEqual(len(set(keys)), 1)
            self.assertRegex(keys[0], r"^[0-9a-f-]{36}$")
            self.assertEqual(s.log[0]["headers"]["authorization"], "Bearer sk_1")
            self.assertEqual(json.loads(s.log[0]["body"]), {"template": "web", "app": {"port": 3000, "start_command": "x"}})
            sm.sessions.create("web", idempotency_key="mine-1")
            self.assertEqual(s.log[4]["headers"]["idempotency-key"], "mine-1")
        finally:
            s.close()

    def test_what_is_not_retried(self):
        s = Scripted([env(409, "conflict"), env(503, "sandbox_expired"), env(503, "unavailable"), env(429, "quota_exceeded"), (201, {}, {"id": "wh_1", "event_types": []})])
        try:
            sm = Sandman(s.url, "k", retry=FAST)
            for fn, error_type in ((lambda: sm.sessions.resume("ses_x"), "conflict"), (lambda: sm.sessions.resume("ses_x"), "sandbox_expired"), (lambda: sm.webhook_endpoints.create("https://x.test"), "unavailable")):
                with self.assertRaises(SandmanError) as cm:
                    fn()
                self.assertEqual((cm.exception.error_type, cm.exception.attempts), (error_type, 1))
            self.assertEqual(sm.webhook_endpoints.create("https://x.test").id, "wh_1", "a 429 is retried on every route")
        finally:
            s.close()

    def test_errors_carry_status_type_message_retry_after_request_id(self):
        s = Scripted([(503, {"retry-after": "7", "apigw-requestid": "abc="}, {"status": "error", "error": "slow table", "error_type": "unavailable"}), (502, {}, "<html>bad gateway</html>")])
        try:
            sm = Sandman(s.url, "k", retry=RetryPolicy(max_retries=0))
            with self.assertRaises(SandmanError) as cm:
                sm.sessions.get("ses_x")
            e = cm.exception
            self.assertEqual((e.status, e.error_type, e.message, e.retry_after, e.request_id), (503, "unavailable", "slow table", 7.0, "abc="))
            with self.assertRaises(SandmanError) as cm:
                sm.sessions.get("ses_x")
            self.assertEqual((cm.exception.status, cm.exception.error_type), (502, "internal"))
        finally:
            s.close()

    def test_network_errors_are_retried_then_reported(self):
        s = Scripted([])
        s.close()  # nothing listens there now
        with self.assertRaises(SandmanError) as cm:
            Sandman(s.url, "k", retry=RetryPolicy(max_retries=2, base_delay=0.001)).sessions.get("ses_x")
        self.assertEqual((cm.exception.status, cm.exception.error_type, cm.exception.attempts), (0, "network", 3))

    def test_backoff_retry_after_and_paths(self):
        p = RetryPolicy(base_delay=0.1, max_delay=1.0)
        self.assertEqual([round(backoff(n, p, lambda: 1.0), 3) for n in range(1, 6)], [0.1, 0.2, 0.4, 0.8, 1.0])
        self.assertEqual([round(backoff(n, p, lambda: 0.0), 3) for n in (1, 5)], [0.05, 0.5])
        self.assertEqual(parse_retry_after("3"), 3.0)
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0), 10.0)
        self.assertIsNone(parse_retry_after("soon"))
        self.assertEqual(fill_path("/v1/sessions/{id}/open/{path}", {"id": "ses_a", "path": "a b/c?d"}), "/v1/sessions/ses_a/open/a%20b/c%3Fd")


class WebhookTest(unittest.TestCase):
    def sign(self, secret: str, msg_id: str, ts: int, body: bytes) -> str:
        key = base64.b64decode(secret.removeprefix("whsec_"))
        import hmac

        return "v1," + base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()

    def test_the_standard_webhooks_spec_example(self):
        # The spec's own example (the npm library signs it alike: clients/typescript's unit test).
        headers = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
        got = verify_webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", b'{"test": 2432232314}', headers, now=1614265330)
        self.assertEqual(got, {"test": 2432232314})
        with self.assertRaises(SandmanError):
            verify_webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", b'{"test": 2432232315}', headers, now=1614265330)

    def test_rotation_tampering_and_time(self):
        new, old = "whsec_" + base64.b64encode(b"n" * 32).decode(), "whsec_" + base64.b64encode(b"o" * 32).decode()
        body = b'{"type":"session.paused","data":{"session_id":"ses_x"}}'
        h = {"Webhook-Id": "ses_x:7", "Webhook-Timestamp": "1000", "Webhook-Signature": self.sign(new, "ses_x:7", 1000, body) + " " + self.sign(old, "ses_x:7", 1000, body)}
        self.assertEqual(verify_webhook(old, body, h, now=1000)["data"]["session_id"], "ses_x", "either secret verifies while rotating")
        self.assertEqual(verify_webhook(new, body.decode(), h, now=1290)["type"], "session.paused")
        for args, kw in (((new, body.replace(b"ses_x", b"ses_y"), h), {"now": 1000}), ((new, body, {**h, "Webhook-Id": "ses_x:8"}), {"now": 1000}), ((new, body, h), {"now": 1301}), ((new, body, {}), {})):
            with self.assertRaises(SandmanError) as cm:
                verify_webhook(*args, **kw)
            self.assertEqual(cm.exception.error_type, "invalid_signature")


class BuildTest(unittest.TestCase):
    def test_the_backend_builds_the_same_valid_wheel_twice(self):
        sys.path.insert(0, os.path.join(HERE, "_build"))
        try:
            import sandman_build
        finally:
            sys.path.pop(0)
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            name = sandman_build.build_wheel(a)
            self.assertEqual(sandman_build.build_wheel(b), name)
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), "two builds, one wheel")
            with zipfile.ZipFile(os.path.join(a, name)) as z:
                names = z.namelist()
                self.assertIn("sandman/__init__.py", names)
                self.assertIn("sandman/py.typed", names)
                record = z.read("sandman-1.0.0.dist-info/RECORD").decode().splitlines()
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if not digest:
                        continue
                    data = z.read(path)
                    self.assertEqual(digest, "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), path)
                    self.assertEqual(int(size), len(data))
                meta = z.read("sandman-1.0.0.dist-info/METADATA").decode()
                self.assertIn("Requires-Dist: requests>=2.28", meta)
            sdist = sandman_build.build_sdist(a)
            self.assertEqual(sdist, "sandman-1.0.0.tar.gz")


if __name__ == "__main__":
    unittest.main()
