//! Subcommand front ends: argument structs, console output and progress bars.

pub mod debugger;
pub mod eval;
pub mod fix;
pub mod inject;
pub mod mine;
pub mod model;
pub mod pipeline;
pub mod priors;
pub mod sandbox;
pub mod sources;
pub mod templates;

/// Projects under GPL/LGPL in the mined corpus, left out of what is learned by default:
/// learned priors and templates ship with deepdebug.
pub const COPYLEFT_REPOS: [&str; 2] = ["pylint-dev/pylint", "pylint-dev/astroid"];

pub use deepdebug::settings::parse_duration;

/// Operator priors from `--priors`: a priors.json, a mined JSONL to learn from, or the defaults.
pub fn load_priors(path: Option<&std::path::Path>) -> anyhow::Result<deepdebug::repair::learn::priors::Priors> {
    use deepdebug::repair::learn::priors::Priors;
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
