from floorplan.rooms import Room, area, boxes_needed, skirting_length, total_area


def test_square_room():
    assert area(Room("hall", 3.0, 3.0)) == 9.0


def test_rectangular_room():
    assert area(Room("kitchen", 3.0, 4.5)) == 13.5


def test_skirting():
    assert skirting_length(Room("bed", 3.0, 4.0)) == 13.1


def test_boxes_for_square_rooms():
    assert boxes_needed([Room("a", 2.0, 2.0), Room("b", 3.0, 3.0)], m2_per_box=2.0) == 8
