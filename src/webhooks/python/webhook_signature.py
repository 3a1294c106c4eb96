"""Verifies the Service-Signature header of the messaging service's webhook
deliveries (spec §Webhook signature 2-5). Standard library only: copy this
file into a receiver.

The header has the form ``t=<unix seconds>,v1=<hex>``. ``v1`` is the
lowercase hex HMAC-SHA256, keyed with the endpoint's signing secret
(``whsec_…``), of ``<t>.<raw body>``. A receiver refuses a delivery whose ``t``
is not a finite number or is more than 300 seconds from its clock either way,
and compares signatures in constant time after checking equal length. Several
``v1`` values may be present (any may match); unknown elements are ignored.

It behaves as the Node verifier (src/webhooks/signature.js) and the Go one
(src/webhooks/go); all three are checked against
test/webhook-signature-vectors.json.

Example (any framework; pass the body bytes as received, before parsing)::

    from webhook_signature import verify_webhook_signature, WebhookSignatureError

    try:
        verify_webhook_signature(request.body, request.headers.get("Service-Signature"), SIGNING_SECRET)
    except WebhookSignatureError as err:
        return 400, err.reason
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import time
from typing import Optional, Union

#: Largest accepted difference between ``t`` and the receiver's clock, in seconds (spec §Limits).
DEFAULT_TOLERANCE_SECONDS = 300

#: Reasons a delivery is refused, as the Node and Go verifiers name them.
REASONS = (
    "missing_header",
    "malformed_header",
    "missing_timestamp",
    "timestamp_not_finite",
    "timestamp_out_of_tolerance",
    "missing_signature",
    "signature_mismatch",
)

_NUMERIC = re.compile(r"-?[0-9]+(\.[0-9]+)?")


class WebhookSignatureError(Exception):
    """Raised for a refused delivery; ``reason`` is one of REASONS."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


def verify_webhook_signature(
    raw_body: Union[bytes, str],
    header: Optional[str],
    secret: str,
    *,
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> bool:
    """Returns True when the delivery is authentic, else raises WebhookSignatureError.

    :param raw_body: the exact request body (bytes; a str is encoded as UTF-8)
    :param header: the Service-Signature header value (None when absent)
    :param secret: the endpoint's signing secret
    :param tolerance_seconds: largest accepted ``|now - t|``, default 300
    :param now: the receiver's clock in unix seconds, default ``time.time()``
    """
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    now_seconds = math.floor(time.time() if now is None else now)
    if header is None or header.strip() == "":
        raise WebhookSignatureError("missing_header", "no Service-Signature header")
    timestamp: Optional[str] = None
    signatures: list[str] = []
    for part in header.split(","):
        eq = part.find("=")
        if eq <= 0:
            raise WebhookSignatureError("malformed_header", f"malformed Service-Signature element {part!r}")
        key, value = part[:eq].strip(), part[eq + 1 :].strip()
        if key == "t":
            timestamp = value
        elif key == "v1":
            signatures.append(value)
    if timestamp is None:
        raise WebhookSignatureError("missing_timestamp", "Service-Signature has no t")
    t = float(timestamp) if _NUMERIC.fullmatch(timestamp) else math.nan
    if not math.isfinite(t):
        raise WebhookSignatureError("timestamp_not_finite", f"Service-Signature t is not a finite number: {timestamp!r}")
    if abs(now_seconds - t) > tolerance_seconds:
        raise WebhookSignatureError("timestamp_out_of_tolerance", f"Service-Signature t is more than {tolerance_seconds} s from now")
    if not signatures:
        raise WebhookSignatureError("missing_signature", "Service-Signature has no v1")
    expected = hmac.new(secret.encode("utf-8"), timestamp.encode("utf-8") + b"." + body, hashlib.sha256).hexdigest().encode("ascii")
    for candidate in signatures:
        given = candidate.encode("utf-8")
        if len(given) == len(expected) and hmac.compare_digest(given, expected):
            return True
    raise WebhookSignatureError("signature_mismatch", "no v1 signature matches the payload and secret")
