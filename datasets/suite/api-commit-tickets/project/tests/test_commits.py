from changelog.commits import parse_subject, release_notes, ticket_of


def test_parse_subject_with_scope():
    assert parse_subject("fix(api): handle empty body") == {
        "type": "fix", "scope": "api", "breaking": False, "summary": "handle empty body"}


def test_parse_subject_unconventional():
    assert parse_subject("Update README")["type"] == "other"


def test_ticket_at_start_of_message():
    assert ticket_of("PAY-42 retry failed charges") == "PAY-42"


def test_ticket_inside_message():
    assert ticket_of("fix: retry failed charges (PAY-42)") == "PAY-42"


def test_no_ticket():
    assert ticket_of("chore: bump version") is None


def test_release_notes():
    messages = [
        "fix: round totals half-up\n\nRefs: BILL-7",
        "chore: lint",
        "feat(ui)!: new checkout page",
    ]
    assert release_notes(messages) == [
        "- BREAKING: new checkout page",
        "- round totals half-up (BILL-7)",
    ]
