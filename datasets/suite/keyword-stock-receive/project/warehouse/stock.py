"""Stock levels per SKU for a small warehouse."""


class Stock:
    def __init__(self, levels=None):
        self.levels = dict(levels or {})
        self.history = []

    def receive(self, sku, quantity):
        """Book incoming goods; new SKUs start from zero. Returns the new level."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        level = self.levels.get(sku) + quantity
        self.levels[sku] = level
        self.history.append(("in", sku, quantity))
        return level

    def ship(self, sku, quantity):
        """Book outgoing goods; refuses to ship more than is in stock."""
        available = self.levels.get(sku, 0)
        if quantity > available:
            raise ValueError(f"only {available} of {sku} in stock")
        self.levels[sku] = available - quantity
        self.history.append(("out", sku, quantity))
        return self.levels[sku]

    def low_stock(self, threshold):
        """SKUs at or below the threshold, sorted."""
        return sorted(sku for sku, level in self.levels.items() if level <= threshold)
