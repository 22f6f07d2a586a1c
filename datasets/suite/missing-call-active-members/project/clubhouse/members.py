"""Membership queries for a sports club's records.

A member is a dict: {"id": int, "name": str, "email": str, "active": bool,
"suspended": bool (optional), "joined": int (year)}.
"""


def is_in_good_standing(member):
    """Active and not suspended."""
    return member["active"] and not member.get("suspended", False)


def active_members(members):
    """Members in good standing, in the original order."""
    return filter(is_in_good_standing, members)


def mailing_list(members):
    """Comma-separated e-mail addresses of members in good standing."""
    return ", ".join(m["email"] for m in active_members(members))


def veterans(members, since):
    """Names of members in good standing who joined in or before `since`."""
    return [m["name"] for m in active_members(members) if m["joined"] <= since]


def standing_report(members):
    """Counts for the annual report."""
    good = active_members(members)
    return {"total": len(members), "in_good_standing": len(good)}
