from arcade.leaderboard import Leaderboard


def board(**scores):
    lb = Leaderboard()
    for name, score in scores.items():
        lb.submit(name, score)
    return lb


def test_top_default_three():
    lb = board(a=1, b=2, c=3, d=4, e=5)
    assert lb.top() == [("e", 5), ("d", 4), ("c", 3)]


def test_top_more_than_players():
    assert board(a=5, b=9).top(10) == [("b", 9), ("a", 5)]


def test_top_one():
    assert board(a=5, b=9, c=7).top(1) == [("b", 9)]


def test_top_empty():
    assert Leaderboard().top() == []


def test_top_after_improvement():
    lb = board(a=10, b=20, c=30)
    lb.submit("a", 99)
    assert lb.top(2) == [("a", 99), ("c", 30)]


def test_medals_two_players():
    assert board(x=1, y=2).medals() == {"gold": "y", "silver": "x"}


def test_top_zero():
    assert board(a=1).top(0) == []
