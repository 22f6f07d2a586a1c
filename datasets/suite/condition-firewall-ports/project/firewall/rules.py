"""Parse firewall port rules such as 'tcp/22', 'udp/5000-5010' or 'tcp/80,443'."""

PROTOCOLS = ("tcp", "udp")


def parse_port(text):
    """A single port number; valid ports are 1..65535."""
    port = int(text)
    if port <= 1 or port >= 65535:
        raise ValueError(f"port {port} out of range")
    return port


def parse_ports(spec):
    """'80,443,8000-8002' -> sorted list of distinct ports."""
    ports = set()
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            low, high = (parse_port(p) for p in part.split("-", 1))
            if low > high:
                raise ValueError(f"empty range {part}")
            ports.update(range(low, high + 1))
        else:
            ports.add(parse_port(part))
    return sorted(ports)


def parse_rule(rule):
    """'tcp/22' -> ('tcp', [22])."""
    proto, sep, spec = rule.strip().lower().partition("/")
    if not sep or proto not in PROTOCOLS:
        raise ValueError(f"bad rule {rule!r}")
    return proto, parse_ports(spec)
