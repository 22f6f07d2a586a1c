//! The patcher adapter shipped inside the binary (`models/patcher-smollm-lora`), written to a cache directory on first use.

use crate::io_error::{io_err, IoError};
use std::path::{Path, PathBuf};

const CONFIG: &[u8] = include_bytes!("../../models/patcher-smollm-lora/adapter_config.json");
const WEIGHTS: &[u8] = include_bytes!("../../models/patcher-smollm-lora/adapter_model.safetensors");
const README: &[u8] = include_bytes!("../../models/patcher-smollm-lora/README.md");

/// The bundled adapter's directory (`adapter_config.json`, `adapter_model.safetensors`), under
/// `$DEEPDEBUG_CACHE`, `$XDG_CACHE_HOME/deepdebug` or `~/.cache/deepdebug`; written there the
/// first time (into a fresh directory, then renamed, so concurrent runs never see half a file).
///
/// # Errors
/// When the cache directory cannot be written.
pub fn patcher_dir() -> Result<PathBuf, IoError> {
    patcher_dir_in(&cache_root())
}

fn patcher_dir_in(root: &Path) -> Result<PathBuf, IoError> {
    let dir = root.join(format!("patcher-smollm-lora-{}-{}", env!("CARGO_PKG_VERSION"), WEIGHTS.len()));
    if dir.join(super::lora::ADAPTER_WEIGHTS).is_file() {
        return Ok(dir);
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io_err(format!("create {}", parent.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".patcher-")
        .tempdir_in(parent)
        .map_err(io_err(format!("create a directory in {}", parent.display())))?;
    for (name, bytes) in
        [(super::lora::ADAPTER_CONFIG, CONFIG), (super::lora::ADAPTER_WEIGHTS, WEIGHTS), ("README.md", README)]
    {
        let path = staging.path().join(name);
        std::fs::write(&path, bytes).map_err(io_err(format!("write {}", path.display())))?;
    }
    let staged = staging.keep();
    if std::fs::rename(&staged, &dir).is_err() {
        // Another run put it there first.
        let _ = std::fs::remove_dir_all(&staged);
    }
    if dir.join(super::lora::ADAPTER_WEIGHTS).is_file() {
        Ok(dir)
    } else {
        Err(IoError {
            action: format!("write the bundled patcher to {}", dir.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })
    }
}

fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("DEEPDEBUG_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("deepdebug");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("deepdebug"),
        None => std::env::temp_dir().join("deepdebug-cache"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundled_adapter_is_written_once_and_is_a_valid_patch_adapter() {
        let cache = tempfile::tempdir().unwrap();
        let dir = super::patcher_dir_in(cache.path()).unwrap();
        let again = super::patcher_dir_in(cache.path()).unwrap();
        assert_eq!(dir, again);
        assert!(dir.starts_with(cache.path()));
        let config = crate::model::lora::AdapterDir::new(&dir).config().unwrap();
        assert_eq!(config.task(), crate::model::Task::Patch);
        let weights = std::fs::metadata(dir.join(crate::model::lora::ADAPTER_WEIGHTS)).unwrap().len();
        assert_eq!(weights, super::WEIGHTS.len() as u64);
        // Nothing half-written is left beside it.
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1);
    }
}
