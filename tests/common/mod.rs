//! Helpers shared by the integration tests.
pub mod cli;

/// A project in a temp dir from (path, content) pairs.
#[allow(dead_code)] // not every test crate builds projects
#[must_use]
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Every entry below `root` (directories and links too, so a stray `.pytest_cache` or
/// `__pycache__` shows), by path relative to `root`, with the content of files: equal
/// snapshots before and after a command mean it left the tree alone.
#[allow(dead_code)]
#[must_use]
pub fn snapshot(root: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Option<Vec<u8>>> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(Result::unwrap)
        .map(|e| {
            let content = e.file_type().is_file().then(|| std::fs::read(e.path()).unwrap());
            (e.path().strip_prefix(root).unwrap().to_path_buf(), content)
        })
        .collect()
}
