from backup.planner import folders_to_create, group_by_folder


def test_single_file_in_folder():
    assert group_by_folder(["/etc/hosts"]) == {"/etc": ["hosts"]}


def test_files_at_root():
    assert group_by_folder(["/vmlinuz", "/initrd.img"]) == {"/": ["initrd.img", "vmlinuz"]}


def test_relative_paths():
    assert group_by_folder(["src/main.py", "src/util.py", "README"]) == {
        "": ["README"],
        "src": ["main.py", "util.py"],
    }


def test_same_name_in_different_folders():
    assert group_by_folder(["/a/index.html", "/b/index.html"]) == {
        "/a": ["index.html"],
        "/b": ["index.html"],
    }


def test_paths_are_normalized_before_grouping():
    assert group_by_folder(["/x//y/./f.txt", "/x/y/g.txt"]) == {"/x/y": ["f.txt", "g.txt"]}


def test_folders_to_create_deep_and_shared():
    paths = ["/p/q/r/1", "/p/q/2", "/p/s/3"]
    assert folders_to_create(paths, "/b") == ["/b/p", "/b/p/q", "/b/p/s", "/b/p/q/r"]


def test_folders_to_create_root_files_only():
    assert folders_to_create(["/a", "/b"], "/dest") == []
