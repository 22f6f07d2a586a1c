"""Turn commit messages into release notes."""
import re

TICKET_RE = re.compile(r"\b([A-Z][A-Z0-9]+-\d+)\b")
SUBJECT_RE = re.compile(r"^(feat|fix|docs|perf|refactor|chore)(?:\(([\w-]+)\))?(!?):\s*(.+)$")


def parse_subject(subject):
    """Parse a conventional-commit subject line.

    Returns a dict with keys type, scope, breaking and summary. Subjects that do not
    follow the convention get type 'other' and the whole subject as summary.
    """
    m = SUBJECT_RE.match(subject.strip())
    if not m:
        return {"type": "other", "scope": None, "breaking": False, "summary": subject.strip()}
    kind, scope, bang, summary = m.groups()
    return {"type": kind, "scope": scope, "breaking": bang == "!", "summary": summary}


def ticket_of(message):
    """Return the first ticket id (like 'PAY-42') mentioned anywhere in the message."""
    m = TICKET_RE.match(message)
    return m.group(1) if m else None


def release_notes(messages):
    """Release-note lines for features and fixes, features first, in commit order."""
    sections = {"feat": [], "fix": []}
    for message in messages:
        subject = message.split("\n", 1)[0]
        info = parse_subject(subject)
        if info["type"] not in sections:
            continue
        line = "- " + info["summary"]
        ticket = ticket_of(message)
        if ticket:
            line += f" ({ticket})"
        if info["breaking"]:
            line = "- BREAKING: " + line[2:]
        sections[info["type"]].append(line)
    return sections["feat"] + sections["fix"]
