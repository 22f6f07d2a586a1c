from jukebox.playlist import Playlist


def track(i, seconds=200):
    return {"id": i, "title": f"Track {i}", "seconds": seconds}


def test_add_single_tracks():
    p = Playlist("Mix")
    p.add(track(1))
    p.add(track(2, 100))
    assert p.duration() == 300


def test_add_album_queues_every_track():
    p = Playlist("Mix")
    p.add(track(1))
    p.add_album([track(10), track(11), track(12)])
    assert [t["id"] for t in p.tracks] == [1, 10, 11, 12]


def test_remove_duplicates_keeps_first():
    p = Playlist("Mix")
    for i in (3, 1, 3, 2, 1):
        p.add(track(i))
    p.remove_duplicates()
    assert [t["id"] for t in p.tracks] == [3, 1, 2]


def test_describe():
    p = Playlist("Road trip")
    p.add(track(1, 305))
    p.add(track(2, 300))
    assert p.describe() == "Road trip: 2 tracks, 10:05"
