//! Subcommand front ends: argument structs, console output and progress bars.

pub mod debugger;
pub mod eval;
pub mod fix;
pub mod inject;
pub mod mine;
pub mod priors;
pub mod model;
pub mod sandbox;
pub mod templates;

use std::time::Duration;

/// Projects under GPL/LGPL in the mined corpus, left out of what is learned by default:
/// learned priors and templates ship with deepdebug.
pub const COPYLEFT_REPOS: [&str; 2] = ["pylint-dev/pylint", "pylint-dev/astroid"];

/// Parse `60s`, `2m`, `1h`, `500ms` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("invalid duration `{text}` (try 60s, 2m)"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown duration unit `{other}` (use ms, s, m or h)")),
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("duration `{text}` must be positive"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Operator priors from `--priors`: a priors.json, a mined JSONL to learn from, or the defaults.
pub fn load_priors(path: Option<&std::path::Path>) -> anyhow::Result<deepdebug::repair::priors::Priors> {
    use deepdebug::repair::priors::Priors;
    Ok(match path {
        None => Priors::default(),
        Some(path) if is_jsonl(path) => Priors::learn_from_jsonl(path)?.0,
        Some(path) => Priors::load(path)?,
    })
}

/// A JSON Lines file of mined rows: `.jsonl`, or `.jsonl.gz` compressed.
fn is_jsonl(path: &std::path::Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".jsonl") || name.ends_with(".jsonl.gz")
}
