//! Code that `fix` must never edit: file globs and `path::Qualname` functions (`--exclude`, settings `exclude`).

use globset::{GlobBuilder, GlobMatcher};

/// Files and functions excluded from editing.
#[derive(Debug, Clone, Default)]
pub struct Exclude {
    files: Vec<GlobMatcher>,
    /// (file glob, qualname): the function and everything nested in it.
    functions: Vec<(GlobMatcher, String)>,
}

#[derive(Debug, thiserror::Error)]
#[error("exclude pattern `{pattern}`: {message}")]
pub struct ExcludeError {
    pub pattern: String,
    pub message: String,
}

impl Exclude {
    /// Patterns relative to the project root, `*` not crossing `/`: `src/pkg/vendor/**`,
    /// `*_pb2.py` (a bare name: in any directory), `./setup.py` (at the root only),
    /// `src/pkg/io.py::Reader.load` (a function or class; its nested definitions too).
    ///
    /// # Errors
    /// An invalid glob or an empty function name.
    pub fn new(patterns: &[String]) -> Result<Exclude, ExcludeError> {
        let mut out = Exclude::default();
        for pattern in patterns {
            let err = |message: String| ExcludeError { pattern: pattern.clone(), message };
            let glob = |text: &str| {
                let anchored = text.starts_with("./") || text.starts_with('/');
                let text = text.trim_start_matches("./").trim_start_matches('/');
                let text = if anchored || text.contains('/') { text.to_string() } else { format!("**/{text}") };
                GlobBuilder::new(&text)
                    .literal_separator(true)
                    .build()
                    .map(|g| g.compile_matcher())
                    .map_err(|e| err(e.kind().to_string()))
            };
            match pattern.split_once("::") {
                Some((_, name)) if name.trim().is_empty() => return Err(err("no function after `::`".into())),
                Some((file, name)) => out.functions.push((glob(file)?, name.trim().to_string())),
                None => out.files.push(glob(pattern)?),
            }
        }
        Ok(out)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.functions.is_empty()
    }

    /// The whole file (relative to the project root, `/`-separated) is excluded.
    #[must_use]
    pub fn file(&self, rel: &str) -> bool {
        self.files.iter().any(|g| g.is_match(rel))
    }

    /// The definition `qualname` of `rel` is excluded, or lies inside one that is.
    #[must_use]
    pub fn function(&self, rel: &str, qualname: &str) -> bool {
        self.file(rel)
            || self.functions.iter().any(|(g, name)| {
                g.is_match(rel)
                    && (qualname == name
                        || qualname.strip_prefix(name.as_str()).is_some_and(|rest| rest.starts_with('.')))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exclude(patterns: &[&str]) -> Exclude {
        Exclude::new(&patterns.iter().map(ToString::to_string).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn file_globs_match_relative_paths_and_bare_names_match_in_any_directory() {
        let ex = exclude(&["src/pkg/vendor/**", "*_pb2.py", "./setup.py"]);
        assert!(ex.file("src/pkg/vendor/six.py") && ex.file("src/pkg/vendor/a/b.py"));
        assert!(ex.file("api_pb2.py") && ex.file("src/pkg/api_pb2.py"));
        assert!(ex.file("setup.py") && !ex.file("src/setup.py"));
        assert!(!ex.file("src/pkg/core.py"));
        assert!(!exclude(&["src/*.py"]).file("src/pkg/core.py") && exclude(&["src/*.py"]).file("src/core.py"));
    }

    #[test]
    fn functions_match_by_qualname_and_cover_their_nested_definitions() {
        let ex = exclude(&["src/pkg/io.py::Reader", "util.py::parse"]);
        assert!(ex.function("src/pkg/io.py", "Reader") && ex.function("src/pkg/io.py", "Reader.load"));
        assert!(!ex.function("src/pkg/io.py", "ReaderError.load") && !ex.function("src/pkg/io.py", "Writer.load"));
        assert!(ex.function("src/util.py", "parse") && ex.function("util.py", "parse.inner"));
        assert!(!ex.function("util.py", "parse_args") && !ex.file("util.py"));
    }

    #[test]
    fn bad_patterns_are_errors_naming_them() {
        let err = Exclude::new(&["src/[x.py".to_string()]).unwrap_err();
        assert!(err.to_string().contains("src/[x.py"), "{err}");
        assert!(Exclude::new(&["a.py::".to_string()]).is_err());
        assert!(Exclude::new(&[]).unwrap().is_empty());
    }
}
