"""verify_webhook: Standard Webhooks deliveries, on the standard library."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Sequence

from .errors import SandmanError

#: How far a delivery's timestamp may be from now, in seconds (the spec's 5 minutes).
TOLERANCE = 300


def _refuse(why: str) -> SandmanError:
    return SandmanError(0, "invalid_signature", "webhook delivery refused: " + why)


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    raise _refuse(f"no {name} header")


def verify_webhook(
    secret: str | Sequence[str],
    body: bytes | str,
    headers: Mapping[str, str],
    *,
    tolerance: int = TOLERANCE,
    now: float | None = None,
) -> dict[str, Any]:
    """Verifies a delivery from Sandman and returns its body, parsed.

    Standard Webhooks v1 (docs/WEBHOOKS.md "What a delivery looks like"):
    webhook-signature holds one or more space-separated ``v1,<base64>``, each
    the HMAC-SHA256, keyed with the base64-decoded part of the secret after
    ``whsec_``, of ``<webhook-id>.<webhook-timestamp>.<body>``. body is the
    raw request body exactly as received; secret the endpoint's ``whsec_…``
    secret, or several while rotating. A timestamp more than ``tolerance``
    seconds away is refused. Raises SandmanError invalid_signature.
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    try:
        at = int(ts)
    except ValueError:
        raise _refuse("webhook-timestamp is not Unix seconds") from None
    current = time.time() if now is None else now
    if abs(current - at) > tolerance:
        raise _refuse(f"timestamp {at} is more than {tolerance} s from now")
    signed = msg_id.encode() + b"." + ts.encode() + b"." + raw
    given = [s.split(",", 1)[1] for s in sigs.split() if s.startswith("v1,")]
    for s in [secret] if isinstance(secret, str) else secret:
        try:
            key = base64.b64decode(s.removeprefix("whsec_"), validate=True)
        except binascii.Error:
            raise _refuse("the secret is not whsec_ and base64") from None
        want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        if any(hmac.compare_digest(want, g) for g in given):
            try:
                return json.loads(raw)
            except ValueError:
                raise _refuse("the body is not JSON") from None
    raise _refuse("no signature matches")
