"""Parsing of raw HTTP/1.1 header blocks."""


def parse_header_line(line):
    """'Content-Type: text/html' -> ('content-type', 'text/html')."""
    if ":" not in line:
        raise ValueError(f"malformed header line: {line!r}")
    name, value = line.split(":")
    name = name.strip().lower()
    if not name or " " in name:
        raise ValueError(f"malformed header name: {line!r}")
    return name, value.strip()


def parse_headers(block):
    """Parse a header block (lines separated by CRLF) into a dict.

    Repeated headers are joined with ', ' as RFC 9110 allows; continuation
    lines (starting with whitespace) extend the previous value.
    """
    headers = {}
    last = None
    for line in block.split("\r\n"):
        if not line:
            continue
        if line[0] in " \t" and last:
            headers[last] += " " + line.strip()
            continue
        name, value = parse_header_line(line)
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
        last = name
    return headers


def content_length(headers):
    """The Content-Length as an int, 0 when absent."""
    return int(headers.get("content-length", "0"))
