"""Read and query /etc/hosts-style files."""


def parse_hosts(text):
    """Return a list of (address, [names]) entries.

    '#' starts a comment; blank and comment-only lines are skipped.
    """
    entries = []
    for raw in text.split("\n"):
        line = raw.split("#", 1)[0]
        if not line:
            continue
        address, *names = line.split()
        if not names:
            raise ValueError(f"no host names for {address}")
        entries.append((address, names))
    return entries


def lookup(text, name):
    """All addresses for a host name, in file order."""
    name = name.lower()
    return [address for address, names in parse_hosts(text)
            if name in (n.lower() for n in names)]


def names_for(text, address):
    """All host names of an address."""
    return [n for a, names in parse_hosts(text) if a == address for n in names]
