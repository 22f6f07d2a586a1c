"""Meeting-room bookings. Times are minutes since midnight; a booking
occupies the half-open interval [start, end)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Booking:
    room: str
    start: int
    end: int
    who: str = ""

    def __post_init__(self):
        if self.end <= self.start:
            raise ValueError("a booking must end after it starts")


def clashes(a, b):
    """True if two bookings of the same room overlap in time."""
    return a.room == b.room and a.start < b.start and b.end < a.end


class Calendar:
    def __init__(self):
        self.bookings = []

    def book(self, booking):
        """Add a booking unless it clashes; returns True on success."""
        if any(clashes(booking, other) for other in self.bookings):
            return False
        self.bookings.append(booking)
        return True

    def free_slots(self, room, day_start=480, day_end=1080):
        """Free [start, end) gaps of a room between day_start and day_end."""
        taken = sorted((b.start, b.end) for b in self.bookings if b.room == room)
        slots, cursor = [], day_start
        for start, end in taken:
            if start > cursor:
                slots.append((cursor, start))
            cursor = max(cursor, end)
        if cursor < day_end:
            slots.append((cursor, day_end))
        return slots
