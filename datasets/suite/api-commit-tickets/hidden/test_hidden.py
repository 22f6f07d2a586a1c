from changelog.commits import release_notes, ticket_of


def test_ticket_in_body():
    assert ticket_of("feat: export to CSV\n\nCloses OPS-1203") == "OPS-1203"


def test_first_ticket_wins():
    assert ticket_of("fix: merge AB-1 and AB-2 duplicates") == "AB-1"


def test_ticket_with_digits_in_project_key():
    assert ticket_of("perf: faster search [S3-99]") == "S3-99"


def test_ticket_at_start_still_found():
    assert ticket_of("WEB-5: hotfix") == "WEB-5"


def test_lowercase_is_not_a_ticket():
    assert ticket_of("fix: handle utf-8 names") is None


def test_word_glued_to_ticket_is_not_a_ticket():
    assert ticket_of("docs: mention XPAY-1x in notes") is None


def test_release_notes_ticket_from_subject_middle():
    assert release_notes(["feat: dark mode for WEB-12 users"]) == [
        "- dark mode for WEB-12 users (WEB-12)"]
