"""Cart totals, discounts and shipping."""
from dataclasses import dataclass, field

FREE_SHIPPING_THRESHOLD = 50.0
SHIPPING_FEE = 4.99


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 1

    def subtotal(self):
        return self.price * self.quantity


@dataclass
class Cart:
    items: list = field(default_factory=list)

    def add(self, name, price, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        for item in self.items:
            if item.name == name:
                item.quantity += quantity
                return item
        item = Item(name, price, quantity)
        self.items.append(item)
        return item

    def subtotal(self):
        return round(sum(item.subtotal() for item in self.items), 2)

    def shipping(self):
        if not self.items:
            return 0.0
        if self.subtotal() > FREE_SHIPPING_THRESHOLD:
            return 0.0
        return SHIPPING_FEE

    def total(self):
        return round(self.subtotal() + self.shipping(), 2)


def cheapest(items, n):
    """The n cheapest items, cheapest first."""
    return sorted(items, key=lambda item: item.price)[:n]
