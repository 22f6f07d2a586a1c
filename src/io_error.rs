//! `IoError`: an I/O error with the action it interrupted, shared by the library's error types.

/// An I/O error and what was being done when it happened (`failed to write the plugin: …`).
#[derive(Debug, thiserror::Error)]
#[error("failed to {action}: {source}")]
pub struct IoError {
    pub action: String,
    pub source: std::io::Error,
}

/// An I/O error on one path and the action it interrupted (`failed to read `a.py`: …`).
#[derive(Debug, thiserror::Error)]
#[error("failed to {action} `{}`: {source}", path.display())]
pub struct PathIoError {
    pub action: &'static str,
    pub path: std::path::PathBuf,
    pub source: std::io::Error,
}

/// Adapter for `map_err`: `.map_err(path_io("create", &dir))?` (the `?` turns the
/// [`PathIoError`] into the caller's error type).
pub(crate) fn path_io(action: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> PathIoError {
    let path = path.to_path_buf();
    move |source| PathIoError { action, path, source }
}

/// Adapter for `map_err`: `.map_err(io_err("write the plugin"))?` (the `?` turns the
/// [`IoError`] into the caller's error type).
pub(crate) fn io_err(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> IoError {
    let action = action.into();
    move |source| IoError { action, source }
}

/// Adapter for `map_err` where the file is all there is to say: `failed to read or write {path}`.
pub(crate) fn path_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
    move |source| IoError { action: format!("read or write {}", path.display()), source }
}
