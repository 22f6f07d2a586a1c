"""Delivery fees for an online grocery store."""

FREE_FROM = 60.0
BASE_FEE = 5.0
EXPRESS_SURCHARGE = 7.5


def basket_value(basket):
    """Sum of price * quantity of a {name: (price, quantity)} basket."""
    return round(sum(price * qty for price, qty in basket.values()), 2)


def delivery_fee(basket, member=False, express=False):
    """Standard delivery is free for members and for baskets of FREE_FROM or
    more; express delivery always adds a surcharge."""
    fee = BASE_FEE
    if basket_value(basket) > FREE_FROM and member:
        fee = 0.0
    if express:
        fee += EXPRESS_SURCHARGE
    return fee


def checkout_total(basket, member=False, express=False):
    return round(basket_value(basket) + delivery_fee(basket, member, express), 2)
