import pytest

from wallet.account import InsufficientFunds, Wallet


def test_overdraft_allowed():
    w = Wallet("a", balance=100, overdraft=50)
    assert w.withdraw(150) == -50


def test_overdraft_exhausted():
    w = Wallet("a", balance=100, overdraft=50)
    w.withdraw(150)
    with pytest.raises(InsufficientFunds):
        w.withdraw(1)


def test_two_withdrawals():
    w = Wallet("a", balance=100)
    w.withdraw(30)
    w.withdraw(30)
    assert w.balance == 40


def test_statement_after_withdraw():
    w = Wallet("a")
    w.deposit(500)
    w.withdraw(120)
    assert w.statement() == ["+500", "-120", "= 380"]


def test_failed_withdrawal_changes_nothing():
    w = Wallet("a", balance=10)
    with pytest.raises(InsufficientFunds):
        w.withdraw(20)
    assert w.balance == 10 and w.transactions == []


def test_withdraw_everything():
    w = Wallet("a", balance=75)
    assert w.withdraw(75) == 0
