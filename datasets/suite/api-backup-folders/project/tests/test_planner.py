import pytest

from backup.planner import folders_to_create, group_by_folder, normalize, total_size


def test_normalize_collapses_separators():
    assert normalize("/home//ana/./docs/") == "/home/ana/docs"


def test_normalize_rejects_blank():
    with pytest.raises(ValueError):
        normalize("   ")


def test_group_by_folder():
    paths = ["/srv/www/index.html", "/srv/www/app.js", "/srv/logs/access.log"]
    assert group_by_folder(paths) == {
        "/srv/logs": ["access.log"],
        "/srv/www": ["app.js", "index.html"],
    }


def test_folders_to_create():
    paths = ["/data/photos/2023/a.jpg", "/data/notes.txt"]
    assert folders_to_create(paths, "/mnt/backup") == [
        "/mnt/backup/data",
        "/mnt/backup/data/photos",
        "/mnt/backup/data/photos/2023",
    ]


def test_total_size_ignores_subfolders():
    sizes = {"/a/x": 10, "/a/y": 5, "/a/sub/z": 100, "/b/x": 1}
    assert total_size(sizes, "/a/") == 15
