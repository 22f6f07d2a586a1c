import hashlib
import hmac

from webhooks.signing import canonical, sign, verify


def test_canonical_sorted():
    assert canonical({"b": 1, "a": 2}) == '{"a":2,"b":1}'


def test_canonical_nested_sorted():
    assert canonical({"z": {"y": 1, "x": 2}, "a": None}) == '{"a":null,"z":{"x":2,"y":1}}'


def test_signature_matches_reference():
    expected = hmac.new(b"key", b'{"a":1,"b":2}', hashlib.sha256).hexdigest()
    assert sign({"b": 2, "a": 1}, "key") == expected


def test_reordered_nested_payload_verifies():
    sent = {"data": {"qty": 1, "sku": "X"}, "event": "e"}
    received = {"event": "e", "data": {"sku": "X", "qty": 1}}
    assert verify(received, "k", sign(sent, "k"))


def test_changed_value_rejected():
    assert not verify({"a": 2}, "k", sign({"a": 1}, "k"))
