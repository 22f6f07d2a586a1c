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
