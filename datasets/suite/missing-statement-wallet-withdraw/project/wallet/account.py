"""Prepaid wallet accounts. Amounts are integers in cents."""


class InsufficientFunds(Exception):
    pass


class Wallet:
    def __init__(self, owner, balance=0, overdraft=0):
        self.owner = owner
        self.balance = balance
        self.overdraft = overdraft
        self.transactions = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.transactions.append(("deposit", amount))
        return self.balance

    def withdraw(self, amount):
        """Take money out, allowing the balance to go down to -overdraft."""
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance + self.overdraft:
            raise InsufficientFunds(f"{self.owner} cannot withdraw {amount}")
        self.transactions.append(("withdraw", amount))
        return self.balance

    def statement(self):
        """Lines like '+500' / '-120' followed by the balance."""
        lines = [("+" if kind == "deposit" else "-") + str(amount)
                 for kind, amount in self.transactions]
        return lines + [f"= {self.balance}"]
