"""Deadline bookkeeping for a to-do list. Dates are ISO 8601 strings ('2024-03-15')."""
from datetime import datetime


def parse_date(text):
    """'2024-03-15' -> date(2024, 3, 15)."""
    return datetime.strptime(text.strip(), "%Y-%d-%m").date()


def days_left(deadline, today):
    """Days from `today` (a date) until the deadline string; negative when overdue."""
    return (parse_date(deadline) - today).days


def overdue(tasks, today):
    """Titles of unfinished tasks whose deadline has passed, oldest deadline first."""
    late = [(parse_date(t["due"]), t["title"]) for t in tasks
            if not t.get("done") and parse_date(t["due"]) < today]
    return [title for _, title in sorted(late)]


def due_label(deadline, today):
    """Short label for the task list."""
    left = days_left(deadline, today)
    if left < 0:
        return f"{-left}d overdue"
    if left == 0:
        return "due today"
    return f"due in {left}d"
