"""Order summary shown on the checkout page."""

TAX_RATE = 0.08
FREE_SHIPPING_FROM = 50.0
FLAT_SHIPPING = 4.95


def subtotal(items):
    """Sum of price * quantity over (name, price, quantity) items."""
    return round(sum(price * qty for _, price, qty in items), 2)


def shipping(items):
    """Flat-rate shipping, free for subtotals of FREE_SHIPPING_FROM or more."""
    if not items or subtotal(items) >= FREE_SHIPPING_FROM:
        return 0.0
    return FLAT_SHIPPING


def summarize(items):
    """All the amounts shown to the customer; total = subtotal + tax + shipping."""
    sub = subtotal(items)
    tax = round(sub * TAX_RATE, 2)
    ship = shipping(items)
    total = round(sub + tax, 2)
    return {"subtotal": sub, "tax": tax, "shipping": ship, "total": total}


def receipt(items):
    """Printable receipt lines."""
    lines = [f"{name} x{qty}: {price * qty:.2f}" for name, price, qty in items]
    amounts = summarize(items)
    lines += [f"{key}: {value:.2f}" for key, value in amounts.items()]
    return lines
