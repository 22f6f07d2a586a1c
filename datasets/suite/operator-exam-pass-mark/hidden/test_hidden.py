from grading.results import letter, pass_rate, passed


def test_exactly_pass_mark():
    assert passed(55)


def test_just_below():
    assert not passed(54.9)


def test_pass_and_letter_agree_at_boundary():
    assert letter(55) == "C" and passed(55)


def test_pass_rate():
    assert pass_rate({"a": 55, "b": 20, "c": 56}) == 66.7


def test_full_marks():
    assert passed(100)
