"""The client and its resources."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterator, TypeVar

import requests

from ._transport import RetryPolicy, Transport, build_url
from .errors import SandmanError
from .models import (
    AppRequest,
    Checkpoint,
    CheckpointList,
    ClientToken,
    Diagnosis,
    PauseResult,
    Pool,
    PoolList,
    ReconnectResult,
    ResumeResult,
    Session,
    SessionEvent,
    SessionEventList,
    SessionList,
    Status,
    Usage,
    UsageLine,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookEndpoint,
    WebhookEndpointList,
)
from .routes import ROUTES

FINAL_STATES = frozenset({"failed", "expired", "killed"})


def _body(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given (None: absent)."""
    return {k: (v.to_dict() if isinstance(v, AppRequest) else v) for k, v in fields.items() if v is not None}


def is_ready(status: Status) -> bool:
    """Ready (docs/READINESS.md): running, and its app answered (readiness
    "ready") or it has no app (readiness None)."""
    return status.state == "running" and status.readiness in ("ready", None)


class Sandman:
    """The client. base_url defaults to SANDMAN_URL (else
    http://127.0.0.1:8080, make run's); api_key to SANDMAN_API_KEY (a client
    token works too, for status, activity and resume). timeout bounds one
    attempt, in seconds; retry is the RetryPolicy. One client per process is
    enough: it keeps its connections in a requests.Session.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http: requests.Session | None = None,
    ) -> None:
        key = api_key or os.environ.get("SANDMAN_API_KEY")
        if not key:
            raise ValueError("Sandman: no API key (pass api_key or set SANDMAN_API_KEY)")
        self.base_url = (base_url or os.environ.get("SANDMAN_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.transport = Transport(self.base_url, key, timeout, retry or RetryPolicy(), http or requests.Session())
        self.sessions = Sessions(self)
        self.checkpoints = Checkpoints(self)
        self.client_tokens = ClientTokens(self)
        self.usage = UsageResource(self)
        self.pools = Pools(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.webhook_deliveries = WebhookDeliveries(self)

    def close(self) -> None:
        self.transport.http.close()

    def __enter__(self) -> Sandman:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Resource:
    def __init__(self, sm: Sandman) -> None:
        self._sm = sm
        self._t = sm.transport


class Sessions(_Resource):
    """Sessions: create, read, list, pause, resume, delete, and what a backend watches."""

    def create(
        self,
        template: str,
        *,
        provider: str | None = None,
        idle_timeout_seconds: int | None = None,
        max_lifetime_seconds: int | None = None,
        away_timeout_seconds: int | None = None,
        resume_on_return: bool | None = None,
        idle_policy: str | None = None,
        metadata: dict[str, str] | None = None,
        app: AppRequest | dict[str, Any] | None = None,
        checkpoint_on_pause: bool | None = None,
        checkpoint_every_seconds: int | None = None,
        checkpoints_keep: int | None = None,
        on_lost: str | None = None,
        archive_after_seconds: int | None = None,
        delete_after_seconds: int | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> Session:
        """POST /v1/sessions: a new session, or the first one when idempotency_key was seen (24 h).
        A key is generated when none is given, and sent again on each retry."""
        body = _body(
            template=template,
            provider=provider,
            idle_timeout_seconds=idle_timeout_seconds,
            max_lifetime_seconds=max_lifetime_seconds,
            away_timeout_seconds=away_timeout_seconds,
            resume_on_return=resume_on_return,
            idle_policy=idle_policy,
            metadata=metadata,
            app=app,
            checkpoint_on_pause=checkpoint_on_pause,
            checkpoint_every_seconds=checkpoint_every_seconds,
            checkpoints_keep=checkpoints_keep,
            on_lost=on_lost,
            archive_after_seconds=archive_after_seconds,
            delete_after_seconds=delete_after_seconds,
        )
        data = self._t.call(ROUTES["createSession"], body=body, idempotency_key=idempotency_key, timeout=timeout, retry=retry)
        return Session.from_dict(data)

    def get(self, id: str, *, timeout: float | None = None) -> Session:
        return Session.from_dict(self._t.call(ROUTES["getSession"], {"id": id}, timeout=timeout))

    def list_page(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        state: str | list[str] | None = None,
        provider: str | None = None,
        template: str | None = None,
        metadata: dict[str, str] | None = None,
        order: str | None = None,
        timeout: float | None = None,
    ) -> SessionList:
        """GET /v1/sessions: one page, newest first (order="asc": oldest
        first), filtered by state (one or several), provider, template and
        metadata pairs when given. A filtered page may be short, even empty,
        and still have a next_cursor."""
        query: dict[str, Any] = {
            "limit": limit,
            "cursor": cursor,
            "order": order,
            "state": ",".join(state) if isinstance(state, list) else state,
            "provider": provider,
            "template": template,
        }
        for k, v in (metadata or {}).items():
            query[f"metadata[{k}]"] = v
        return SessionList.from_dict(self._t.call(ROUTES["listSessions"], query=query, timeout=timeout))

    def list(
        self,
        *,
        state: str | list[str] | None = None,
        provider: str | None = None,
        template: str | None = None,
        metadata: dict[str, str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        order: str | None = None,
    ) -> Iterator[Session]:
        """Every session that passes the filters (the API applies them), newest
        first (order="asc": oldest first), following next_cursor page by page."""
        while True:
            page = self.list_page(
                limit=limit, cursor=cursor, state=state, provider=provider, template=template, metadata=metadata, order=order
            )
            yield from page.sessions
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def delete(self, id: str, *, purge: bool = False, timeout: float | None = None) -> Session:
        """DELETE: the killed session (again when deleted twice); purge also deletes
        its checkpoints, their snapshots and archives."""
        query = {"purge": "true" if purge else None}
        return Session.from_dict(self._t.call(ROUTES["deleteSession"], {"id": id}, query=query, timeout=timeout))

    def restore(
        self, id: str, *, checkpoint_id: str, idempotency_key: str | None = None, timeout: float | None = None
    ) -> Session:
        """POST …/restore: the session restoring in place from one of its checkpoints
        (same id, link and client tokens); a failed restore leaves it as it was,
        restore_error saying why. An Idempotency-Key is made for the call (or
        idempotency_key) and kept across retries: a repeat answers that restore
        (200, replayed) and starts none."""
        body = _body(checkpoint_id=checkpoint_id)
        data = self._t.call(ROUTES["restoreSession"], {"id": id}, body=body, idempotency_key=idempotency_key, timeout=timeout)
        return Session.from_dict(data)

    def fork(
        self,
        id: str,
        *,
        checkpoint_id: str | None = None,
        metadata: dict[str, str] | None = None,
        idle_timeout_seconds: int | None = None,
        max_lifetime_seconds: int | None = None,
        away_timeout_seconds: int | None = None,
        resume_on_return: bool | None = None,
        checkpoint_on_pause: bool | None = None,
        checkpoint_every_seconds: int | None = None,
        checkpoints_keep: int | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Session:
        """POST …/fork: a new session (provisioning, forked_from) made from a checkpoint
        of this one, or from a fresh one of its current state without checkpoint_id."""
        body = _body(
            checkpoint_id=checkpoint_id,
            metadata=metadata,
            idle_timeout_seconds=idle_timeout_seconds,
            max_lifetime_seconds=max_lifetime_seconds,
            away_timeout_seconds=away_timeout_seconds,
            resume_on_return=resume_on_return,
            checkpoint_on_pause=checkpoint_on_pause,
            checkpoint_every_seconds=checkpoint_every_seconds,
            checkpoints_keep=checkpoints_keep,
        )
        data = self._t.call(ROUTES["forkSession"], {"id": id}, body=body, idempotency_key=idempotency_key, timeout=timeout)
        return Session.from_dict(data)

    def status(self, id: str, *, timeout: float | None = None, retry: RetryPolicy | None = None) -> Status:
        """GET …/status: state, readiness, the lifecycle envelope; reads the table only."""
        return Status.from_dict(self._t.call(ROUTES["getSessionStatus"], {"id": id}, timeout=timeout, retry=retry))

    def activity(self, id: str, *, hold_seconds: int | None = None, timeout: float | None = None) -> None:
        """POST …/activity: a heartbeat; hold_seconds (60..86400) a busy hold. 409 sandbox_paused when paused."""
        self._t.call(ROUTES["sendActivity"], {"id": id}, body=_body(hold_seconds=hold_seconds), timeout=timeout)

    def resume(self, id: str, *, wait_ready: bool = False, timeout: float | None = None) -> ResumeResult:
        """POST …/resume: running again with a fresh preview URL; wait_ready holds the
        answer until the app is ready or failed, at most 25 s."""
        query = {"wait": "ready" if wait_ready else None}
        return ResumeResult.from_dict(self._t.call(ROUTES["resumeSession"], {"id": id}, query=query, body={}, timeout=timeout))

    def pause(self, id: str, *, timeout: float | None = None) -> PauseResult:
        """Pauses now (the sandbox kept for a resume), whether it was running or
        paused: POST /v1/sessions/{id}/pause."""
        return PauseResult.from_dict(self._t.call(ROUTES["pauseSession"], {"id": id}, body={}, timeout=timeout))

    def reconnect(self, id: str, *, timeout: float | None = None) -> ReconnectResult:
        """GET …/reconnect: a live probe of the sandbox."""
        return ReconnectResult.from_dict(self._t.call(ROUTES["reconnectSession"], {"id": id}, timeout=timeout))

    def diagnose(self, id: str, *, timeout: float | None = None) -> Diagnosis:
        """GET …/diagnose: the table's and the provider's views, a verdict, the last events."""
        return Diagnosis.from_dict(self._t.call(ROUTES["diagnoseSession"], {"id": id}, timeout=timeout))

    def events_page(self, id: str, *, limit: int | None = None, cursor: str | None = None, timeout: float | None = None) -> SessionEventList:
        """GET …/events: one page of the session's timeline, newest first."""
        return SessionEventList.from_dict(
            self._t.call(ROUTES["listSessionEvents"], {"id": id}, query={"limit": limit, "cursor": cursor}, timeout=timeout)
        )

    def events(self, id: str, *, limit: int | None = None, cursor: str | None = None) -> Iterator[SessionEvent]:
        """The session's timeline, newest first, following next_cursor page by page:
        every transition with its reason, actor and duration_ms."""
        while True:
            page = self.events_page(id, limit=limit, cursor=cursor)
            yield from page.events
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def open_url(self, id: str, token: str | None = None, *, path: str | None = None, wait: bool = False) -> str:
        """The session's stable link for a browser (GET …/open): a redirect to the
        preview, waking the session first. Pass a client token, since a browser
        holds no API key; path opens a page under the preview."""
        p = (path or "").lstrip("/")
        route = ROUTES["openSessionPath"] if p else ROUTES["openSession"]
        params = {"id": id, "path": p} if p else {"id": id}
        return build_url(self._sm.base_url, route, params, {"token": token, "wait": "ready" if wait else None})

    def wait_until_ready(self, id: str, *, timeout: float = 60.0, interval: float = 0.25, max_interval: float = 2.0) -> Status:
        """Polls the status, with backoff, until the session is ready (running and
        its app answering, or running without an app) and returns that status.
        Raises SandmanError not_ready when the session ends (failed, expired,
        killed) or its app fails, timeout when timeout seconds pass first."""

        def judge(s: Status) -> str | None:
            if is_ready(s):
                return READY
            if s.state in FINAL_STATES or s.readiness == "failed":
                return f"its app failed: {s.readiness_detail}" if s.readiness == "failed" else f"it is {s.state}"
            return None

        return _poll_until(
            self._t, f"session {id}", lambda t, r: self.status(id, timeout=t, retry=r), judge,
            lambda s: f"state {s.state}, readiness {s.readiness}", timeout, interval, max_interval,
        )


def _within(p: RetryPolicy, seconds: float) -> RetryPolicy:
    return RetryPolicy(p.max_retries, p.base_delay, p.max_delay, min(p.deadline, seconds))


#: What a wait's judge answers when the thing waited for is ready.
READY = "ready"

_T = TypeVar("_T")


def _poll_until(
    t: Transport,
    what: str,
    read: Callable[[float, RetryPolicy], _T],
    judge: Callable[[_T], str | None],
    where: Callable[[_T], str],
    timeout: float,
    interval: float,
    max_interval: float,
) -> _T:
    """Polls read with backoff until judge says READY (returns what was read),
    or a sentence why it never will be (raises not_ready), or timeout seconds
    pass (raises timeout, saying where it stood)."""
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.001, deadline - time.monotonic())
        x = read(min(t.timeout, left), _within(t.retry, left))
        verdict = judge(x)
        if verdict == READY:
            return x
        if verdict is not None:
            raise SandmanError(0, "not_ready", f"{what} will not be ready: {verdict}")
        if time.monotonic() + interval >= deadline:
            raise SandmanError(0, "timeout", f"{what} not ready within {timeout} s ({where(x)})")
        time.sleep(interval)
        interval = min(max_interval, interval * 2)


class Checkpoints(_Resource):
    """A session's checkpoints (docs/CHECKPOINTS.md): saved states to restore or fork."""

    def create(
        self,
        session_id: str,
        *,
        label: str | None = None,
        metadata: dict[str, str] | None = None,
        pin: bool | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Checkpoint:
        """POST …/checkpoints: the checkpoint, saving; checkpoint.ready or checkpoint.failed follows."""
        body = _body(label=label, metadata=metadata, pin=pin)
        data = self._t.call(ROUTES["createCheckpoint"], {"id": session_id}, body=body, idempotency_key=idempotency_key, timeout=timeout)
        return Checkpoint.from_dict(data)

    def list_page(self, session_id: str, *, limit: int | None = None, cursor: str | None = None, timeout: float | None = None) -> CheckpointList:
        """GET …/checkpoints: one page, newest first."""
        data = self._t.call(ROUTES["listCheckpoints"], {"id": session_id}, query={"limit": limit, "cursor": cursor}, timeout=timeout)
        return CheckpointList.from_dict(data)

    def list(self, session_id: str, *, limit: int | None = None) -> Iterator[Checkpoint]:
        """Every checkpoint of the session, newest first, following next_cursor."""
        cursor = None
        while True:
            page = self.list_page(session_id, limit=limit, cursor=cursor)
            yield from page.checkpoints
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get(self, session_id: str, checkpoint_id: str, *, timeout: float | None = None) -> Checkpoint:
        params = {"id": session_id, "checkpoint_id": checkpoint_id}
        return Checkpoint.from_dict(self._t.call(ROUTES["getCheckpoint"], params, timeout=timeout))

    def delete(self, session_id: str, checkpoint_id: str, *, timeout: float | None = None) -> None:
        """Deletes the checkpoint and its snapshot or archive (409 while it is saving)."""
        self._t.call(ROUTES["deleteCheckpoint"], {"id": session_id, "checkpoint_id": checkpoint_id}, timeout=timeout)

    def wait_until_ready(
        self, session_id: str, checkpoint_id: str, *, timeout: float = 60.0, interval: float = 0.25, max_interval: float = 2.0
    ) -> Checkpoint:
        """Polls the checkpoint (GET …/checkpoints/{checkpoint_id}), with backoff,
        until it is ready to restore or fork, and returns it. Raises SandmanError
        not_ready as soon as it is failed (its reason says why) or expired,
        timeout when timeout seconds pass first."""

        def judge(c: Checkpoint) -> str | None:
            if c.state == "ready":
                return READY
            if c.state in ("failed", "expired"):
                return f"it is {c.state}" + (f": {c.reason}" if c.reason else "")
            return None

        def read(t: float, r: RetryPolicy) -> Checkpoint:
            params = {"id": session_id, "checkpoint_id": checkpoint_id}
            return Checkpoint.from_dict(self._t.call(ROUTES["getCheckpoint"], params, timeout=t, retry=r))

        return _poll_until(self._t, f"checkpoint {checkpoint_id}", read, judge, lambda c: f"state {c.state}", timeout, interval, max_interval)


class ClientTokens(_Resource):
    """Client tokens: what a browser holds instead of an API key."""

    def create(self, session_id: str, *, ttl_seconds: int | None = None, timeout: float | None = None) -> ClientToken:
        """POST …/client-tokens: token, expires_at, ws_url; ttl_seconds default 900, at most 86400."""
        data = self._t.call(ROUTES["createClientToken"], {"id": session_id}, body=_body(ttl_seconds=ttl_seconds), timeout=timeout)
        return ClientToken.from_dict(data)


class UsageResource(_Resource):
    """Usage: running and paused time, pauses, resumes and estimated cost."""

    def get(
        self,
        *,
        from_: str | None = None,
        to: str | None = None,
        group_by: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        timeout: float | None = None,
    ) -> Usage:
        """GET /v1/usage: one page; days are YYYY-MM-DD (UTC); group_by "day" or "session"."""
        query = {"from": from_, "to": to, "group_by": group_by, "limit": limit, "cursor": cursor}
        return Usage.from_dict(self._t.call(ROUTES["getUsage"], query=query, timeout=timeout))

    def lines(self, *, from_: str | None = None, to: str | None = None, group_by: str | None = None, limit: int | None = None) -> Iterator[UsageLine]:
        """Every usage line of the query, following next_cursor."""
        cursor = None
        while True:
            page = self.get(from_=from_, to=to, group_by=group_by, limit=limit, cursor=cursor)
            yield from page.usage
            if not page.next_cursor:
                return
            cursor = page.next_cursor


class Pools(_Resource):
    """Warm pools of the deployment."""

    def list(self, *, timeout: float | None = None) -> list[Pool]:
        return PoolList.from_dict(self._t.call(ROUTES["listPools"], timeout=timeout)).pools


class WebhookEndpoints(_Resource):
    """The account's webhook endpoints (docs/WEBHOOKS.md)."""

    def create(
        self,
        url: str,
        *,
        event_types: list[str] | None = None,
        description: str | None = None,
        disabled: bool | None = None,
        timeout: float | None = None,
    ) -> WebhookEndpoint:
        """The endpoint with its signing secret (whsec_…), shown once. Retried on 429 only."""
        body = _body(url=url, event_types=event_types, description=description, disabled=disabled)
        return WebhookEndpoint.from_dict(self._t.call(ROUTES["createWebhookEndpoint"], body=body, timeout=timeout))

    def list(self, *, timeout: float | None = None) -> list[WebhookEndpoint]:
        return WebhookEndpointList.from_dict(self._t.call(ROUTES["listWebhookEndpoints"], timeout=timeout)).webhook_endpoints

    def get(self, id: str, *, timeout: float | None = None) -> WebhookEndpoint:
        return WebhookEndpoint.from_dict(self._t.call(ROUTES["getWebhookEndpoint"], {"id": id}, timeout=timeout))

    def update(
        self,
        id: str,
        *,
        url: str | None = None,
        description: str | None = None,
        event_types: list[str] | None = None,
        disabled: bool | None = None,
        timeout: float | None = None,
    ) -> WebhookEndpoint:
        """PATCH: fields left None are unchanged; disabled=False re-enables."""
        body = _body(url=url, description=description, event_types=event_types, disabled=disabled)
        return WebhookEndpoint.from_dict(self._t.call(ROUTES["updateWebhookEndpoint"], {"id": id}, body=body, timeout=timeout))

    def delete(self, id: str, *, timeout: float | None = None) -> None:
        self._t.call(ROUTES["deleteWebhookEndpoint"], {"id": id}, timeout=timeout)

    def rotate_secret(self, id: str, *, timeout: float | None = None) -> WebhookEndpoint:
        """A new secret (shown once); the old one keeps signing for 24 h. Retried on 429 only."""
        return WebhookEndpoint.from_dict(self._t.call(ROUTES["rotateWebhookSecret"], {"id": id}, timeout=timeout))


class WebhookDeliveries(_Resource):
    """An endpoint's delivery log."""

    def list(self, endpoint_id: str, *, limit: int | None = None) -> Iterator[WebhookDelivery]:
        """Every delivery, newest first, following next_cursor."""
        cursor = None
        while True:
            data = self._t.call(ROUTES["listWebhookDeliveries"], {"id": endpoint_id}, query={"limit": limit, "cursor": cursor})
            page = WebhookDeliveryList.from_dict(data)
            yield from page.deliveries
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def retry(self, endpoint_id: str, delivery_id: str, *, timeout: float | None = None) -> WebhookDelivery:
        """202: send the delivery again now, with the same webhook-id."""
        data = self._t.call(ROUTES["retryWebhookDelivery"], {"id": endpoint_id, "delivery_id": delivery_id}, timeout=timeout)
        return WebhookDelivery.from_dict(data)
