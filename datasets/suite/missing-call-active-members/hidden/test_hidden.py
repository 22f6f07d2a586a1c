from clubhouse.members import active_members, standing_report

PEOPLE = [
    {"id": 1, "name": "A", "email": "a@x", "active": True, "joined": 2000},
    {"id": 2, "name": "B", "email": "b@x", "active": True, "suspended": False, "joined": 2001},
    {"id": 3, "name": "C", "email": "c@x", "active": False, "suspended": True, "joined": 2002},
]


def test_result_is_a_list():
    assert active_members(PEOPLE) == PEOPLE[:2]


def test_result_can_be_iterated_twice():
    good = active_members(PEOPLE)
    assert [m["id"] for m in good] == [1, 2]
    assert [m["name"] for m in good] == ["A", "B"]


def test_result_supports_len_and_index():
    good = active_members(PEOPLE)
    assert len(good) == 2 and good[-1]["id"] == 2


def test_empty():
    assert active_members([]) == []
    assert standing_report([]) == {"total": 0, "in_good_standing": 0}


def test_report_nobody_in_good_standing():
    assert standing_report(PEOPLE[2:]) == {"total": 1, "in_good_standing": 0}


def test_report_everybody():
    assert standing_report(PEOPLE[:2]) == {"total": 2, "in_good_standing": 2}
