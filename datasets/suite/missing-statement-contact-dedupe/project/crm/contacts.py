"""Contact list clean-up for a small CRM import."""
import re

_NON_DIGIT = re.compile(r"\D")


def contact_key(contact):
    """Identity of a contact: its e-mail (case-insensitive), else its phone digits."""
    email = (contact.get("email") or "").strip().lower()
    if email:
        return "email:" + email
    digits = _NON_DIGIT.sub("", contact.get("phone") or "")
    if digits:
        return "phone:" + digits[-9:]
    raise ValueError(f"contact {contact.get('name')!r} has no e-mail or phone")


def dedupe(contacts):
    """Drop later duplicates of a contact, keeping the first one of each key."""
    seen = set()
    unique = []
    for contact in contacts:
        key = contact_key(contact)
        if key in seen:
            continue
        unique.append(contact)
    return unique


def display_name(contact):
    """'Last, First' when both parts are known, else whatever there is."""
    first = (contact.get("first") or "").strip()
    last = (contact.get("last") or "").strip()
    return ", ".join(part for part in (last, first) if part) or "(no name)"
