"""One call with the SDK's retries, timeouts and Idempotency-Key."""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import quote, urlencode

import requests

from .errors import SandmanError, error_from_answer
from .routes import Route


@dataclass(frozen=True)
class RetryPolicy:
    """How the SDK retries: on 429, on 503 (not sandbox_expired) and on
    network errors and timeouts (see Route.retry).

    max_retries: retries after the first attempt (0 turns them off);
    base_delay, max_delay: the backoff in seconds, doubled each retry from
    base_delay up to max_delay, jittered over its upper half (a Retry-After
    from the API is honoured as it is, even when longer);
    deadline: seconds a call may take in all, every attempt and wait
    included.
    """

    max_retries: int = 4
    base_delay: float = 0.25
    max_delay: float = 5.0
    deadline: float = 60.0


def backoff(n: int, policy: RetryPolicy, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry n (1-based)."""
    d = min(policy.max_delay, policy.base_delay * 2 ** (n - 1))
    return d / 2 + rand() * (d / 2)


def fill_path(path: str, params: dict[str, str]) -> str:
    """A route's path with its parameters, percent-encoded (path's slashes kept)."""
    out = path
    for name, value in params.items():
        if not value:
            raise ValueError(f"missing path parameter {name}")
        out = out.replace("{" + name + "}", quote(value, safe="/" if name == "path" else ""))
    if "{" in out:
        raise ValueError(f"missing path parameters in {out}")
    return out


def build_url(base: str, route: Route, params: dict[str, str], query: dict[str, Any] | None = None) -> str:
    url = base.rstrip("/") + fill_path(route.path, params)
    q = {}
    for k, v in (query or {}).items():
        if v is None:
            continue
        # A deepObject parameter travels as name[key]=value (GET /v1/sessions's metadata).
        if k.split("[", 1)[0] not in route.query:
            raise ValueError(f"{route.method} {route.path} takes no query parameter {k}")
        q[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return url + ("?" + urlencode(q) if q else "")


def _retryable(route: Route, err: SandmanError) -> bool:
    if err.status == 429:
        return True  # answered before acting: safe on every route
    if route.retry == "unsafe":
        return False
    if err.status == 503:
        return err.error_type != "sandbox_expired"  # gone stays gone
    return err.status == 0 and err.error_type in ("network", "timeout")


@dataclass
class Transport:
    base_url: str
    api_key: str
    timeout: float
    retry: RetryPolicy
    http: requests.Session
    sleep: Callable[[float], None] = time.sleep

    def call(
        self,
        route: Route,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> Any:
        """Sends the call; returns the decoded body (None for 204) or raises SandmanError."""
        policy = retry or self.retry
        per_attempt = self.timeout if timeout is None else timeout
        url = build_url(self.base_url, route, params or {}, query)
        deadline = time.monotonic() + policy.deadline
        headers = {"Authorization": "Bearer " + self.api_key, "Accept": "application/json"}
        if route.retry == "key":
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            attempt += 1
            left = deadline - time.monotonic()
            t = max(0.001, min(per_attempt, left))
            try:
                res = self.http.request(route.method, url, headers=headers, data=data, timeout=t, allow_redirects=False)
                if 200 <= res.status_code < 300:
                    return res.json() if res.content else None
                err = error_from_answer(res.status_code, res.headers, res.text, attempt)
            except requests.Timeout as e:
                err = SandmanError(0, "timeout", f"{route.method} {route.path}: no answer within {t:.3g} s ({e})", attempts=attempt)
            except requests.ConnectionError as e:
                err = SandmanError(0, "network", f"{route.method} {route.path}: no answer ({e})", attempts=attempt)
            if attempt > policy.max_retries or not _retryable(route, err):
                raise err
            wait = err.retry_after if err.retry_after is not None else backoff(attempt, policy)
            if time.monotonic() + wait >= deadline:
                raise err  # the deadline comes first: answer now
            self.sleep(wait)
