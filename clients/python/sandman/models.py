"""The API's bodies as dataclasses, written once from docs/openapi.json.

Field names are the JSON's (snake_case); a JSON name that is a Python
keyword gets a trailing underscore (``from_``). Times are RFC 3339 strings,
as the API sends them. Fields the API adds later are ignored until the
models have them: the drift test (tests/test_drift.py) fails while a field of
the document is missing here. ``SCHEMAS`` maps each schema of the document
to its model.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

T = TypeVar("T", bound="Model")


def _alias(json_name: str, default: Any = None) -> Any:
    return field(default=default, metadata={"json": json_name})


class Model:
    """A body of the API: from_dict reads the JSON, to_dict writes it back."""

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            name = f.metadata.get("json", f.name)
            kwargs[f.name] = _convert(hints[f.name], data.get(name)) if name in data else None
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out[f.metadata.get("json", f.name)] = v.to_dict() if isinstance(v, Model) else v
        return out


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], value) if len(args) == 1 else value
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_dict(value)
    return value


def model_of(cls: type) -> type | None:
    """The Model class a field type holds (through Optional and list), or None."""
    origin = typing.get_origin(cls)
    if origin in (Union, types.UnionType, list):
        for a in typing.get_args(cls):
            m = model_of(a)
            if m is not None:
                return m
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Model) else None


# Enumerations are strings: SessionState ("provisioning", "running",
# "pausing", "paused", "resuming", "restoring", "archived", "deleted",
# "expired", "killed", "failed"), Readiness ("starting", "ready", "failed" or None),
# CheckpointState ("saving", "ready", "failed", "expired"),
# WebhookEventType ("session.paused", "checkpoint.ready", …).
SessionState = str
Readiness = str
CheckpointState = str
WebhookEventType = str


@dataclass(kw_only=True)
class App(Model):
    """The app the sandbox serves, as resolved (docs/READINESS.md "The app spec")."""

    port: int
    start_command: str
    cwd: str
    env: dict[str, str]
    ready_path: str
    ready_timeout_seconds: int


@dataclass(kw_only=True)
class PoolApp(Model):
    """The app a pool's spares serve, as GET /v1/pools shows it: App with env
    reduced to its variables' names (sorted); no value is shown."""

    port: int
    start_command: str
    cwd: str
    env_names: list[str]
    ready_path: str
    ready_timeout_seconds: int


@dataclass(kw_only=True)
class AppRequest(Model):
    """The app to start in a new session: port and start_command required."""

    port: int
    start_command: str
    cwd: str | None = None
    env: dict[str, str] | None = None
    ready_path: str | None = None
    ready_timeout_seconds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if v is not None}


@dataclass(kw_only=True)
class Session(Model):
    id: str
    account_id: str
    provider: str
    template: str
    state: SessionState
    reason: str
    sandbox_id: str | None
    preview_url: str | None
    metadata: dict[str, str]
    idle_timeout_seconds: int
    max_lifetime_seconds: int
    version: int
    created_at: str | None
    updated_at: str | None
    last_activity_at: str | None
    idle_deadline: str | None
    #: When it is due to pause (None unless running).
    pause_deadline: str | None
    #: Deprecated: pause_deadline under its former name, the same value.
    hibernate_after: str | None
    running_since: str | None
    paused_at: str | None
    sandbox_expires_at: str | None
    readiness: Readiness | None
    readiness_detail: str | None
    ready_at: str | None
    app: App | None
    away_timeout_seconds: int | None = None
    away_deadline: str | None = None
    resume_on_return: bool | None = None
    from_pool: bool | None = None
    #: "fixed" or "learned" (docs/COST.md "The learned idle policy").
    idle_policy: str | None = None
    #: What set pause_deadline: fixed, thin, missed, learned, predicted, cap, pre_resumed, hold, away, lifetime.
    pause_deadline_why: str | None = None
    #: When a paused learned session is resumed before its user's predicted return.
    pre_resume_at: str | None = None
    #: The session and checkpoint a fork was made from (None: no fork).
    forked_from: ForkOrigin | None = None
    checkpoint_on_pause: bool | None = None
    checkpoint_every_seconds: int | None = None
    checkpoints_keep: int | None = None
    #: The last restore's checkpoint, and why it (or a fork) failed.
    restore_checkpoint_id: str | None = None
    restore_error: str | None = None
    #: What a resume that finds the sandbox lost does: "restore", "recreate" or "expire".
    on_lost: str | None = None
    #: The recovery in progress while restoring for reason lost (None otherwise).
    recovery: Recovery | None = None
    #: The retention tiers: seconds after its pause the session is archived
    #: and deleted (0: never), and why the last archive could not happen.
    archive_after_seconds: int | None = None
    delete_after_seconds: int | None = None
    tier_error: str | None = None


@dataclass(kw_only=True)
class Recovery(Model):
    """A lost session's recovery (docs/RELIABILITY.md "Recovery"): lost is gone,
    foreign or partial; the checkpoint restored and when it was taken (None for
    on_lost recreate)."""

    lost: str
    checkpoint_id: str | None
    checkpoint_created_at: str | None


@dataclass(kw_only=True)
class ForkOrigin(Model):
    """What a fork was made from: the source session and its checkpoint."""

    session_id: str
    checkpoint_id: str


@dataclass(kw_only=True)
class Checkpoint(Model):
    """A saved state of a session's sandbox (docs/CHECKPOINTS.md): state saving,
    ready, failed or expired; kind snapshot or archive; trigger api, pause or
    schedule."""

    id: str
    session_id: str
    created_at: str | None
    label: str
    metadata: dict[str, str]
    kind: str
    keeps: str
    size_bytes: int
    state: CheckpointState
    reason: str | None
    expires_at: str | None
    pinned: bool
    trigger: str


@dataclass(kw_only=True)
class CheckpointList(Model):
    checkpoints: list[Checkpoint]
    next_cursor: str | None


@dataclass(kw_only=True)
class SessionList(Model):
    sessions: list[Session]
    next_cursor: str | None


@dataclass(kw_only=True)
class LifecycleEnvelope(Model):
    server_time: str
    state: SessionState
    last_activity_at: str | None
    #: When it is due to pause (None unless running).
    pause_deadline: str | None
    #: Deprecated: pause_deadline under its former name, the same value.
    hibernate_after: str | None
    sandbox_expires_at: str | None
    #: What set pause_deadline (see Session.pause_deadline_why).
    pause_deadline_why: str | None = None
    #: When a paused learned session is resumed before its user's predicted return.
    pre_resume_at: str | None = None


@dataclass(kw_only=True)
class Status(Model):
    session_id: str
    state: SessionState
    sandbox_paused: bool
    has_snapshot: bool
    preview_url: str | None
    lifecycle: LifecycleEnvelope
    readiness: Readiness | None
    readiness_detail: str | None
    ready_at: str | None
    #: The recovery in progress while restoring for reason lost (None otherwise).
    recovery: Recovery | None = None


@dataclass(kw_only=True)
class ResumeResult(Model):
    preview_url: str | None
    session: Session


@dataclass(kw_only=True)
class PauseResult(Model):
    """What pause answers."""

    paused: bool
    session: Session


@dataclass(kw_only=True)
class ReconnectResult(Model):
    status: str
    session_id: str
    state: SessionState
    expires_at: str | None
    preview_url: str | None
    lifecycle: LifecycleEnvelope
    readiness: Readiness | None
    readiness_detail: str | None
    ready_at: str | None


@dataclass(kw_only=True)
class DiagnosisProvider(Model):
    checked: bool
    state: str | None
    error: str | None


@dataclass(kw_only=True)
class DiagnosisPreview(Model):
    checked: bool
    answered: bool
    status: int | None
    error: str | None


@dataclass(kw_only=True)
class DiagnosisEvent(Model):
    event_id: str
    time: str
    from_: str = _alias("from")
    to: str
    reason: str
    version: int


@dataclass(kw_only=True)
class Diagnosis(Model):
    session: Session
    lease_expires_at: str | None
    lease_expired: bool
    provider: DiagnosisProvider
    preview: DiagnosisPreview
    agree: bool
    verdict: str
    events: list[DiagnosisEvent]


@dataclass(kw_only=True)
class SessionEvent(Model):
    """One entry of a session's timeline (GET …/events): a transition, or a
    readiness change (from_ and to both running, readiness set)."""

    event_id: str
    time: str
    from_: str = _alias("from")
    to: str
    reason: str
    actor: str | None
    version: int
    duration_ms: int | None
    readiness: str | None
    readiness_detail: str | None


@dataclass(kw_only=True)
class SessionEventList(Model):
    events: list[SessionEvent]
    next_cursor: str | None


@dataclass(kw_only=True)
class ClientToken(Model):
    token: str
    expires_at: str
    ws_url: str | None


@dataclass(kw_only=True)
class StoredGBHours(Model):
    paused: float
    archived: float
    checkpoints: float


@dataclass(kw_only=True)
class UsageTotals(Model):
    running_seconds: float
    paused_seconds: float
    pauses: int
    resumes: int
    estimated_cost_usd: float
    stored_gb_hours: StoredGBHours


@dataclass(kw_only=True)
class UsageLine(Model):
    day: str
    running_seconds: float
    paused_seconds: float
    pauses: int
    resumes: int
    estimated_cost_usd: float
    stored_gb_hours: StoredGBHours
    session_id: str | None = None
    provider: str | None = None


@dataclass(kw_only=True)
class PoolUsage(Model):
    running_seconds: float
    paused_seconds: float
    estimated_cost_usd: float


@dataclass(kw_only=True)
class Usage(Model):
    from_: str = _alias("from")
    to: str
    group_by: str
    currency: str
    usage: list[UsageLine]
    total: UsageTotals
    next_cursor: str | None
    pools: PoolUsage | None = None


@dataclass(kw_only=True)
class Pool(Model):
    id: str
    provider: str
    template: str
    app: PoolApp | None
    size: int
    tier: str
    max_age_seconds: int
    ready: int
    making: int
    failed: int
    claims: int
    hits: int
    misses: int
    lost: int
    hit_rate: float
    consecutive_failures: int
    last_error: str | None
    last_error_at: str | None
    backoff_until: str | None
    usage: PoolUsage


@dataclass(kw_only=True)
class PoolList(Model):
    pools: list[Pool]


@dataclass(kw_only=True)
class WebhookEndpoint(Model):
    id: str
    url: str
    description: str
    event_types: list[WebhookEventType]
    disabled: bool
    disabled_reason: str | None
    failing_since: str | None
    previous_secret_expires_at: str | None
    created_at: str
    updated_at: str
    #: The signing secret (whsec_…), only in the answers of create and rotate_secret.
    secret: str | None = None


@dataclass(kw_only=True)
class WebhookEndpointList(Model):
    webhook_endpoints: list[WebhookEndpoint]


@dataclass(kw_only=True)
class WebhookAttempt(Model):
    at: str
    status_code: int | None
    latency_ms: int
    error: str | None
    response_body: str


@dataclass(kw_only=True)
class WebhookDelivery(Model):
    id: str
    endpoint_id: str
    event_id: str
    event_type: WebhookEventType
    status: str
    reason: str | None
    attempts: list[WebhookAttempt]
    next_attempt_at: str | None
    created_at: str
    expires_at: str


@dataclass(kw_only=True)
class WebhookDeliveryList(Model):
    deliveries: list[WebhookDelivery]
    next_cursor: str | None


#: Each schema of docs/openapi.json the SDK reads or writes, and its model.
#: Request bodies are keyword arguments of the methods named in ROUTES
#: (CreateSessionRequest: sessions.create; CreateCheckpointRequest:
#: checkpoints.create; RestoreRequest: sessions.restore; ForkRequest:
#: sessions.fork); the error envelope is
#: SandmanError.
SCHEMAS: dict[str, type[Model]] = {
    "App": App,
    "AppRequest": AppRequest,
    "Session": Session,
    "SessionList": SessionList,
    "ForkOrigin": ForkOrigin,
    "Recovery": Recovery,
    "Checkpoint": Checkpoint,
    "CheckpointList": CheckpointList,
    "LifecycleEnvelope": LifecycleEnvelope,
    "Status": Status,
    "ResumeResult": ResumeResult,
    "PauseResult": PauseResult,
    "ReconnectResult": ReconnectResult,
    "Diagnosis": Diagnosis,
    "SessionEvent": SessionEvent,
    "SessionEventList": SessionEventList,
    "ClientToken": ClientToken,
    "StoredGBHours": StoredGBHours,
    "UsageTotals": UsageTotals,
    "UsageLine": UsageLine,
    "PoolUsage": PoolUsage,
    "Usage": Usage,
    "Pool": Pool,
    "PoolApp": PoolApp,
    "PoolList": PoolList,
    "WebhookEndpoint": WebhookEndpoint,
    "WebhookEndpointList": WebhookEndpointList,
    "WebhookAttempt": WebhookAttempt,
    "WebhookDelivery": WebhookDelivery,
    "WebhookDeliveryList": WebhookDeliveryList,
}
