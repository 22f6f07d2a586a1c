"""Invoice arithmetic. Amounts are floats in the currency's main unit, kept to cents."""

VAT_RATES = {"standard": 0.21, "reduced": 0.09, "zero": 0.0}


def line_total(quantity, unit_price, discount=0.0):
    """Net price of one invoice line, to the cent."""
    if quantity < 0 or not 0.0 <= discount < 1.0:
        raise ValueError("invalid quantity or discount")
    return quantity * unit_price * (1.0 - discount)


def invoice_totals(lines):
    """Compute net, VAT and gross totals for lines of
    (quantity, unit_price, discount, vat_class)."""
    net = 0.0
    vat = 0.0
    for quantity, unit_price, discount, vat_class in lines:
        amount = line_total(quantity, unit_price, discount)
        net += amount
        vat += round(amount * VAT_RATES[vat_class], 2)
    net, vat = round(net, 2), round(vat, 2)
    return {"net": net, "vat": vat, "gross": round(net + vat, 2)}


def format_amount(amount, symbol="EUR"):
    """'1234.5' -> 'EUR 1,234.50'."""
    return f"{symbol} {amount:,.2f}"
