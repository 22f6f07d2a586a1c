"""Parsing of 'host:port' strings found in service configuration files."""

DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "postgres": 5432, "redis": 6379}


def parse_address(text, scheme="http"):
    """Parse 'host', 'host:port' or '[ipv6]:port' into (host, port).

    A missing port is taken from DEFAULT_PORTS for the scheme.
    """
    text = text.strip()
    if text.startswith("["):
        end = text.index("]")
        host, rest = text[1:end], text[end + 1:]
        port_text = rest[1:] if rest.startswith(":") else ""
    elif ":" in text:
        host, port_text = text.rsplit(":", 1)
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"missing host in {text!r}")
    if port_text:
        port = port_text
    else:
        port = DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        raise ValueError(f"port out of range in {text!r}")
    return host, port


def format_address(host, port):
    """Inverse of parse_address (IPv6 hosts are bracketed)."""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}"


def parse_upstreams(value, scheme="http"):
    """Parse a comma-separated upstream list, skipping empty entries."""
    return [parse_address(part, scheme) for part in value.split(",") if part.strip()]
