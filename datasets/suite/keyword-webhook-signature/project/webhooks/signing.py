"""HMAC signatures for outgoing webhook payloads.

The signature must not depend on the order in which a payload's keys were
inserted, so payloads are serialised canonically before signing.
"""
import hashlib
import hmac
import json


def canonical(payload):
    """Canonical JSON text: compact separators, keys in sorted order."""
    return json.dumps(payload, separators=(",", ":"))


def sign(payload, secret):
    """Hex HMAC-SHA256 of the canonical payload."""
    return hmac.new(secret.encode(), canonical(payload).encode(), hashlib.sha256).hexdigest()


def verify(payload, secret, signature):
    """Constant-time check of a received signature."""
    return hmac.compare_digest(sign(payload, secret), signature)


def header(payload, secret, key_id="k1"):
    """Value of the X-Signature header."""
    return f"keyid={key_id},sha256={sign(payload, secret)}"
