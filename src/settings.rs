//! Project settings for `fix`: `[tool.deepdebug]` in pyproject.toml and `deepdebug.toml`, which command-line flags override.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A settings file's keys (kebab-case, as the command-line flags). Every key is optional;
/// an unknown key is an error that names it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileSettings {
    /// Budget for the whole run: `"60s"`, `"2m"` or a number of seconds.
    pub timeout: Option<Duration>,
    /// pytest selectors naming the failing tests to fix.
    pub tests: Option<Vec<String>>,
    pub tests_only: Option<bool>,
    /// Report a patch with an anti-pattern as the fix instead of a suggestion.
    pub accept_overfit: Option<bool>,
    /// Per-test limit during the baseline run.
    pub test_timeout: Option<Duration>,
    pub jobs: Option<usize>,
    /// `local`, `docker` or `none`.
    pub sandbox: Option<String>,
    /// Docker image for `sandbox = "docker"`.
    pub image: Option<String>,
    /// `fork` or `subprocess`.
    pub engine: Option<String>,
    /// `auto`, `smollm` or `none`.
    pub rank: Option<String>,
    /// `auto`, `smollm` or `none`.
    pub lm: Option<String>,
    pub smollm: Option<PathBuf>,
    pub model: Option<PathBuf>,
    /// A templates.json, or `none`.
    pub templates: Option<PathBuf>,
    pub priors: Option<PathBuf>,
    pub python: Option<PathBuf>,
    pub max_lines: Option<usize>,
    /// Never edited: file globs (`src/pkg/vendor/**`) and functions (`src/pkg/io.py::Reader.load`).
    pub exclude: Option<Vec<String>>,
}

/// A duration written as `"60s"`, `"2m"`, `"500ms"` or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duration(pub std::time::Duration);

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Seconds(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Seconds(s) if s.is_finite() && s > 0.0 => Ok(Duration(std::time::Duration::from_secs_f64(s))),
            Raw::Seconds(s) => Err(serde::de::Error::custom(format!("duration {s} must be positive"))),
            Raw::Text(t) => parse_duration(&t).map(Duration).map_err(serde::de::Error::custom),
        }
    }
}

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration `{0}` (try 60s, 2m)")]
    Invalid(String),
    #[error("unknown duration unit `{0}` (use ms, s, m or h)")]
    Unit(String),
    #[error("duration `{0}` must be positive")]
    NotPositive(String),
}

/// Parse `60s`, `2m`, `1h`, `500ms` or a bare number of seconds.
///
/// # Errors
/// [`DurationError`] naming the text when it is not a positive duration.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| DurationError::Invalid(text.to_string()))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(DurationError::Unit(other.to_string())),
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(DurationError::NotPositive(text.to_string()));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    /// `[tool.deepdebug]` of this pyproject.toml.
    Pyproject(PathBuf),
    /// This deepdebug.toml.
    DeepdebugToml(PathBuf),
    CommandLine,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => write!(f, "default"),
            Origin::Pyproject(p) => write!(f, "{} [tool.deepdebug]", p.display()),
            Origin::DeepdebugToml(p) => write!(f, "{}", p.display()),
            Origin::CommandLine => write!(f, "command line"),
        }
    }
}

/// A settings file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{origin}: {message}")]
    Invalid { origin: Origin, message: String },
}

/// The settings files of a project, lowest precedence first: pyproject.toml's
/// `[tool.deepdebug]`, then `deepdebug.toml` (whose keys win). Relative paths in them are
/// made relative to `root`, the directory that holds them.
///
/// # Errors
/// A file that cannot be read, is not TOML, or has an unknown key or a value of the wrong type.
pub fn load(root: &Path) -> Result<Vec<(Origin, FileSettings)>, SettingsError> {
    let mut out = Vec::new();
    let origin = Origin::Pyproject(root.join("pyproject.toml"));
    if let Some(text) = read(&origin)? {
        if let Some(settings) =
            from_pyproject(&text).map_err(|message| SettingsError::Invalid { origin: origin.clone(), message })?
        {
            out.push((origin, settings.rooted(root)));
        }
    }
    let origin = Origin::DeepdebugToml(root.join("deepdebug.toml"));
    if let Some(text) = read(&origin)? {
        let settings: FileSettings = toml::from_str(&text)
            .map_err(|e| SettingsError::Invalid { origin: origin.clone(), message: message(&e, &text) })?;
        out.push((origin, settings.rooted(root)));
    }
    Ok(out)
}

/// The text of a settings file (`origin` names it), `None` when there is none.
fn read(origin: &Origin) -> Result<Option<String>, SettingsError> {
    let (Origin::Pyproject(path) | Origin::DeepdebugToml(path)) = origin else { return Ok(None) };
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SettingsError::Invalid { origin: origin.clone(), message: "not UTF-8".into() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SettingsError::Read { path: path.to_path_buf(), source }),
    }
}

/// The `[tool.deepdebug]` table of a pyproject.toml, if it has one.
fn from_pyproject(text: &str) -> Result<Option<FileSettings>, String> {
    #[derive(Deserialize)]
    struct Pyproject {
        tool: Option<Tool>,
    }
    #[derive(Deserialize)]
    struct Tool {
        deepdebug: Option<FileSettings>,
    }
    let parsed: Pyproject = toml::from_str(text).map_err(|e| message(&e, text))?;
    Ok(parsed.tool.and_then(|t| t.deepdebug))
}

/// toml's message, one line, with the line it points at.
fn message(e: &toml::de::Error, text: &str) -> String {
    let line = e
        .span()
        .map(|s| format!(" (line {})", text[..s.start.min(text.len())].matches('\n').count() + 1))
        .unwrap_or_default();
    format!("{}{line}", e.message().trim())
}

impl FileSettings {
    /// Paths made relative to the directory of the file they came from.
    fn rooted(mut self, root: &Path) -> FileSettings {
        let fix = |p: &mut Option<PathBuf>| {
            if let Some(path) = p.as_mut().filter(|p| p.is_relative() && p.as_os_str() != "none") {
                *path = root.join(&*path);
            }
        };
        for p in [&mut self.smollm, &mut self.model, &mut self.templates, &mut self.priors, &mut self.python] {
            fix(p);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn pyproject_table_then_deepdebug_toml_with_durations_and_rooted_paths() {
        let dir = project(&[
            ("pyproject.toml", "[project]\nname = 'x'\n[tool.deepdebug]\ntimeout = '2m'\ntests = ['tests/test_a.py']\nmodel = 'models/patcher'\n"),
            ("deepdebug.toml", "timeout = 90\nexclude = ['vendor/**', 'pkg/io.py::Reader.load']\n"),
        ]);
        let layers = load(dir.path()).unwrap();
        assert_eq!(layers.len(), 2);
        assert!(matches!(layers[0].0, Origin::Pyproject(_)));
        assert_eq!(layers[0].1.timeout, Some(Duration(std::time::Duration::from_secs(120))));
        assert_eq!(layers[0].1.model, Some(dir.path().join("models/patcher")));
        assert_eq!(layers[1].1.timeout, Some(Duration(std::time::Duration::from_secs(90))));
        assert_eq!(layers[1].1.exclude.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn a_pyproject_without_the_table_and_no_files_give_no_settings() {
        assert!(load(project(&[("pyproject.toml", "[tool.black]\nline-length = 100\n")]).path()).unwrap().is_empty());
        assert!(load(project(&[]).path()).unwrap().is_empty());
    }

    #[test]
    fn unknown_keys_bad_types_and_bad_durations_are_errors_naming_the_file_and_key() {
        let err =
            load(project(&[("pyproject.toml", "[tool.deepdebug]\ntimout = '60s'\n")]).path()).unwrap_err().to_string();
        assert!(
            err.contains("pyproject.toml [tool.deepdebug]")
                && err.contains("unknown field `timout`")
                && err.contains("(line 2)"),
            "{err}"
        );
        let err = load(project(&[("deepdebug.toml", "jobs = 'two'\n")]).path()).unwrap_err().to_string();
        assert!(err.contains("deepdebug.toml") && err.contains("invalid type"), "{err}");
        let err = load(project(&[("deepdebug.toml", "timeout = '60 parsecs'\n")]).path()).unwrap_err().to_string();
        assert!(err.contains("unknown duration unit"), "{err}");
    }

    #[test]
    fn a_settings_file_that_is_not_utf8_is_named_in_the_error() {
        let dir = project(&[]);
        std::fs::write(dir.path().join("pyproject.toml"), b"[tool.deepdebug]\ntimeout = '\xff'\n").unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("pyproject.toml [tool.deepdebug]") && err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms").unwrap(), std::time::Duration::from_millis(500));
        assert_eq!(parse_duration("1.5m").unwrap(), std::time::Duration::from_secs(90));
        assert_eq!(parse_duration("45").unwrap(), std::time::Duration::from_secs(45));
        assert!(parse_duration("-3s").is_err() && parse_duration("soon").is_err());
    }
}
