class OutOfStock(Exception):
    pass


class Store:
    def __init__(self):
        self.levels = {}

    def add(self, sku, count):
        if count <= 0:
            raise ValueError("count must be positive")
        self.levels[sku] = self.levels.get(sku, 0) + count

    def available(self, sku):
        return self.levels.get(sku, 0)

    def reserve(self, sku, count):
        if self.available(sku) > count:
            self.levels[sku] -= count
            return True
        raise OutOfStock(sku)
