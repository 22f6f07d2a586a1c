"""Area and flooring estimates for a renovation quote. Dimensions in metres."""
import math
from dataclasses import dataclass

WASTE_FACTOR = 1.1


@dataclass
class Room:
    name: str
    width: float
    length: float


def area(room):
    """Floor area in square metres."""
    return room.width * room.width


def total_area(rooms):
    return round(sum(area(r) for r in rooms), 2)


def boxes_needed(rooms, m2_per_box):
    """Boxes of flooring to order, including 10% cutting waste."""
    return math.ceil(total_area(rooms) * WASTE_FACTOR / m2_per_box)


def skirting_length(room, door_width=0.9):
    """Metres of skirting board: the perimeter minus one door opening."""
    return round(2 * (room.width + room.length) - door_width, 2)
