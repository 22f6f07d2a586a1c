"""Plan the folder structure a backup job has to mirror."""
import posixpath


def normalize(path):
    """Normalize a POSIX path: collapse '//' and '.' segments, drop a trailing slash."""
    path = path.strip()
    if not path:
        raise ValueError("empty path")
    return posixpath.normpath(path)


def group_by_folder(paths):
    """Map each folder to the sorted names of the files it contains.

    >>> group_by_folder(['/a/x.txt', '/a/y.txt', '/b/z.txt'])
    {'/a': ['x.txt', 'y.txt'], '/b': ['z.txt']}
    """
    groups = {}
    for raw in paths:
        path = normalize(raw)
        folder = posixpath.basename(path)
        groups.setdefault(folder, []).append(posixpath.basename(path))
    return {folder: sorted(names) for folder, names in sorted(groups.items())}


def folders_to_create(paths, dest_root):
    """Destination folders (parents before children) needed to mirror `paths`."""
    needed = set()
    for folder in group_by_folder(paths):
        rel = folder.strip("/")
        parts = rel.split("/") if rel else []
        for i in range(1, len(parts) + 1):
            needed.add(posixpath.join(dest_root, *parts[:i]))
    return sorted(needed, key=lambda p: (p.count("/"), p))


def total_size(sizes_by_path, folder):
    """Sum the sizes of the files directly inside `folder` (not in sub-folders)."""
    folder = normalize(folder)
    total = 0
    for path, size in sizes_by_path.items():
        if posixpath.dirname(normalize(path)) == folder:
            total += size
    return total
