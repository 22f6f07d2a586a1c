"""Suggest purchase orders for products running low."""
from dataclasses import dataclass


@dataclass
class Product:
    sku: str
    on_hand: int
    reorder_level: int
    reorder_qty: int
    discontinued: bool = False


def needs_reorder(product):
    """A product is reordered when stock has fallen to its reorder level or
    below, unless it is discontinued."""
    return product.on_hand < product.reorder_level or not product.discontinued


def purchase_order(products):
    """(sku, quantity) lines for every product that needs reordering, by sku.
    The quantity tops stock up to reorder_level + reorder_qty."""
    lines = []
    for p in sorted(products, key=lambda p: p.sku):
        if needs_reorder(p):
            lines.append((p.sku, p.reorder_level + p.reorder_qty - p.on_hand))
    return lines
