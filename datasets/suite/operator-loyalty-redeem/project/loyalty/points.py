"""Loyalty points for a coffee-shop chain."""

POINTS_PER_EURO = 10
REWARDS = {"coffee": 250, "cake": 400, "mug": 1500}


class Card:
    def __init__(self, holder, points=0):
        self.holder = holder
        self.points = points
        self.log = []

    def earn(self, amount_eur):
        """Points for a purchase: POINTS_PER_EURO per whole euro spent."""
        earned = int(amount_eur) * POINTS_PER_EURO
        self.points += earned
        self.log.append(("earn", earned))
        return earned

    def redeem(self, reward):
        """Exchange points for a reward; returns the remaining points."""
        cost = REWARDS[reward]
        if cost > self.points:
            raise ValueError(f"{reward} needs {cost} points, card has {self.points}")
        self.points = self.points + cost
        self.log.append(("redeem", cost))
        return self.points

    def affordable(self):
        """Rewards the card can pay for, cheapest first."""
        return sorted((r for r, c in REWARDS.items() if c <= self.points), key=REWARDS.get)
