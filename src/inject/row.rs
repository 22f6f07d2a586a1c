//! Dataset rows and per-repository reports written by `deepdebug inject` (versioned JSON).

use crate::pytest::{Session, TestOutcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever a field changes meaning or disappears.
pub const INJECT_FORMAT_VERSION: u32 = 1;

/// One injected bug that the tests catch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BugRow {
    pub format_version: u32,
    pub repo: String,
    pub path: String,
    pub function: String,
    pub class: Option<String>,
    /// The operator that planted the bug (`comparison`, `index-off-by-one`, ...).
    pub kind: String,
    /// 1-based line of the edit in the original file.
    pub line: usize,
    pub description: String,
    pub buggy_function: String,
    pub fixed_function: String,
    /// The function's code skeleton: `# target edit` / `# end` around the (fixed) function,
    /// then class, imports, signatures, docstrings and bodies in priority order, in 1024 tokens.
    pub context: String,
    /// `failed` or `timeout`.
    pub outcome: String,
    pub failing_tests: Vec<String>,
    pub error_type: String,
    pub error_message: String,
    /// Frames of the first failing test's traceback, innermost last, with locals.
    pub trace: Vec<FrameRow>,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameRow {
    pub file: String,
    pub line: usize,
    pub function: String,
    pub locals: BTreeMap<String, String>,
}

/// Mutants tried and caught for one bug kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KindStats {
    pub tried: usize,
    pub killed: usize,
    pub timeouts: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepoStatus {
    Done,
    /// The repository could not be used (reason given); the run went on.
    Skipped,
}

/// What happened in one repository (also the checkpoint entry).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepoReport {
    pub repo: String,
    pub status: RepoStatus,
    pub reason: Option<String>,
    pub tests: usize,
    pub functions_covered: usize,
    pub mutants_planned: usize,
    pub mutants_run: usize,
    pub bugs_kept: usize,
    pub by_kind: BTreeMap<String, KindStats>,
    pub seconds: f64,
}

impl RepoReport {
    #[must_use]
    pub fn skipped(repo: &str, reason: String) -> RepoReport {
        RepoReport {
            repo: repo.to_string(),
            status: RepoStatus::Skipped,
            reason: Some(reason),
            tests: 0,
            functions_covered: 0,
            mutants_planned: 0,
            mutants_run: 0,
            bugs_kept: 0,
            by_kind: BTreeMap::new(),
            seconds: 0.0,
        }
    }
}

/// The parts of a mutant a row needs.
pub(crate) struct MutantView<'a> {
    pub path: &'a str,
    pub function: &'a str,
    pub class: Option<&'a str>,
    pub kind: &'static str,
    pub line: usize,
    pub description: &'a str,
    pub buggy_function: &'a str,
    pub fixed_function: &'a str,
    pub context: String,
}

impl BugRow {
    pub(crate) fn new(repo: &str, m: MutantView<'_>, session: &Session, seed: u64) -> BugRow {
        let failing: Vec<&crate::pytest::TestResult> = session.failing().collect();
        let first = failing.first().and_then(|t| t.failure.as_ref());
        let timed_out = session.exit.is_timeout() || failing.iter().any(|t| t.outcome == TestOutcome::Timeout);
        BugRow {
            format_version: INJECT_FORMAT_VERSION,
            repo: repo.to_string(),
            path: m.path.to_string(),
            function: m.function.to_string(),
            class: m.class.map(str::to_string),
            kind: m.kind.to_string(),
            line: m.line,
            description: m.description.to_string(),
            buggy_function: m.buggy_function.to_string(),
            fixed_function: m.fixed_function.to_string(),
            context: m.context,
            outcome: if timed_out { "timeout" } else { "failed" }.to_string(),
            failing_tests: failing.iter().map(|t| t.nodeid.clone()).collect(),
            error_type: first.map(|f| f.kind.clone()).unwrap_or_else(|| "Timeout".into()),
            error_message: first.map(|f| f.message.clone()).unwrap_or_default(),
            trace: first
                .map(|f| {
                    f.frames
                        .iter()
                        .map(|fr| FrameRow {
                            file: fr.file.clone(),
                            line: fr.line,
                            function: fr.function.clone(),
                            locals: fr.locals.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            seed,
        }
    }
}
