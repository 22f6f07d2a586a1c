"""Order pricing for the wholesale web shop.

Pricing policy:
* orders of BULK_THRESHOLD units or more of one product get 5% off that line;
* club members get a further 10% off the whole order;
* totals are rounded to cents.
"""

BULK_THRESHOLD = 10
BULK_DISCOUNT = 0.5
MEMBER_DISCOUNT = 0.10


def line_price(unit_price, quantity):
    """Price of one order line after the bulk discount."""
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    price = unit_price * quantity
    if quantity >= BULK_THRESHOLD:
        price *= 1 - BULK_DISCOUNT
    return price


def order_total(lines, member=False):
    """Total of (unit_price, quantity) lines, with the member discount applied."""
    total = sum(line_price(price, qty) for price, qty in lines)
    if member:
        total *= 1 - MEMBER_DISCOUNT
    return round(total, 2)


def savings(lines, member=False):
    """How much the customer saves compared with list prices."""
    list_total = round(sum(price * qty for price, qty in lines), 2)
    return round(list_total - order_total(lines, member), 2)
