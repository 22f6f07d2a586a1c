//! Serializable reports (the `--json` output and `report.json`), versioned.

use crate::repair::fix::{FixOutcome, FixStatus};
use crate::repair::validate::OutcomeKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// Bumped whenever a field changes meaning or disappears.
pub const FORMAT_VERSION: u32 = 2;

#[derive(Debug, Serialize)]
pub struct FixReport {
    pub format_version: u32,
    pub status: &'static str,
    pub repo: String,
    pub python: String,
    pub patch: Option<PatchReport>,
    /// A confirmed plausible patch not reported as the fix because it shows an anti-pattern
    /// (`status` = `suggested`; `fix --accept-overfit` reports it as the fix).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<PatchReport>,
    pub baseline: BaselineReport,
    /// The regression guard: the baseline-passing tests a patch must keep passing.
    pub guard: GuardReport,
    pub suspicious_functions: Vec<FunctionReport>,
    pub suspicious_lines: Vec<LineReport>,
    pub candidates: CandidateStats,
    /// How the candidates were validated: per engine path, and why some left the fast path.
    pub validation: ValidationReport,
    /// Per candidate source: what it proposed, what was validated, what passed, and its time.
    pub sources: Vec<SourceReport>,
    /// Why the search stopped: `found`, `deadline`, `exhausted` or `not-started`.
    pub search_end: &'static str,
    /// The language-model source's sampler, when it was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language_model: Option<LanguageModelReport>,
    pub tried: Vec<TriedReport>,
    pub warnings: Vec<String>,
    pub seconds: f64,
    /// From the end of the baseline to the first validation result.
    pub first_validation_seconds: Option<f64>,
    /// Only with `fix --rank smollm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking: Option<RankingReport>,
}

#[derive(Debug, Serialize)]
pub struct PatchReport {
    pub file: String,
    pub line: usize,
    pub source: &'static str,
    pub description: String,
    pub score: f64,
    pub diff: String,
    /// The patch's anti-patterns (`repair::choose::overfit`): non-empty only when every plausible patch
    /// had one, and then the patch may fit the tests rather than fix the bug.
    pub overfit: Vec<&'static str>,
    /// Only with `fix --rank smollm`, when the patch's function could be scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likelihood: Option<LikelihoodReport>,
}

/// SmolLM2 likelihood ranking of the plausible patches.
#[derive(Debug, Serialize)]
pub struct RankingReport {
    /// The GGUF file.
    pub model: String,
    /// Ranking key: `ln(score) + likelihood_weight × gain_nats`.
    pub likelihood_weight: f64,
    pub scored: usize,
    /// Plausible candidates left unscored: scoring them would have run past the search deadline.
    pub out_of_time: usize,
    /// Time spent scoring (model calls only).
    pub seconds: f64,
    /// Plausible candidates (and those plausible in validation that failed confirmation), best first.
    pub plausible: Vec<RankedReport>,
}

/// A validated candidate's outcome, serialized by its report name (`"still-failing"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutcomeReport(pub OutcomeKind);

impl OutcomeReport {
    #[must_use]
    pub fn is_plausible(self) -> bool {
        self.0 == OutcomeKind::Plausible
    }
}

impl Serialize for OutcomeReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name())
    }
}

impl std::fmt::Display for OutcomeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

#[derive(Debug, Serialize)]
pub struct RankedReport {
    pub id: usize,
    pub line: usize,
    pub description: String,
    pub outcome: OutcomeReport,
    pub score: f64,
    /// Edits in the patch: patches without an anti-pattern rank first, then those not
    /// superseded, then fewer edits, then fewer deleted calls, then the ranking key.
    pub edits: usize,
    pub deleted_calls: usize,
    /// Another plausible patch makes part of this one's change (it ranks after every patch
    /// that is not superseded).
    pub superseded: bool,
    /// SmolLM2 finds the patched function too unlikely to report it (`rank::MIN_GAIN`).
    pub implausible: bool,
    /// The patch's anti-patterns (`repair::choose::overfit`: it degrades the code it edits, e.g.
    /// `constant-return`); a patch with any ranks after every patch without one.
    pub overfit: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likelihood: Option<LikelihoodReport>,
    /// The ranking key.
    pub rank_key: f64,
    pub chosen: bool,
}

/// Log-likelihoods (nats) of the patched and the original function, counted from the first
/// token where the scored alternatives differ.
#[derive(Debug, Serialize)]
pub struct LikelihoodReport {
    pub nats: f64,
    pub tokens: usize,
    pub nats_per_token: f64,
    pub original_nats: f64,
    pub original_tokens: usize,
    pub original_nats_per_token: f64,
    /// `nats - original_nats`: > 0 when the patched function reads more natural than the bug.
    pub gain_nats: f64,
}

impl LikelihoodReport {
    fn new(n: &crate::repair::choose::rank::Naturalness) -> LikelihoodReport {
        LikelihoodReport {
            nats: n.patched.nats,
            tokens: n.patched.tokens,
            nats_per_token: n.patched.per_token(),
            original_nats: n.original.nats,
            original_tokens: n.original.tokens,
            original_nats_per_token: n.original.per_token(),
            gain_nats: n.gain(),
        }
    }
}

fn ranking_report(outcome: &FixOutcome) -> Option<RankingReport> {
    let ranking = outcome.ranking.as_ref()?;
    let mut plausible: Vec<RankedReport> = outcome
        .validated
        .iter()
        .filter(|v| v.outcome.is_plausible() || ranking.scores.contains_key(&v.candidate_id))
        .map(|v| {
            let c = &outcome.candidates[v.candidate_id.0];
            let n = ranking.scores.get(&c.id);
            RankedReport {
                id: c.id.0,
                line: c.line,
                description: c.description.clone(),
                outcome: OutcomeReport(v.outcome.kind()),
                score: c.score,
                edits: c.patch.edits().len(),
                deleted_calls: c.deleted_calls,
                superseded: ranking.superseded.contains(&c.id),
                implausible: crate::repair::choose::rank::implausible(n),
                overfit: overfit_names(outcome, c.id),
                likelihood: n.map(LikelihoodReport::new),
                rank_key: crate::repair::choose::rank::combined(c.score, n),
                chosen: outcome.chosen_candidate().map(|b| b.id) == Some(c.id),
            }
        })
        .collect();
    plausible.sort_by(|a, b| {
        (a.implausible, !a.overfit.is_empty(), a.superseded, a.edits, a.deleted_calls)
            .cmp(&(b.implausible, !b.overfit.is_empty(), b.superseded, b.edits, b.deleted_calls))
            .then(b.rank_key.total_cmp(&a.rank_key))
            .then(a.id.cmp(&b.id))
    });
    Some(RankingReport {
        model: ranking.model.display().to_string(),
        likelihood_weight: crate::repair::choose::rank::LIKELIHOOD_WEIGHT,
        scored: ranking.stats.scored,
        out_of_time: ranking.stats.out_of_time,
        seconds: ranking.stats.elapsed.as_secs_f64(),
        plausible,
    })
}

/// The names of a candidate's anti-patterns (empty when it has none or was not checked).
fn overfit_names(outcome: &FixOutcome, id: crate::repair::candidate::CandidateId) -> Vec<&'static str> {
    outcome.overfit.get(&id).map(|found| found.iter().map(|a| a.name()).collect()).unwrap_or_default()
}

#[derive(Debug, Serialize)]
pub struct BaselineReport {
    pub tests: usize,
    pub failing: Vec<FailingReport>,
    pub seconds: f64,
}

/// The regression guard of a run (see `repair::choose::guard`).
#[derive(Debug, Serialize)]
pub struct GuardReport {
    /// Baseline-passing tests the guard learned (the failing tests being fixed excluded).
    pub tests: usize,
    /// Of those, the tests that checked the reported patch (`null`: no patch was confirmed).
    pub checked: Option<usize>,
    /// Only the failing tests checked (or would check) the patch.
    pub thin: bool,
    /// What was left out of the guard.
    pub left_out: LeftOutReport,
}

/// Parts of the suite left out of the guard, and why.
#[derive(Debug, Serialize)]
pub struct LeftOutReport {
    /// Modules or directories pytest could not collect: node id and first line of the reason.
    pub uncollectable: Vec<UncollectableReport>,
    /// Tests that failed before any change (outside the failing tests being fixed).
    pub failing: usize,
    /// Tests that hung before any change.
    pub timed_out: usize,
    /// Test files the time box of the baseline cut.
    pub not_run_files: usize,
    /// The run of the rest of the suite stopped at its time box.
    pub cut: bool,
}

#[derive(Debug, Serialize)]
pub struct UncollectableReport {
    pub nodeid: String,
    pub reason: String,
}

impl GuardReport {
    fn new(guard: &crate::repair::choose::guard::GuardSummary) -> GuardReport {
        let left = &guard.left_out;
        GuardReport {
            tests: guard.known,
            checked: guard.checked,
            thin: guard.thin(),
            left_out: LeftOutReport {
                uncollectable: left
                    .uncollectable
                    .iter()
                    .map(|(nodeid, reason)| UncollectableReport { nodeid: nodeid.clone(), reason: reason.clone() })
                    .collect(),
                failing: left.failing,
                timed_out: left.timed_out,
                not_run_files: left.not_run_files,
                cut: left.cut,
            },
        }
    }
}

#[derive(Debug, Serialize)]
pub struct FailingReport {
    pub nodeid: String,
    pub outcome: &'static str,
    pub error: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct FunctionReport {
    pub file: String,
    pub function: String,
    pub start_line: usize,
    pub end_line: usize,
    pub score: f64,
}

#[derive(Debug, Serialize)]
pub struct LineReport {
    pub file: String,
    pub line: usize,
    pub score: f64,
    pub ochiai: f64,
    pub dstar: f64,
    pub stack: f64,
}

#[derive(Debug, Serialize)]
pub struct CandidateStats {
    pub proposed: usize,
    pub unparseable: usize,
    pub duplicates: usize,
    /// Candidates admitted (parsed, new), all sources.
    pub ranked: usize,
    /// Multi-edit candidates among `ranked`.
    pub pairs: usize,
    pub validated: usize,
    pub by_outcome: BTreeMap<&'static str, usize>,
}

/// Validation speed and the engine paths candidates took (`repair::validate::path`).
#[derive(Debug, Serialize)]
pub struct ValidationReport {
    /// Candidates validated per second of validation rounds.
    pub candidates_per_second: f64,
    /// Wall time of the validation rounds.
    pub seconds: f64,
    /// Share of the candidates that were hot-swapped (`batch` or `warm`).
    pub fast_share: f64,
    /// What the failing tests took in the baseline: the least a candidate can cost (a run
    /// slower than this per candidate pays overhead, not test time).
    pub failing_tests_seconds: f64,
    /// Per path (`batch`, `warm`, `cold`, `process`, `container`): candidates and their seconds.
    pub paths: BTreeMap<&'static str, PathReport>,
    /// Why candidates were not hot-swapped, with how many each reason kept off the fast path.
    pub left_fast_path: BTreeMap<&'static str, usize>,
}

#[derive(Debug, Serialize)]
pub struct PathReport {
    pub candidates: usize,
    pub seconds: f64,
}

impl ValidationReport {
    fn new(outcome: &FixOutcome) -> ValidationReport {
        let mut totals = crate::repair::validate::PathTotals::default();
        for v in &outcome.validated {
            totals.add(v.path, v.elapsed);
        }
        let seconds = outcome.validation_elapsed.as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let rate = if seconds > 0.0 { totals.candidates() as f64 / seconds } else { 0.0 };
        ValidationReport {
            candidates_per_second: rate,
            seconds,
            fast_share: totals.fast_share(),
            failing_tests_seconds: (outcome.failing.iter())
                .filter_map(|id| outcome.baseline.test(id))
                .map(|t| t.duration)
                .sum(),
            paths: (totals.by_path.iter())
                .map(|(path, &(candidates, seconds))| (path.name(), PathReport { candidates, seconds }))
                .collect(),
            left_fast_path: totals.off_path.iter().map(|(why, &n)| (why.name(), n)).collect(),
        }
    }
}

/// What the language-model sampler ran.
#[derive(Debug, Serialize)]
pub struct LanguageModelReport {
    pub prompt_tokens: usize,
    pub sampled_tokens: usize,
    pub seconds: f64,
    /// New candidates per finished widening round (`repair::generate::widen`): trailing zeros mean the
    /// source ran dry; the round under way when the search stopped is not counted.
    pub rounds: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One candidate source's share of the search.
#[derive(Debug, Serialize)]
pub struct SourceReport {
    pub source: &'static str,
    pub proposed: usize,
    pub unparseable: usize,
    pub duplicates: usize,
    pub generated: usize,
    pub validated: usize,
    pub plausible: usize,
    pub partial: usize,
    pub validation_seconds: f64,
    pub generation_seconds: f64,
}

impl SourceReport {
    fn new(kind: crate::repair::search::SourceKind, s: &crate::repair::search::SourceStats) -> SourceReport {
        SourceReport {
            source: kind.name(),
            proposed: s.proposed,
            unparseable: s.unparseable,
            duplicates: s.duplicates,
            generated: s.generated,
            validated: s.validated,
            plausible: s.plausible,
            partial: s.partial,
            validation_seconds: s.validation_seconds,
            generation_seconds: s.generation_seconds,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct TriedReport {
    pub id: usize,
    pub file: String,
    pub line: usize,
    pub source: &'static str,
    pub description: String,
    pub score: f64,
    pub outcome: OutcomeReport,
    pub seconds: f64,
    /// The engine path of its first session (`batch`, `warm`, `cold`, `process`, `container`).
    pub path: &'static str,
    /// Why it was not hot-swapped (absent on the fast path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_path: Option<&'static str>,
    /// A plausible candidate's anti-patterns (`repair::choose::overfit`); empty when it has none, and
    /// for candidates that are not plausible.
    pub overfit: Vec<&'static str>,
    /// A plausible candidate's diff (absent for the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl FixReport {
    #[must_use]
    pub fn new(outcome: &FixOutcome, repo: &str) -> FixReport {
        let status = match outcome.status {
            FixStatus::Fixed { .. } => "fixed",
            FixStatus::Suggested { .. } => "suggested",
            FixStatus::NotFixed => "not-fixed",
            FixStatus::NothingToFix => "nothing-to-fix",
        };
        let chosen = outcome.chosen_candidate().map(|c| PatchReport {
            file: c.patch.file.clone(),
            line: c.line,
            source: c.source.name(),
            description: c.description.clone(),
            score: c.score,
            diff: outcome.diff.clone().unwrap_or_default(),
            overfit: overfit_names(outcome, c.id),
            likelihood: outcome.ranking.as_ref().and_then(|r| r.scores.get(&c.id)).map(LikelihoodReport::new),
        });
        let (patch, suggestion) = match outcome.status {
            FixStatus::Suggested { .. } => (None, chosen),
            _ => (chosen, None),
        };
        let failing = outcome
            .baseline
            .failing()
            .map(|t| FailingReport {
                nodeid: t.nodeid.clone(),
                outcome: match t.outcome {
                    crate::pytest::TestOutcome::Timeout => "timeout",
                    crate::pytest::TestOutcome::Error => "error",
                    _ => "failed",
                },
                error: t.failure.as_ref().map(|f| f.kind.clone()).unwrap_or_default(),
                message: t.failure.as_ref().map(|f| f.message.clone()).unwrap_or_default(),
            })
            .collect();
        let mut by_outcome = BTreeMap::new();
        for v in &outcome.validated {
            *by_outcome.entry(v.outcome.name()).or_insert(0) += 1;
        }
        FixReport {
            format_version: FORMAT_VERSION,
            status,
            repo: repo.to_string(),
            python: outcome.python.display().to_string(),
            patch,
            suggestion,
            baseline: BaselineReport {
                tests: outcome.baseline.tests.len(),
                failing,
                seconds: outcome.baseline_elapsed.as_secs_f64(),
            },
            guard: GuardReport::new(&outcome.guard),
            suspicious_functions: outcome
                .localization
                .functions
                .iter()
                .take(10)
                .map(|f| FunctionReport {
                    file: f.file.clone(),
                    function: f.qualname.clone(),
                    start_line: f.start_line,
                    end_line: f.end_line,
                    score: f.score,
                })
                .collect(),
            suspicious_lines: outcome
                .localization
                .lines
                .iter()
                .take(20)
                .map(|l| LineReport {
                    file: l.file.clone(),
                    line: l.line,
                    score: l.score,
                    ochiai: l.ochiai,
                    dstar: l.dstar,
                    stack: l.stack,
                })
                .collect(),
            candidates: CandidateStats {
                proposed: outcome.sources.iter().map(|(_, s)| s.proposed).sum(),
                unparseable: outcome.sources.iter().map(|(_, s)| s.unparseable).sum(),
                duplicates: outcome.sources.iter().map(|(_, s)| s.duplicates).sum(),
                ranked: outcome.candidates.len(),
                pairs: outcome.candidates.iter().filter(|c| !c.source.is_single()).count(),
                validated: outcome.validated.len(),
                by_outcome,
            },
            validation: ValidationReport::new(outcome),
            language_model: outcome.lm.as_ref().map(|lm| LanguageModelReport {
                prompt_tokens: lm.prompt_tokens,
                sampled_tokens: lm.sampled_tokens,
                rounds: lm.rounds.clone(),
                seconds: lm.seconds,
                error: lm.error.clone(),
            }),
            sources: outcome.sources.iter().map(|(kind, s)| SourceReport::new(*kind, s)).collect(),
            search_end: match outcome.search_end {
                crate::repair::fix::SearchEnd::Found => "found",
                crate::repair::fix::SearchEnd::Deadline => "deadline",
                crate::repair::fix::SearchEnd::Exhausted => "exhausted",
                crate::repair::fix::SearchEnd::NotStarted => "not-started",
            },
            tried: outcome
                .validated
                .iter()
                .map(|v| {
                    let c = &outcome.candidates[v.candidate_id.0];
                    TriedReport {
                        id: c.id.0,
                        file: c.patch.file.clone(),
                        line: c.line,
                        source: c.source.name(),
                        description: c.description.clone(),
                        score: c.score,
                        outcome: OutcomeReport(v.outcome.kind()),
                        seconds: v.elapsed.as_secs_f64(),
                        path: v.path.path.name(),
                        off_path: v.path.off_path.map(crate::repair::validate::OffPath::name),
                        overfit: if v.outcome.is_plausible() { overfit_names(outcome, c.id) } else { Vec::new() },
                        diff: outcome.plausible_diffs.get(&c.id).cloned(),
                    }
                })
                .collect(),
            warnings: outcome.warnings.clone(),
            seconds: outcome.elapsed.as_secs_f64(),
            first_validation_seconds: outcome.first_validation.map(|d| d.as_secs_f64()),
            ranking: ranking_report(outcome),
        }
    }
}
