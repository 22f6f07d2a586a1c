"""Newsletter subscriber list maintenance."""
from collections import Counter


def normalize_email(raw):
    """Canonical form of an e-mail address (addresses are case-insensitive here).

    Raises ValueError for strings that are clearly not addresses.
    """
    email = raw.strip()
    local, sep, domain = email.partition("@")
    if not sep or not local or "." not in domain or " " in email:
        raise ValueError(f"not an e-mail address: {raw!r}")
    return email


def merge_lists(*lists):
    """Merge subscriber lists, keeping the first spelling order and dropping duplicates
    and malformed entries. Returns (addresses, rejected)."""
    seen = set()
    merged, rejected = [], []
    for entries in lists:
        for raw in entries:
            try:
                email = normalize_email(raw)
            except ValueError:
                rejected.append(raw)
                continue
            if email not in seen:
                seen.add(email)
                merged.append(email)
    return merged, rejected


def domain_counts(addresses):
    """Number of subscribers per domain, most common first."""
    counts = Counter(normalize_email(a).split("@")[1] for a in addresses)
    return counts.most_common()
