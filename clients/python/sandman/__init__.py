"""sandman: Sandman's API for Python backends (on requests).

    from sandman import Sandman, SandmanError, verify_webhook
    sm = Sandman()  # SANDMAN_URL, SANDMAN_API_KEY
"""

from ._transport import RetryPolicy
from ._version import API_VERSION, __version__
from .client import Sandman, is_ready
from .errors import SandmanError
from .models import (
    App,
    AppRequest,
    ClientToken,
    Diagnosis,
    DiagnosisEvent,
    DiagnosisPreview,
    DiagnosisProvider,
    LifecycleEnvelope,
    Model,
    PauseResult,
    Pool,
    PoolApp,
    PoolList,
    PoolUsage,
    ReconnectResult,
    ResumeResult,
    SCHEMAS,
    Session,
    SessionEvent,
    SessionEventList,
    SessionList,
    Status,
    Usage,
    UsageLine,
    UsageTotals,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookEndpoint,
    WebhookEndpointList,
)
from .routes import NOT_IN_SDK, ROUTES, Route
from .webhooks import verify_webhook

__all__ = [
    "API_VERSION",
    "App",
    "AppRequest",
    "ClientToken",
    "Diagnosis",
    "DiagnosisEvent",
    "DiagnosisPreview",
    "DiagnosisProvider",
    "LifecycleEnvelope",
    "Model",
    "NOT_IN_SDK",
    "PauseResult",
    "Pool",
    "PoolApp",
    "PoolList",
    "PoolUsage",
    "ROUTES",
    "ReconnectResult",
    "ResumeResult",
    "RetryPolicy",
    "Route",
    "SCHEMAS",
    "Sandman",
    "SandmanError",
    "Session",
    "SessionEvent",
    "SessionEventList",
    "SessionList",
    "Status",
    "Usage",
    "UsageLine",
    "UsageTotals",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryList",
    "WebhookEndpoint",
    "WebhookEndpointList",
    "__version__",
    "is_ready",
    "verify_webhook",
]
