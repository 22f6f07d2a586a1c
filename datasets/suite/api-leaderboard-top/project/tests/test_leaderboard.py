from arcade.leaderboard import Leaderboard


def board(**scores):
    lb = Leaderboard()
    for name, score in scores.items():
        lb.submit(name, score)
    return lb


def test_submit_keeps_personal_best():
    lb = Leaderboard()
    assert lb.submit("ann", 50)
    assert not lb.submit("ann", 40)
    assert lb.best == {"ann": 50}


def test_rank():
    lb = board(ann=50, bob=70, cat=50)
    assert lb.rank("bob") == 1
    assert lb.rank("cat") == 2


def test_top_two():
    lb = board(ann=50, bob=70, cat=60, dan=10)
    assert lb.top(2) == [("bob", 70), ("cat", 60)]


def test_medals():
    lb = board(ann=300, bob=100, cat=200, dan=400)
    assert lb.medals() == {"gold": "dan", "silver": "ann", "bronze": "cat"}
