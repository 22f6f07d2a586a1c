"""Import expense reports exported from a banking app as CSV text.

The export always starts with the header line 'date,category,amount,note'.
"""
import csv
import io
from collections import defaultdict


def read_rows(text):
    """Parse the CSV text into dicts with a float amount."""
    rows = list(csv.reader(io.StringIO(text)))
    expenses = []
    for row in rows:
        if not row:
            continue
        date, category, amount, note = row
        expenses.append({"date": date, "category": category.strip().lower(),
                         "amount": float(amount), "note": note})
    return expenses


def totals_by_category(text):
    """Category -> total amount, rounded to cents."""
    totals = defaultdict(float)
    for expense in read_rows(text):
        totals[expense["category"]] += expense["amount"]
    return {category: round(total, 2) for category, total in sorted(totals.items())}


def largest(text, n=3):
    """The n largest expenses as (amount, note), largest first."""
    rows = read_rows(text)
    return sorted(((e["amount"], e["note"]) for e in rows), reverse=True)[:n]


def over_budget(totals, budgets):
    """(category, overspend) for categories whose total exceeds their budget,
    largest overspend first. Categories without a budget are ignored."""
    over = [(round(totals[category] - limit, 2), category)
            for category, limit in budgets.items() if totals.get(category, 0) > limit]
    return [(category, amount) for amount, category in sorted(over, reverse=True)]
