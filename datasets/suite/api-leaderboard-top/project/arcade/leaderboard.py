"""High-score table for an arcade cabinet."""
import heapq


class Leaderboard:
    def __init__(self):
        self.best = {}

    def submit(self, player, score):
        """Record a score; only a player's personal best is kept. Returns True on a new best."""
        if score < 0:
            raise ValueError("negative score")
        if score > self.best.get(player, -1):
            self.best[player] = score
            return True
        return False

    def top(self, n=3):
        """The n best (player, score) pairs, best first."""
        return heapq.nsmallest(n, self.best.items(), key=lambda item: item[1])

    def rank(self, player):
        """1-based rank of a player (players with equal scores share a rank)."""
        mine = self.best[player]
        return 1 + sum(1 for score in self.best.values() if score > mine)

    def medals(self):
        """Map 'gold', 'silver', 'bronze' to the top three players."""
        names = [player for player, _ in self.top(3)]
        return dict(zip(["gold", "silver", "bronze"], names))
