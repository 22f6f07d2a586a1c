import pytest

from wallet.account import InsufficientFunds, Wallet


def test_deposit():
    w = Wallet("ann")
    assert w.deposit(500) == 500


def test_withdraw_reduces_balance():
    w = Wallet("ann", balance=1000)
    assert w.withdraw(300) == 700


def test_withdraw_too_much():
    with pytest.raises(InsufficientFunds):
        Wallet("bob", balance=100).withdraw(101)


def test_invalid_amount():
    with pytest.raises(ValueError):
        Wallet("bob").withdraw(0)


def test_statement_lists_transactions():
    w = Wallet("cy")
    w.deposit(500)
    assert w.statement() == ["+500", "= 500"]
