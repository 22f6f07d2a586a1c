"""Seat maps for a small theatre. Rows are lettered from the stage (A, B, ...),
seats numbered from 1. The map is a list of rows; True marks a sold seat."""
import string


def empty_hall(rows, seats_per_row):
    return [[False] * seats_per_row for _ in range(rows)]


def seat_label(row, seat):
    """0-based (row, seat) -> 'C7'."""
    return f"{string.ascii_uppercase[row]}{seat + 1}"


def free_seats(hall):
    """Labels of all unsold seats, row by row."""
    labels = []
    for row, seats in enumerate(hall):
        for seat, sold in enumerate(seats):
            if not sold:
                labels.append(seat_label(row, row))
    return labels


def best_pair(hall):
    """The first two adjacent free seats, nearest the stage, as labels; or None."""
    for row, seats in enumerate(hall):
        for seat in range(len(seats) - 1):
            if not seats[seat] and not seats[seat + 1]:
                return seat_label(row, seat), seat_label(row, seat + 1)
    return None
