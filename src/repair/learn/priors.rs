//! Operator priors learned from mined fix commits: how often each operator reproduces a real fix.

use crate::patch::{Edit, Patch};
use crate::python::Parsed;
use crate::repair::generate::operators::{mutations_at_line_in, FileScope, Operator};
use crate::repair::learn::pairs::{map_rows, LineHunk, PairsError, RowFilter};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
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
    #[error(transparent)]
    Pairs(#[from] PairsError),
}

impl Priors {
    #[must_use]
    pub fn weight(&self, op: Operator) -> f64 {
        self.weights.get(&op).copied().unwrap_or_else(|| op.prior())
    }

    /// Learn from before/after function pairs (on all cores): an operator is credited with a
    /// pair when one of its edits, at a line where the two versions differ, turns `before` into
    /// `after` (compared token-wise, ignoring whitespace and comments).
    #[must_use]
    pub fn learn<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> (Priors, PriorsFile) {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        let found: Vec<Option<Operator>> = pairs.par_iter().map(|(b, a)| explaining_operator(b, a)).collect();
        Priors::from_explanations(&found)
    }

    /// Learn from a JSONL file of rows with `before` and `after` (e.g. `deepdebug mine` output).
    ///
    /// # Errors
    /// When the file cannot be read or a line is not such a row.
    pub fn learn_from_jsonl(path: &Path) -> Result<(Priors, PriorsFile), PriorsError> {
        Priors::learn_from_rows(path, &RowFilter::default())
    }

    /// Learn from the rows of a JSONL file (gzip-compressed or not) that `filter` keeps,
    /// streaming it through all cores.
    ///
    /// # Errors
    /// When the file cannot be read or a line is not such a row.
    pub fn learn_from_rows(path: &Path, filter: &RowFilter) -> Result<(Priors, PriorsFile), PriorsError> {
        let found = map_rows(path, |row| filter.keeps(row).then(|| explaining_operator(&row.before, &row.after)))?;
        Ok(Priors::from_explanations(&found.into_iter().flatten().collect::<Vec<_>>()))
    }

    /// Priors from the explaining operator (if any) of each pair examined.
    fn from_explanations(found: &[Option<Operator>]) -> (Priors, PriorsFile) {
        let mut counts: BTreeMap<Operator, usize> = BTreeMap::new();
        for op in found.iter().flatten() {
            *counts.entry(*op).or_default() += 1;
        }
        let explained: usize = counts.values().sum();
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
            pairs: found.len(),
            explained,
            counts: counts.iter().map(|(op, n)| (op.name().to_string(), *n)).collect(),
            weights: weights.iter().map(|(op, w)| (op.name().to_string(), *w)).collect(),
        };
        (Priors { weights }, file)
    }

    /// Read a `priors.json` written by [`PriorsFile`].
    ///
    /// # Errors
    /// When the file cannot be read or parsed, or has another format version.
    pub fn load(path: &Path) -> Result<Priors, PriorsError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PriorsError::Read { path: name.clone(), source })?;
        let file: PriorsFile = serde_json::from_str(&text).map_err(|e| PriorsError::Parse {
            path: name.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
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
///
/// Cheap checks come first: the versions must differ in one block of at most two lines on
/// each side (line counts within one of each other) and in their tokens, and an edit is only
/// applied and re-parsed when its byte range reaches every token that differs.
fn explaining_operator(before: &str, after: &str) -> Option<Operator> {
    let hunk = LineHunk::of(before, after);
    if hunk.removed > 2 || hunk.added > 2 || hunk.removed.abs_diff(hunk.added) > 1 {
        return None;
    }
    let parsed = Parsed::new(before);
    if !parsed.is_valid() {
        return None;
    }
    let changed = changed_bytes(&parsed, &Parsed::new(after))?;
    let target = tokens(after);
    let scope = FileScope::of(&parsed);
    let lines = before.lines().count();
    let first = hunk.prefix + 1;
    let last = (hunk.prefix + hunk.removed).max(first);
    for line in first.saturating_sub(1).max(1)..=last.min(lines) {
        for m in mutations_at_line_in(&parsed, &scope, line) {
            if !reaches(&m.edit, &changed) {
                continue;
            }
            let patched = Patch::single("f.py", m.edit).apply(before);
            if tokens(&patched) == target {
                return Some(m.operator);
            }
        }
    }
    None
}

/// Byte ranges of `before` that an explaining edit must reach: it keeps the tokens before its
/// start and after its end, so it must start before the end of the first token that differs
/// from `after` and end after the start of the last one (prefix and suffix each taken as long
/// as they go, so that a repeated token cannot hide a valid edit). `None` when the tokens do
/// not differ.
fn changed_bytes(before: &Parsed, after: &Parsed) -> Option<(Range<usize>, Range<usize>)> {
    let (b, a) = (token_ranges(before), token_ranges(after));
    let text = |parsed: &Parsed, r: &Range<usize>| parsed.text()[r.clone()].to_string();
    let same = |i: usize, j: usize| text(before, &b[i]) == text(after, &a[j]);
    let shortest = b.len().min(a.len());
    let prefix = (0..shortest).take_while(|&i| same(i, i)).count();
    if prefix == b.len() && prefix == a.len() {
        return None;
    }
    let suffix = (1..=shortest).take_while(|&k| same(b.len() - k, a.len() - k)).count();
    let first = b.get(prefix).cloned().unwrap_or(usize::MAX..usize::MAX);
    let last = (b.len() - suffix).checked_sub(1).map_or(0..0, |i| b[i].clone());
    Some((first, last))
}

/// Whether `edit` reaches the first and the last differing token (see [`changed_bytes`]).
fn reaches(edit: &Edit, (first, last): &(Range<usize>, Range<usize>)) -> bool {
    edit.range.start < first.end && (edit.range.end > last.start || last.is_empty())
}

/// Byte ranges of the tokens of `parsed` (tree-sitter leaves, comments left out).
fn token_ranges(parsed: &Parsed) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        if node.kind() == "comment" {
            continue;
        }
        if node.child_count() == 0 {
            out.push(node.byte_range());
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<_> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
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
            (
                "def g(x):\n    if x > 0:  # positive\n        return 1\n    return 0\n",
                "def g(x):\n    if x >= 0:\n        return 1\n    return 0\n",
            ),
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
    fn an_edit_next_to_a_repeated_token_is_still_found() {
        // The shared `yield` makes the token diff start one token late; the deletion of the
        // whole first statement must still be tried.
        let before = "def g(x):\n    yield check\n    yield x\n";
        let after = "def g(x):\n    yield x\n";
        assert_eq!(explaining_operator(before, after), Some(Operator::DeleteStatement));
    }

    #[test]
    fn pairs_that_no_single_edit_can_explain_are_skipped_early() {
        // Three changed lines, and a change of layout and comments only.
        let before = "def f(a):\n    x = a\n    y = a\n    z = a\n    return x\n";
        let after = "def f(a):\n    x = a + 1\n    y = a + 1\n    z = a + 1\n    return x\n";
        assert_eq!(explaining_operator(before, after), None);
        assert!(changed_bytes(&Parsed::new("x = f(a)  # c\n"), &Parsed::new("x = f( a )\n")).is_none());
        let (b, a) = ("def f(a):\n    return a < 1\n", "def f(a):\n    return a <= 1\n");
        assert_eq!(
            changed_bytes(&Parsed::new(b), &Parsed::new(a)),
            Some((b.find('<').unwrap()..b.find('<').unwrap() + 1, b.find('<').unwrap()..b.find('<').unwrap() + 1))
        );
    }

    #[test]
    fn gzip_rows_of_excluded_repositories_are_left_out() {
        use std::io::Write;
        let rows = "{\"repo\":\"a/kept\",\"before\":\"def f(a, b):\\n    return a < b\\n\",\"after\":\"def f(a, b):\\n    return a <= b\\n\"}\n\
                    {\"repo\":\"gpl/left-out\",\"before\":\"def f(a):\\n    return a + 1\\n\",\"after\":\"def f(a):\\n    return a - 1\\n\"}\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairs.jsonl.gz");
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
        gz.write_all(rows.as_bytes()).unwrap();
        gz.finish().unwrap();
        let filter = RowFilter { exclude_repos: vec!["gpl/".into()], exclude_test_paths: false };
        let (_, file) = Priors::learn_from_rows(&path, &filter).unwrap();
        assert_eq!((file.pairs, file.explained), (1, 1));
        assert_eq!(file.counts.keys().collect::<Vec<_>>(), ["comparison"]);
    }

    #[test]
    fn the_committed_priors_load() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/priors.json");
        let priors = Priors::load(&path).unwrap();
        assert!((priors.weight(Operator::DeleteStatement) - 1.0).abs() < 1e-9);
        assert!(priors.weight(Operator::Comparison) > 0.0);
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
