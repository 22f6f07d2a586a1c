from clubhouse.members import active_members, mailing_list, standing_report, veterans

MEMBERS = [
    {"id": 1, "name": "Ana", "email": "ana@club.org", "active": True, "joined": 2009},
    {"id": 2, "name": "Ben", "email": "ben@club.org", "active": False, "joined": 2011},
    {"id": 3, "name": "Cleo", "email": "cleo@club.org", "active": True, "suspended": True,
     "joined": 2004},
    {"id": 4, "name": "Dev", "email": "dev@club.org", "active": True, "joined": 2020},
]


def test_mailing_list():
    assert mailing_list(MEMBERS) == "ana@club.org, dev@club.org"


def test_veterans():
    assert veterans(MEMBERS, since=2010) == ["Ana"]


def test_active_members():
    assert [m["id"] for m in active_members(MEMBERS)] == [1, 4]


def test_standing_report():
    assert standing_report(MEMBERS) == {"total": 4, "in_good_standing": 2}
