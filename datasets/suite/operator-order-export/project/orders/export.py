"""Daily order export for the accounting system."""
import csv
import io

FIELDS = ["id", "customer", "status", "amount"]


def billable(orders):
    """Orders that should be invoiced: everything except cancelled orders."""
    return [o for o in orders if o["status"] == "cancelled"]


def revenue(orders):
    """Sum of the amounts of billable orders, rounded to cents."""
    return round(sum(o["amount"] for o in billable(orders)), 2)


def to_csv(orders):
    """CSV text (with header) of the billable orders, sorted by id."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for order in sorted(billable(orders), key=lambda o: o["id"]):
        writer.writerow(order)
    return out.getvalue()
