"""Turn timesheet entries into invoice lines for a consultancy."""
from collections import defaultdict

DEFAULT_RATE = 100.0


def hours_between(start, end):
    """Hours between two 'HH:MM' times on the same day."""
    sh, sm = map(int, start.split(":"))
    eh, em = map(int, end.split(":"))
    minutes = (eh * 60 + em) - (sh * 60 + sm)
    if minutes < 0:
        raise ValueError(f"end {end} is before start {start}")
    return minutes / 60


def invoice_lines(entries, rates):
    """Group entries (project, start, end) per project.

    Returns (project, hours, cost) tuples sorted by project; the cost uses the
    project's hourly rate from `rates`, or DEFAULT_RATE.
    """
    hours_by_project = defaultdict(float)
    for project, start, end in entries:
        hours_by_project[project] += hours_between(start, end)
    lines = []
    for project in sorted(hours_by_project):
        hours = hours_by_project[project]
        rate = rates.get(project, DEFAULT_RATE)
        cost = round(hours, 2)
        lines.append((project, round(hours, 2), cost))
    return lines


def invoice_total(entries, rates):
    return round(sum(cost for _, _, cost in invoice_lines(entries, rates)), 2)
