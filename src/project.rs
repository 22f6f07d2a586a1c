//! The user's Python project: its source files, which ones are tests, and scratch copies of it.

use crate::io_error::path_io;
use crate::python::{Parsed, SyntaxError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Directories never copied or scanned.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "env",
    "node_modules",
    "build",
    "dist",
    ".eggs",
    "target",
];

/// Errors reading a project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("`{0}` is not a directory")]
    NotADirectory(PathBuf),
    #[error(transparent)]
    Io(#[from] crate::io_error::PathIoError),
}

/// A Python source file of the project.
pub struct SourceFile {
    /// Path relative to the root, with `/` separators.
    pub rel: String,
    pub parsed: Parsed,
    pub is_test: bool,
}

/// Something about the project that is worth telling the user but does not stop the run.
#[derive(Debug, Clone)]
pub enum Warning {
    NotUtf8 { rel: String },
    SyntaxErrors { rel: String, errors: Vec<SyntaxError> },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::NotUtf8 { rel } => write!(f, "{rel}: not UTF-8, skipped"),
            Warning::SyntaxErrors { rel, errors } => {
                let first = &errors[0];
                write!(
                    f,
                    "{rel}:{}:{}: syntax error ({}), not a repair target",
                    first.line, first.column, first.message
                )
            }
        }
    }
}

/// The project's Python files, parsed.
pub struct Project {
    root: PathBuf,
    files: BTreeMap<String, SourceFile>,
    warnings: Vec<Warning>,
}

impl Project {
    /// Scan `root` for `.py` files.
    ///
    /// # Errors
    /// When `root` is not a readable directory.
    pub fn load(root: &Path) -> Result<Project, ProjectError> {
        if !root.is_dir() {
            return Err(ProjectError::NotADirectory(root.to_path_buf()));
        }
        let root = root.canonicalize().map_err(path_io("resolve", root))?;
        let mut files = BTreeMap::new();
        let mut warnings = Vec::new();
        let walker = walkdir::WalkDir::new(&root)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && skip_dir(e.file_name())));
        for entry in walker.filter_map(Result::ok) {
            if !entry.file_type().is_file() || entry.path().extension().is_none_or(|e| e != "py") {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&root) else { continue };
            let rel = rel.to_string_lossy().replace('\\', "/");
            let bytes = std::fs::read(entry.path()).map_err(path_io("read", entry.path()))?;
            let Ok(text) = String::from_utf8(bytes) else {
                warnings.push(Warning::NotUtf8 { rel });
                continue;
            };
            let parsed = Parsed::new(text);
            let is_test = is_test_path(&rel);
            if !parsed.is_valid() && !is_test {
                warnings.push(Warning::SyntaxErrors { rel: rel.clone(), errors: parsed.syntax_errors() });
            }
            files.insert(rel.clone(), SourceFile { rel, parsed, is_test });
        }
        Ok(Project { root, files, warnings })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    #[must_use]
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    #[must_use]
    pub fn file(&self, rel: &str) -> Option<&SourceFile> {
        self.files.get(rel)
    }

    /// Non-test files that parse: the files a repair may edit.
    pub fn repair_targets(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.values().filter(|f| !f.is_test && f.parsed.is_valid())
    }

    pub fn files(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.values()
    }
}

fn skip_dir(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    SKIP_DIRS.contains(&name.as_ref()) || name.ends_with(".out") || name.ends_with(".egg-info")
}

/// pytest's default test-file patterns, plus `conftest.py` and anything under a `tests` dir.
#[must_use]
pub fn is_test_path(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.starts_with("test_")
        || name.ends_with("_test.py")
        || name == "conftest.py"
        || rel.split('/').any(|part| part == "tests" || part == "test" || part == "testing")
}

/// Copy the project tree (minus VCS, caches and virtualenvs) into `dest`.
///
/// # Errors
/// On any IO failure.
pub fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<()> {
    let walker = walkdir::WalkDir::new(src)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && skip_dir(e.file_name())));
    for entry in walker {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry.path().strip_prefix(src).map_err(std::io::Error::other)?;
        let target = dest.join(rel);
        let ft = entry.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &target)?;
        } else if ft.is_symlink() {
            let link = std::fs::read_link(entry.path())?;
            std::os::unix::fs::symlink(link, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_recognized_by_pytest_conventions() {
        assert!(is_test_path("tests/helpers.py"));
        assert!(is_test_path("test_x.py"));
        assert!(is_test_path("pkg/x_test.py"));
        assert!(is_test_path("conftest.py"));
        assert!(!is_test_path("pkg/contest.py"));
        assert!(!is_test_path("latest_tests.py"));
    }

    #[test]
    fn non_utf8_and_broken_files_are_warnings_not_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("good.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("bad.py"), "def f(:\n").unwrap();
        std::fs::write(dir.path().join("latin.py"), b"s = '\xe9'\n").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/hook.py"), "x = 1\n").unwrap();
        let project = Project::load(dir.path()).unwrap();
        let targets: Vec<_> = project.repair_targets().map(|f| f.rel.as_str()).collect();
        assert_eq!(targets, ["good.py"]);
        assert_eq!(project.warnings().len(), 2);
    }
}
