from grading.results import letter, pass_rate, passed, report


def test_clear_pass_and_fail():
    assert passed(80)
    assert not passed(30)


def test_letters():
    assert [letter(s) for s in (90, 75, 60, 45, 10)] == ["A", "B", "C", "D", "F"]


def test_report():
    scores = {"zoe": 55, "al": 54, "bo": 99}
    assert report(scores) == {"passed": ["bo", "zoe"], "failed": ["al"]}


def test_pass_rate_empty():
    assert pass_rate({}) == 0.0
