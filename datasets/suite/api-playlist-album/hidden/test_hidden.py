from jukebox.playlist import Playlist


def track(i, seconds=60):
    return {"id": i, "title": f"T{i}", "seconds": seconds}


def test_album_duration():
    p = Playlist("x")
    p.add_album([track(1, 61), track(2, 59)])
    assert p.duration() == 120


def test_empty_album_changes_nothing():
    p = Playlist("x")
    p.add(track(1))
    p.add_album([])
    assert [t["id"] for t in p.tracks] == [1]


def test_album_from_generator():
    p = Playlist("x")
    p.add_album(track(i) for i in range(3))
    assert [t["id"] for t in p.tracks] == [0, 1, 2]


def test_two_albums_in_order():
    p = Playlist("x")
    p.add_album([track(1), track(2)])
    p.add_album([track(3)])
    assert [t["id"] for t in p.tracks] == [1, 2, 3]


def test_album_then_dedupe():
    p = Playlist("x")
    p.add(track(2))
    p.add_album([track(1), track(2), track(3)])
    p.remove_duplicates()
    assert [t["id"] for t in p.tracks] == [2, 1, 3]


def test_add_album_does_not_keep_reference_to_argument():
    album = [track(1)]
    p = Playlist("x")
    p.add_album(album)
    album.append(track(2))
    assert len(p.tracks) == 1


def test_describe_after_album():
    p = Playlist("Jazz")
    p.add_album([track(1, 125), track(2, 60)])
    assert p.describe() == "Jazz: 2 tracks, 3:05"
