from webhooks.signing import canonical, header, sign, verify


def test_canonical_is_compact():
    assert canonical({"a": [1, 2]}) == '{"a":[1,2]}'


def test_verify_roundtrip():
    payload = {"event": "order.paid", "id": 17}
    assert verify(payload, "s3cret", sign(payload, "s3cret"))


def test_wrong_secret_fails():
    payload = {"event": "order.paid"}
    assert not verify(payload, "other", sign(payload, "s3cret"))


def test_key_order_does_not_matter():
    first = {"event": "order.paid", "id": 17, "amount": 12.5}
    second = {"amount": 12.5, "id": 17, "event": "order.paid"}
    assert sign(first, "k") == sign(second, "k")


def test_header_format():
    assert header({}, "k").startswith("keyid=k1,sha256=")
