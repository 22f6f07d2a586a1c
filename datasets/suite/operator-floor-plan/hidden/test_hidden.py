from floorplan.rooms import Room, area, boxes_needed, total_area


def test_long_narrow_room():
    assert area(Room("corridor", 1.2, 8.0)) == 9.6


def test_wide_room():
    assert area(Room("lounge", 6.0, 4.0)) == 24.0


def test_total_area():
    assert total_area([Room("a", 2.5, 4.0), Room("b", 3.0, 3.5)]) == 20.5


def test_boxes():
    assert boxes_needed([Room("a", 2.0, 5.0)], m2_per_box=2.2) == 5


def test_area_symmetry():
    assert area(Room("x", 2.0, 7.0)) == area(Room("y", 7.0, 2.0))
