"""The conformance suite: the SDK against the local stack (`make run`'s),
started by scripts/sdk-clients.sh, which sets SANDMAN_URL, SANDMAN_API_KEY,
SANDMAN_TEST_QUOTA_KEY (a key with a running limit of 1) and
SANDMAN_TEST_OTHER_KEY (another account's key)."""

from __future__ import annotations

import concurrent.futures
import datetime
import importlib
import json
import os
import re
import subprocess
import sys
import time
import unittest

import requests

from sandman import RetryPolicy, Sandman, SandmanError, verify_webhook
from tests.helpers import Proxy, Receiver

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URL = os.environ.get("SANDMAN_URL")
KEY = os.environ.get("SANDMAN_API_KEY")
QUOTA_KEY = os.environ.get("SANDMAN_TEST_QUOTA_KEY")
OTHER_KEY = os.environ.get("SANDMAN_TEST_OTHER_KEY")
if os.environ.get("SANDMAN_REQUIRE_STACK") and not (URL and KEY):
    raise RuntimeError("SANDMAN_REQUIRE_STACK is set but SANDMAN_URL or SANDMAN_API_KEY is not")
APP = {"port": 3000, "start_command": "python3 -m http.server $PORT"}
FAST = RetryPolicy(base_delay=0.05)


@unittest.skipUnless(URL and KEY, "needs the local stack: bash scripts/sdk-clients.sh")
class Conformance(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.sm = Sandman(URL, KEY)
        cls.proxy = Proxy(URL)
        cls.made: list[str] = []

    @classmethod
    def tearDownClass(cls) -> None:
        for sid in cls.made:
            try:
                cls.sm.sessions.delete(sid)
            except SandmanError:
                pass
        cls.proxy.close()

    def setUp(self) -> None:
        self.proxy.clear()

    def create(self, client: Sandman | None = None, **kw):
        kw.setdefault("template", "base")
        s = (client or self.sm).sessions.create(**kw)
        self.made.append(s.id)
        return s

    def via_proxy(self, timeout: float = 30.0, **retry) -> Sandman:
        return Sandman(self.proxy.url, KEY, timeout=timeout, retry=RetryPolicy(**{"base_delay": 0.05, **retry}))

    def raises(self, status: int, error_type: str, fn, *args, **kw) -> SandmanError:
        with self.assertRaises(SandmanError) as cm:
            fn(*args, **kw)
        e = cm.exception
        self.assertEqual((e.status, e.error_type), (status, error_type), e.message)
        self.assertTrue(e.message)
        return e

    def test_readme_first_example_runs_as_written(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            first = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
        with open(os.path.join(HERE, "examples", "quickstart.py"), encoding="utf-8") as f:
            self.assertEqual(first, f.read(), "README's first code block is examples/quickstart.py")
        env = {**os.environ, "SANDMAN_URL": URL, "SANDMAN_API_KEY": KEY, "PYTHONPATH": HERE}
        out = subprocess.run([sys.executable, "examples/quickstart.py"], cwd=HERE, env=env, capture_output=True, text=True, timeout=90)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"(?m)^open http://.*/open\?token=")
        self.assertRegex(out.stdout, r"(?m)^preview http://")
        self.assertRegex(out.stdout, r"(?m)^404 not_found ")

    def test_whole_flow(self):
        sm = self.sm
        s = self.create(template="web", app=APP, metadata={"user": "ada"})
        self.assertEqual(s.state, "running")
        self.assertEqual(s.metadata["user"], "ada")
        self.assertEqual(sm.sessions.wait_until_ready(s.id, timeout=60).readiness, "ready")
        self.assertEqual(s.app.port if s.app else None, 3000)
        sm.sessions.activity(s.id)
        sm.sessions.activity(s.id, hold_seconds=120)

        tok = sm.client_tokens.create(s.id, ttl_seconds=300)
        self.assertTrue((tok.ws_url or "").startswith("ws://"))
        browser = Sandman(URL, tok.token)
        self.assertEqual(browser.sessions.status(s.id).state, "running")
        self.raises(403, "forbidden", browser.sessions.get, s.id)
        link = sm.sessions.open_url(s.id, tok.token, path="/docs/a b")
        self.assertTrue(link.startswith(f"{URL}/v1/sessions/{s.id}/open/docs/a%20b?token="), link)
        opened = requests.get(sm.sessions.open_url(s.id, tok.token), allow_redirects=False, timeout=30)
        self.assertEqual(opened.status_code, 302)

        p = sm.sessions.pause(s.id)
        self.assertEqual((p.paused, p.session.state), (True, "paused"))
        self.assertTrue(sm.sessions.pause(s.id).paused, "pause twice is 200")
        self.assertEqual(sm.sessions.reconnect(s.id).status, "paused")
        r = sm.sessions.resume(s.id, wait_ready=True)
        self.assertEqual(r.session.state, "running")
        self.assertTrue(r.preview_url)
        sm.sessions.wait_until_ready(s.id, timeout=30)

        listed = list(sm.sessions.list(state="running", limit=1))
        self.assertIn(s.id, [x.id for x in listed], "list follows the pages of 1 to the session")
        self.assertTrue(all(x.state == "running" for x in listed))
        self.assertEqual(len(sm.sessions.list_page(limit=1).sessions), 1)

        d = sm.sessions.diagnose(s.id)
        self.assertEqual(d.session.id, s.id)
        self.assertTrue(d.verdict)
        self.assertTrue(all(e.event_id.startswith(s.id) for e in d.events))
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        u = sm.usage.get(from_=today, to=today)
        self.assertEqual((u.group_by, u.from_), ("day", today))
        lines = list(sm.usage.lines(from_=today, to=today, group_by="session", limit=1))
        self.assertIn(s.id, [x.session_id for x in lines], "usage lines follow the pages")
        self.assertIsInstance(sm.pools.list(), list)

        self.assertEqual(sm.sessions.delete(s.id).state, "killed")
        self.assertEqual(sm.sessions.delete(s.id).state, "killed", "delete twice is 200")
        self.raises(0, "not_ready", sm.sessions.wait_until_ready, s.id, timeout=5)

    def test_wait_until_ready_fails_clearly_when_the_app_fails(self):
        s = self.create(app={"port": 3000, "start_command": "echo no server here; exit 3"})
        e = self.raises(0, "not_ready", self.sm.sessions.wait_until_ready, s.id, timeout=60)
        self.assertIn("app failed", e.message)

    def test_every_error_type_maps_to_sandman_error(self):
        sm = self.sm
        s = self.create()
        self.raises(400, "invalid", sm.sessions.create, template="")
        self.raises(401, "unauthorized", Sandman(URL, "sk_wrong").sessions.get, s.id)
        self.raises(403, "forbidden", Sandman(URL, OTHER_KEY).sessions.get, s.id)
        self.raises(404, "not_found", sm.sessions.get, "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa")
        self.raises(413, "too_large", sm.sessions.create, template="base", metadata={"big": "x" * 70_000})
        sm.sessions.pause(s.id)
        self.raises(409, "sandbox_paused", sm.sessions.activity, s.id)
        sm.sessions.delete(s.id)
        self.raises(409, "conflict", sm.sessions.resume, s.id)

        q = Sandman(URL, QUOTA_KEY)
        first = q.sessions.create(template="base")
        try:
            e = self.raises(429, "quota_exceeded", q.sessions.create, template="base", retry=RetryPolicy(max_retries=0))
            self.assertEqual(e.attempts, 1)
        finally:
            q.sessions.delete(first.id)

        # The provider and the table failing cannot be caused at will: the
        # proxy answers those envelopes as the API does.
        c = self.via_proxy(max_retries=0)
        for error_type, retry_after in (("sandbox_expired", None), ("sandbox_unreachable", "2"), ("unavailable", "1")):
            self.proxy.fault(
                f"POST /v1/sessions/{s.id}/resume",
                {"status": 503, "headers": {"retry-after": retry_after} if retry_after else {},
                 "body": {"status": "error", "error": f"injected {error_type}", "error_type": error_type}},
            )
            e = self.raises(503, error_type, c.sessions.resume, s.id)
            self.assertEqual(e.retry_after, None if retry_after is None else float(retry_after))
        internal = {"status": "error", "error": "something went wrong on our side; if it keeps happening, report request id 0f1e2d3c", "error_type": "internal"}
        self.proxy.fault(f"GET /v1/sessions/{s.id}/status", {"status": 500, "headers": {"apigw-requestid": "Xy1-abc="}, "body": internal})
        self.assertEqual(self.raises(500, "internal", c.sessions.status, s.id).request_id, "Xy1-abc=")
        self.proxy.fault(f"GET /v1/sessions/{s.id}/status", {"status": 500, "body": internal})
        self.assertEqual(self.raises(500, "internal", c.sessions.status, s.id).request_id, "0f1e2d3c")

    def test_retries(self):
        s = self.create()
        c = self.via_proxy()
        self.proxy.fault(f"GET /v1/sessions/{s.id}/status", {"status": 503, "headers": {"retry-after": "1"}, "body": {"status": "error", "error": "slow", "error_type": "unavailable"}})
        t0 = time.monotonic()
        self.assertEqual(c.sessions.status(s.id).session_id, s.id)
        self.assertGreaterEqual(time.monotonic() - t0, 0.95, "Retry-After said 1 s")
        self.assertEqual(len([r for r in self.proxy.log if r["path"].endswith("/status")]), 2)

        self.proxy.clear()
        self.proxy.fault(f"GET /v1/sessions/{s.id}", "drop")
        self.assertEqual(c.sessions.get(s.id).id, s.id, "a dropped connection is retried")
        self.assertEqual(len(self.proxy.log), 2)

        self.proxy.clear()
        self.proxy.fault(f"GET /v1/sessions/{s.id}", {"status": 503, "headers": {"retry-after": "1"}, "body": {"status": "error", "error": "slow", "error_type": "unavailable"}}, times=100)
        t1 = time.monotonic()
        e = self.raises(503, "unavailable", self.via_proxy(max_retries=10, deadline=2.5).sessions.get, s.id)
        self.assertLess(time.monotonic() - t1, 2.5, "the deadline bounds the retries")
        self.assertIn(e.attempts, (2, 3))

        self.proxy.clear()
        self.proxy.fault("POST /v1/webhook-endpoints", {"status": 503, "body": {"status": "error", "error": "slow", "error_type": "unavailable"}})
        self.assertEqual(self.raises(503, "unavailable", c.webhook_endpoints.create, "http://127.0.0.1:9/x").attempts, 1, "not retried: it would make two endpoints")

    def test_idempotent_creates(self):
        c = self.via_proxy()
        tag = f"idem-{time.time_ns()}"
        self.proxy.fault("POST /v1/sessions", "drop-after-forward")
        s = self.create(client=c, metadata={"tag": tag})
        posts = [r for r in self.proxy.log if r["method"] == "POST" and r["path"] == "/v1/sessions"]
        self.assertEqual(len(posts), 2)
        self.assertEqual(posts[0]["status"], 201, "the first attempt made it")
        self.assertTrue(posts[0]["headers"]["idempotency-key"])
        self.assertEqual(posts[1]["headers"]["idempotency-key"], posts[0]["headers"]["idempotency-key"])
        self.assertEqual(posts[1]["upstream_headers"].get("idempotent-replayed"), "true")
        self.assertEqual(len([x for x in self.sm.sessions.list(limit=100) if x.metadata.get("tag") == tag]), 1, "one session, not two")
        self.assertEqual(s.metadata["tag"], tag)

        key = "order-" + tag
        a = self.create(idempotency_key=key)
        b = self.create(template="web", idempotency_key=key)
        self.assertEqual(b.id, a.id, "a replay answers the first create's session")
        self.assertNotEqual(self.create().id, a.id)

    def test_checkpoints_restore_fork_delete_and_replays(self):
        sm = self.sm
        s = self.create(metadata={"user": "ada"})
        sm.sessions.wait_until_ready(s.id, timeout=60)
        key = f"chk-{time.time_ns()}"
        c = sm.checkpoints.create(s.id, label="turn 3", metadata={"turn": "3"}, idempotency_key=key)
        self.assertRegex(c.id, r"^chk_[0-9a-v]{26}$")
        self.assertEqual((c.session_id, c.label, c.trigger), (s.id, "turn 3", "api"))
        self.assertEqual(sm.checkpoints.create(s.id, label="turn 3", idempotency_key=key).id, c.id, "a replayed create answers the first checkpoint")
        ready = sm.checkpoints.wait_until_ready(s.id, c.id, timeout=60)
        self.assertEqual(ready.state, "ready")
        self.assertIn(ready.kind, ("snapshot", "archive"))
        self.assertIn(ready.keeps, ("filesystem", "filesystem+memory"))
        self.assertGreaterEqual(ready.size_bytes, 0)

        # The SDK's own retry of a create whose answer was lost carries the same key: one checkpoint.
        self.proxy.fault(f"POST /v1/sessions/{s.id}/checkpoints", "drop-after-forward")
        c2 = self.via_proxy().checkpoints.create(s.id, label="turn 4")
        posts = [r for r in self.proxy.log if r["method"] == "POST"]
        self.assertEqual(len(posts), 2)
        self.assertEqual(posts[0]["status"], 202, "the first attempt made it")
        self.assertEqual(posts[1]["headers"]["idempotency-key"], posts[0]["headers"]["idempotency-key"])
        self.assertEqual(posts[1]["upstream_headers"].get("idempotent-replayed"), "true")
        sm.checkpoints.wait_until_ready(s.id, c2.id, timeout=60)
        self.assertEqual([x.id for x in sm.checkpoints.list(s.id, limit=1)], [c2.id, c.id], "pages of 1 followed, newest first")
        self.assertEqual(len(sm.checkpoints.list_page(s.id, limit=1).checkpoints), 1)

        # Restore in place; two restores of the same checkpoint at once are one.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            r1, r2 = pool.map(lambda _: sm.sessions.restore(s.id, checkpoint_id=c.id), range(2))
        self.assertEqual((r1.id, r1.state), (s.id, "restoring"), "the same session")
        self.assertEqual((r2.id, r2.state), (s.id, "restoring"))
        sm.sessions.wait_until_ready(s.id, timeout=60)
        self.assertIsNone(sm.sessions.get(s.id).restore_error)
        timeline: list = []
        for i in range(100):
            timeline = list(sm.sessions.events(s.id, limit=2))
            if any(e.from_ == "restoring" for e in timeline):
                break
            time.sleep(0.1)
        self.assertEqual(len([e for e in timeline if e.to == "restoring"]), 1, "one restore")
        self.assertTrue(any(e.from_ == "restoring" and e.to == "running" for e in timeline), "restoring → running on the timeline")

        # A restore repeated with its Idempotency-Key once it is done starts none.
        rkey = f"restore-{time.time_ns()}"
        self.assertEqual(sm.sessions.restore(s.id, checkpoint_id=c.id, idempotency_key=rkey).state, "restoring")
        sm.sessions.wait_until_ready(s.id, timeout=60)
        replayed = sm.sessions.restore(s.id, checkpoint_id=c.id, idempotency_key=rkey)
        self.assertEqual(replayed.state, "running", "a replayed restore answers the session as it is")
        restores = [e for e in sm.sessions.events(s.id) if e.to == "restoring"]
        self.assertEqual(len(restores), 2, "the replay started no restore")

        # Fork: a new session from the checkpoint; a replay with the key is the same one.
        fkey = f"fork-{time.time_ns()}"
        f = sm.sessions.fork(s.id, checkpoint_id=c.id, metadata={"user": "bob"}, idempotency_key=fkey)
        self.made.append(f.id)
        self.assertNotEqual(f.id, s.id)
        self.assertEqual((f.forked_from.session_id, f.forked_from.checkpoint_id), (s.id, c.id))
        self.assertEqual(f.metadata["user"], "bob")
        self.assertEqual(sm.sessions.fork(s.id, checkpoint_id=c.id, idempotency_key=fkey).id, f.id, "a replayed fork answers the first")
        sm.sessions.wait_until_ready(f.id, timeout=60)
        self.assertEqual(sm.sessions.get(s.id).state, "running", "the source is not changed by its fork")

        # Delete; a checkpoint of another session is not found; waiting on a gone one fails fast.
        sm.checkpoints.delete(s.id, c2.id)
        self.raises(404, "not_found", sm.checkpoints.get, s.id, c2.id)
        self.raises(404, "not_found", sm.checkpoints.get, f.id, c.id)
        self.raises(404, "not_found", sm.checkpoints.wait_until_ready, s.id, c2.id, timeout=5)
        self.assertEqual([x.id for x in sm.checkpoints.list(s.id)], [c.id])

    def test_webhooks_real_deliveries_verify_a_tampered_one_is_refused(self):
        sm = self.sm
        rx = Receiver()
        ep = sm.webhook_endpoints.create(rx.url, event_types=["session.paused"], description="sdk test")
        try:
            self.assertTrue((ep.secret or "").startswith("whsec_"))
            self.assertIn(ep.id, [x.id for x in sm.webhook_endpoints.list()])
            self.assertIsNone(sm.webhook_endpoints.get(ep.id).secret, "the secret is shown once")
            s = self.create()
            sm.sessions.pause(s.id)
            d = rx.next(lambda d: json.loads(d["body"])["data"]["session_id"] == s.id)
            ev = verify_webhook(ep.secret, d["body"], d["headers"])
            self.assertEqual((ev["type"], ev["data"]["session_id"], ev["data"]["to"]), ("session.paused", s.id, "paused"))
            self.assertEqual(ev["data"]["event_id"], d["headers"]["webhook-id"])

            tampered = d["body"].replace(b'"to":"paused"', b'"to":"running"')
            self.assertNotEqual(tampered, d["body"])
            self.raises(0, "invalid_signature", verify_webhook, ep.secret, tampered, d["headers"])
            wrong = "whsec_bm90IHRoZSBlbmRwb2ludCdzIHNlY3JldCwgMzIgYnk="
            self.raises(0, "invalid_signature", verify_webhook, wrong, d["body"], d["headers"])
            stale = int(d["headers"]["webhook-timestamp"]) + 600
            self.raises(0, "invalid_signature", verify_webhook, ep.secret, d["body"], d["headers"], now=stale)

            delivery = None
            for _ in range(50):
                delivery = next((x for x in sm.webhook_deliveries.list(ep.id, limit=1) if x.event_id == ev["data"]["event_id"]), None)
                if delivery and delivery.status == "succeeded":
                    break
                time.sleep(0.1)
            self.assertEqual(delivery.status if delivery else None, "succeeded")
            rotated = sm.webhook_endpoints.rotate_secret(ep.id)
            self.assertNotEqual(rotated.secret, ep.secret)
            before = len(rx.got)
            self.assertEqual(sm.webhook_deliveries.retry(ep.id, delivery.id).id, delivery.id)
            replay = rx.next(lambda d: True, after=before)
            self.assertEqual(replay["headers"]["webhook-id"], d["headers"]["webhook-id"], "a replay keeps its webhook-id")
            verify_webhook(rotated.secret, replay["body"], replay["headers"])
            verify_webhook(ep.secret, replay["body"], replay["headers"])  # the old secret signs for 24 h
            verify_webhook([wrong, rotated.secret], replay["body"], replay["headers"])

            off = sm.webhook_endpoints.update(ep.id, disabled=True, description="off")
            self.assertEqual((off.disabled, off.description), (True, "off"))
        finally:
            sm.webhook_endpoints.delete(ep.id)
            rx.close()
        self.raises(404, "not_found", sm.webhook_endpoints.get, ep.id)

    def test_fastapi_style_endpoint_mints_a_token_for_the_users_session(self):
        os.environ["SANDMAN_URL"], os.environ["SANDMAN_API_KEY"] = URL, KEY
        sys.path.insert(0, os.path.join(HERE, "examples"))
        try:
            ex = importlib.import_module("fastapi_token")
        finally:
            sys.path.pop(0)
        s = self.create()
        other = self.create()
        ex.SESSIONS.update({"ada": s.id, "bob": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"})
        body = ex.sandbox_token(ex.current_user("theme=dark; user=ada"))
        self.assertEqual(body["session_id"], s.id)
        browser = Sandman(URL, body["token"])
        self.assertEqual(browser.sessions.status(s.id).session_id, s.id, "the token opens the user's session")
        self.raises(403, "forbidden", browser.sessions.status, other.id)
        self.assertTrue(body["open_url"].startswith(f"{URL}/v1/sessions/{s.id}/open?token="))
        for cookie, status in ((None, 401), ("user=carol", 404), ("user=bob", 404)):
            with self.assertRaises(ex.HTTPException) as cm:
                ex.sandbox_token(ex.current_user(cookie))
            self.assertEqual(cm.exception.status_code, status, cookie)


if __name__ == "__main__":
    unittest.main()
