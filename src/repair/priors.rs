//! Operator priors learned from mined fix commits: how often each operator reproduces a real fix.

use super::operators::{mutations_at_line_in, FileScope, Operator};
use crate::patch::Patch;
use crate::python::Parsed;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Bumped when the file format changes.
pub const PRIORS_FORMAT_VERSION: u32 = 1;

/// Pseudo-count of the hand-set prior mixed into the learned frequencies.
const SMOOTHING: f64 = 2.0;

/// A prior weight per operator, in 0..=1 (the most frequent operator gets 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Priors {
    weights: BTreeMap<Operator, f64>,
}

impl Default for Priors {
    /// The hand-set defaults of [`Operator::prior`].
    fn default() -> Self {
        Priors { weights: Operator::ALL.iter().map(|op| (*op, op.prior())).collect() }
    }
}

/// The on-disk form of [`Priors`] (`priors.json`).
#[derive(Debug, Serialize, Deserialize)]
pub struct PriorsFile {
    pub format_version: u32,
    /// Fix pairs examined.
    pub pairs: usize,
    /// Pairs that one operator edit of the buggy function reproduces.
    pub explained: usize,
    /// Explained pairs per operator name.
    pub counts: BTreeMap<String, usize>,
    /// Resulting weight per operator name.
    pub weights: BTreeMap<String, f64>,
}

/// Errors reading or learning priors.
#[derive(Debug, thiserror::Error)]
pub enum PriorsError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("`{path}` line {line}: {message}")]
    Parse { path: String, line: usize, message: String },
    #[error("`{path}`: format_version {found} is not supported (expected {PRIORS_FORMAT_VERSION})")]
    Version { path: String, found: u32 },
}

/// One mined before/after pair (the fields of `deepdebug mine` rows that are needed here).
#[derive(Debug, Deserialize)]
struct PairRow {
    before: String,
    after: String,
}

impl Priors {
    #[must_use]
    pub fn weight(&self, op: Operator) -> f64 {
        self.weights.get(&op).copied().unwrap_or_else(|| op.prior())
    }

    /// Learn from before/after function pairs: an operator is credited with a pair when one of
    /// its edits, at a line where the two versions differ, turns `before` into `after`
    /// (compared token-wise, ignoring whitespace and comments).
    #[must_use]
    pub fn learn<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> (Priors, PriorsFile) {
        let mut counts: BTreeMap<Operator, usize> = BTreeMap::new();
        let mut total = 0;
        let mut explained = 0;
        for (before, after) in pairs {
            total += 1;
            if let Some(op) = explaining_operator(before, after) {
                *counts.entry(op).or_default() += 1;
                explained += 1;
            }
        }
        // Mix frequencies with the defaults, then scale so the best operator has weight 1.
        let raw: BTreeMap<Operator, f64> = Operator::ALL
            .iter()
            .map(|op| {
                let n = counts.get(op).copied().unwrap_or(0) as f64;
                (*op, (n + SMOOTHING * op.prior()) / (explained as f64 + SMOOTHING))
            })
            .collect();
        let max = raw.values().copied().fold(f64::MIN_POSITIVE, f64::max);
        let weights: BTreeMap<Operator, f64> = raw.into_iter().map(|(op, w)| (op, w / max)).collect();
        let file = PriorsFile {
            format_version: PRIORS_FORMAT_VERSION,
            pairs: total,
            explained,
            counts: counts.iter().map(|(op, n)| (op.name().to_string(), *n)).collect(),
            weights: weights.iter().map(|(op, w)| (op.name().to_string(), *w)).collect(),
        };
        (Priors { weights }, file)
    }

    /// Learn from a JSONL file of rows with `before` and `after` (e.g. `deepdebug mine` output).
    ///
    /// # Errors
    /// When the file cannot be read or a line is not such a row.
    pub fn learn_from_jsonl(path: &Path) -> Result<(Priors, PriorsFile), PriorsError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PriorsError::Read { path: name.clone(), source })?;
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let row: PairRow = serde_json::from_str(line).map_err(|e| PriorsError::Parse {
                path: name.clone(),
                line: i + 1,
                message: e.to_string(),
            })?;
            rows.push(row);
        }
        Ok(Priors::learn(rows.iter().map(|r| (r.before.as_str(), r.after.as_str()))))
    }

    /// Read a `priors.json` written by [`PriorsFile`].
    ///
    /// # Errors
    /// When the file cannot be read or parsed, or has another format version.
    pub fn load(path: &Path) -> Result<Priors, PriorsError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PriorsError::Read { path: name.clone(), source })?;
        let file: PriorsFile = serde_json::from_str(&text)
            .map_err(|e| PriorsError::Parse { path: name.clone(), line: e.line(), message: e.to_string() })?;
        if file.format_version != PRIORS_FORMAT_VERSION {
            return Err(PriorsError::Version { path: name, found: file.format_version });
        }
        let mut priors = Priors::default();
        for op in Operator::ALL {
            if let Some(w) = file.weights.get(op.name()) {
                priors.weights.insert(op, w.clamp(0.0, 1.0));
            }
        }
        Ok(priors)
    }
}

/// The operator whose single edit turns `before` into `after`, if any.
fn explaining_operator(before: &str, after: &str) -> Option<Operator> {
    let parsed = Parsed::new(before);
    if !parsed.is_valid() {
        return None;
    }
    let target = tokens(after);
    let before_lines: Vec<&str> = before.lines().collect();
    let after_lines: Vec<&str> = after.lines().collect();
    let scope = FileScope::of(&parsed);
    // Lines of `before` that do not appear unchanged at the same place from either end.
    let prefix = before_lines.iter().zip(&after_lines).take_while(|(a, b)| a == b).count();
    let suffix = before_lines
        .iter()
        .rev()
        .zip(after_lines.iter().rev())
        .take_while(|(a, b)| a == b)
        .count()
        .min(before_lines.len().saturating_sub(prefix));
    let first = prefix + 1;
    let last = (before_lines.len() - suffix).max(first);
    for line in first.saturating_sub(1).max(1)..=last.min(before_lines.len()) {
        for m in mutations_at_line_in(&parsed, &scope, line) {
            let patched = Patch::single("f.py", m.edit).apply(before);
            if tokens(&patched) == target {
                return Some(m.operator);
            }
        }
    }
    None
}

/// Code as a token string: comments and whitespace differences removed.
fn tokens(code: &str) -> Vec<String> {
    let parsed = Parsed::new(code);
    let mut out = Vec::new();
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        if node.kind() == "comment" {
            continue;
        }
        if node.child_count() == 0 {
            out.push(parsed.node_text(node).to_string());
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<_> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_that_reproduce_fixes_gain_weight() {
        let pairs = [
            ("def f(a, b):\n    return a < b\n", "def f(a, b):\n    return a <= b\n"),
            ("def g(x):\n    if x > 0:  # positive\n        return 1\n    return 0\n", "def g(x):\n    if x >= 0:\n        return 1\n    return 0\n"),
            ("def h(xs):\n    return xs[len(xs)]\n", "def h(xs):\n    return xs[len(xs) - 1]\n"),
            ("def k(x):\n    return x\n", "def k(x):\n    log(x)\n    return x * 2 + 1\n"),
        ];
        let (priors, file) = Priors::learn(pairs.iter().copied());
        assert_eq!(file.pairs, 4);
        assert_eq!(file.explained, 3);
        assert_eq!(file.counts["comparison"], 2);
        assert_eq!(file.counts["index-off-by-one"], 1);
        assert!((priors.weight(Operator::Comparison) - 1.0).abs() < 1e-9);
        assert!(priors.weight(Operator::IndexOffByOne) > Operator::IndexOffByOne.prior() * 0.5);
        assert!(priors.weight(Operator::InsertStatement) < priors.weight(Operator::IndexOffByOne));
    }

    #[test]
    fn priors_round_trip_through_json() {
        let (priors, file) = Priors::learn([("def f(a):\n    return a + 1\n", "def f(a):\n    return a - 1\n")]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("priors.json");
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        let loaded = Priors::load(&path).unwrap();
        for op in Operator::ALL {
            assert!((loaded.weight(op) - priors.weight(op)).abs() < 1e-12, "{op:?}");
        }
    }
}
