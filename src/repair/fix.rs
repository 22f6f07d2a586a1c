//! `fix` end to end: baseline, localization, candidate generation, validation, choice of patch.

use super::candidate::{self, Candidate, GenerateLimits, GenerateStats, NeuralLimits};
use super::priors::Priors;
use super::rank::{self, Naturalness, RankStats, Ranker};
use super::lab::{self, CandidateOutcome, EngineChoice, LabConfig, LabError, LabEvent, Timeouts, Validated};
use crate::localize::{localize, Localization};
use crate::patch::unified_diff;
use crate::project::{Project, ProjectError};
use crate::pytest::{CollectError, PytestError, RunSpec, Session};
use crate::sandbox::{DockerConfig, SandboxError, SandboxKind};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options of `deepdebug fix`.
#[derive(Debug, Clone)]
pub struct FixOptions {
    pub repo: PathBuf,
    /// Wall-clock budget for the whole run, baseline included.
    pub timeout: Duration,
    /// pytest selectors (paths, node ids); empty = whole suite.
    pub selectors: Vec<String>,
    /// Interpreter; default: the project's virtualenv, else `python3`.
    pub python: Option<PathBuf>,
    pub jobs: usize,
    /// Per-test limit during the baseline run.
    pub baseline_test_timeout: Duration,
    pub limits: GenerateLimits,
    pub engine: EngineChoice,
    /// Operator priors (learned from mined fix commits, or the hand-set defaults).
    pub priors: Priors,
    /// Also ask a trained patcher (a model directory) for candidates.
    pub neural: Option<NeuralOptions>,
    /// Where every test run happens (baseline, validation, confirmation).
    pub sandbox: SandboxKind,
    /// Image and limits for `SandboxKind::Docker`.
    pub docker: DockerConfig,
    /// Rank plausible patches by SmolLM2 likelihood (`None`: by operator score, first found).
    pub rank: Option<RankOptions>,
}

/// Likelihood ranking of plausible patches (`fix --rank smollm`, or `auto` when the model is
/// installed).
#[derive(Debug, Clone)]
pub struct RankOptions {
    /// The SmolLM2 GGUF file.
    pub gguf: PathBuf,
    /// Asked for explicitly: a model that cannot be loaded or run is an error. Otherwise `fix`
    /// warns and ranks plausible patches by operator score.
    pub required: bool,
    /// Plausible patches to collect before choosing (the search goes on after the first).
    pub max_plausible: usize,
    /// Share of the remaining search time the collection may take after the first plausible
    /// patch.
    pub extra_share: f64,
    /// The collection also stops after this many times the search time the first plausible
    /// patch took (but runs at least [`MIN_EXTRA`]): effort in proportion to the bug's.
    pub extra_factor: f64,
}

/// The least time the collection of more plausible patches gets (see [`RankOptions::extra_factor`]).
pub const MIN_EXTRA: Duration = Duration::from_secs(3);

impl RankOptions {
    /// Up to 5 plausible patches within 30% of the remaining search time and 3× the time the
    /// first one took (at least 3 s); the model must work.
    #[must_use]
    pub fn new(gguf: PathBuf) -> RankOptions {
        RankOptions { gguf, required: true, max_plausible: 5, extra_share: 0.3, extra_factor: 3.0 }
    }

    /// As [`RankOptions::new`], but a model that fails only turns the ranking off (with a warning).
    #[must_use]
    pub fn optional(gguf: PathBuf) -> RankOptions {
        RankOptions { required: false, ..RankOptions::new(gguf) }
    }
}

/// The seq2seq patcher as a candidate source beside the operators.
#[derive(Debug, Clone)]
pub struct NeuralOptions {
    /// Model directory (config.json, tokenizer.json, model.safetensors).
    pub model: PathBuf,
    pub limits: NeuralLimits,
}

/// Why `fix` could not search for a patch at all.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Pytest(#[from] PytestError),
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("pytest could not collect the tests:\n{}", format_collect_errors(.0))]
    CollectionErrors(Vec<CollectError>),
    #[error("pytest collected no tests{}", tail_hint(.0))]
    NoTests(String),
    #[error("the baseline test run did not finish within {0:?}")]
    BaselineTimeout(Duration),
    #[error("patcher model: {0}")]
    Model(#[from] crate::model::ModelError),
    #[error("`{path}` is a {task} model; `fix --model` needs a patch model (`train --task patch`)", path = .0.display(), task = .1)]
    WrongTask(PathBuf, &'static str),
    #[error("SmolLM2 ranker: {0}")]
    Ranker(#[source] crate::model::ModelError),
}

fn format_collect_errors(errors: &[CollectError]) -> String {
    errors
        .iter()
        .map(|e| {
            let last = e.message.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            format!("  {}: {last}", if e.nodeid.is_empty() { "<session>" } else { &e.nodeid })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tail_hint(tail: &str) -> String {
    let last = tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if last.is_empty() { String::new() } else { format!(" ({last})") }
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixStatus {
    /// A plausible patch was found.
    Fixed,
    /// Candidates were tried, none passed every test.
    NotFixed,
    /// Every test already passes.
    NothingToFix,
}

/// Everything a `fix` run learned.
pub struct FixOutcome {
    pub status: FixStatus,
    pub python: PathBuf,
    pub baseline: Session,
    pub failing: Vec<String>,
    pub localization: Localization,
    pub candidates: Vec<Candidate>,
    pub generate_stats: GenerateStats,
    /// Two-edit candidates added when single edits did not suffice.
    pub pair_candidates: usize,
    pub validated: Vec<Validated>,
    /// Index into `candidates` of the chosen patch.
    pub best: Option<usize>,
    /// `git apply`-able diff of the chosen patch.
    pub diff: Option<String>,
    pub warnings: Vec<String>,
    pub elapsed: Duration,
    pub baseline_elapsed: Duration,
    /// With `--rank smollm`: the model and the likelihoods of the plausible candidates.
    pub ranking: Option<Ranking>,
}

/// What likelihood ranking saw.
#[derive(Debug, Clone)]
pub struct Ranking {
    pub model: PathBuf,
    /// Candidate id → likelihoods, for every scored plausible candidate.
    pub scores: HashMap<usize, Naturalness>,
    pub stats: RankStats,
}

impl FixOutcome {
    #[must_use]
    pub fn best_candidate(&self) -> Option<&Candidate> {
        self.best.map(|i| &self.candidates[i])
    }
}

/// Progress of a run, for the CLI's progress bar.
#[derive(Debug, Clone)]
pub enum FixEvent {
    BaselineStarted,
    CandidatesReady { count: usize },
    Validated { candidate_id: usize, outcome_name: &'static str },
    /// Plausible candidates are being scored by the language model.
    Ranking { count: usize },
}

/// Run `fix`. The user's repository is only read; all test runs happen in scratch copies.
///
/// # Errors
/// When the project, Python or pytest are unusable, or the baseline cannot run the tests.
pub fn fix(options: &FixOptions, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<FixOutcome, FixError> {
    let start = Instant::now();
    let deadline = start + options.timeout;
    let project = Project::load(&options.repo)?;
    // Load the patcher first: a bad model directory should fail before the baseline runs.
    let mut sampler = match &options.neural {
        Some(neural) => {
            let sampler = crate::model::Sampler::load_default(&crate::model::ModelDir::new(&neural.model))?;
            if sampler.config().task != crate::model::Task::Patch {
                return Err(FixError::WrongTask(neural.model.clone(), sampler.config().task.name()));
            }
            Some(sampler)
        }
        None => None,
    };
    let mut warnings: Vec<String> = project.warnings().iter().map(ToString::to_string).collect();
    let mut ranker = match &options.rank {
        Some(rank) => match Ranker::load(&rank.gguf) {
            Ok(ranker) => Some(ranker),
            Err(err) if !rank.required => {
                warnings.push(format!("SmolLM2 ranking is off ({err}): plausible patches are ranked by operator score"));
                None
            }
            Err(err) => return Err(FixError::Ranker(err)),
        },
        None => None,
    };
    let (pytest, sandbox_warning) =
        crate::pytest::for_project(project.root(), options.python.as_deref(), options.sandbox, &options.docker)?;
    warnings.extend(sandbox_warning);
    let python = pytest.python().to_path_buf();
    // The validation engines start now: their fork servers import pytest and collect the
    // suite while the baseline runs, and every search phase below reuses them.
    let pool = match options.engine {
        EngineChoice::Fork => lab::Pool::start(&pytest, project.root(), &options.selectors, options.jobs)?,
        EngineChoice::Subprocess => lab::Pool::default(),
    };

    on_event(FixEvent::BaselineStarted);
    // The baseline runs in a scratch copy too: tests may write files.
    let scratch = lab::scratch_copy(project.root(), "deepdebug-baseline-")?;
    let baseline = pytest.run(&RunSpec {
        selectors: &options.selectors,
        ..RunSpec::baseline(scratch.path(), options.baseline_test_timeout, options.timeout)
    })?;
    let baseline_elapsed = start.elapsed();
    if baseline.exit.is_timeout() {
        return Err(FixError::BaselineTimeout(options.timeout));
    }
    if !baseline.collect_errors.is_empty() {
        return Err(FixError::CollectionErrors(baseline.collect_errors.clone()));
    }
    if baseline.tests.is_empty() {
        return Err(FixError::NoTests(baseline.output_tail.clone()));
    }
    // Failing tests that hung in the baseline go last: they are the slowest to reject.
    let mut failing: Vec<&crate::pytest::TestResult> = baseline.failing().collect();
    failing.sort_by_key(|t| t.outcome == crate::pytest::TestOutcome::Timeout);
    let failing: Vec<String> = failing.into_iter().map(|t| t.nodeid.clone()).collect();
    let mut outcome = FixOutcome {
        status: FixStatus::NothingToFix,
        python,
        failing: failing.clone(),
        localization: Localization::default(),
        candidates: Vec::new(),
        generate_stats: GenerateStats::default(),
        pair_candidates: 0,
        validated: Vec::new(),
        best: None,
        diff: None,
        warnings,
        elapsed: Duration::ZERO,
        baseline_elapsed,
        baseline,
        ranking: ranker.as_ref().map(|r| Ranking { model: r.path().to_path_buf(), scores: HashMap::new(), stats: RankStats::default() }),
    };
    if failing.is_empty() {
        outcome.elapsed = start.elapsed();
        return Ok(outcome);
    }
    outcome.localization = localize(&project, &outcome.baseline);
    let (mut candidates, mut stats) =
        candidate::generate(&project, &outcome.localization, options.limits, &options.priors);
    if let (Some(neural), Some(sampler)) = (&options.neural, sampler.as_mut()) {
        let (proposed, neural_stats) =
            candidate::generate_neural(&project, &outcome.localization, sampler, &neural.limits)?;
        let (merged, duplicates) = candidate::merge(candidates, proposed, options.limits.max_candidates);
        candidates = merged;
        stats.proposed += neural_stats.proposed;
        stats.unparseable += neural_stats.unparseable;
        stats.duplicates += neural_stats.duplicates + duplicates;
    }
    outcome.candidates = candidates;
    outcome.generate_stats = stats;
    on_event(FixEvent::CandidatesReady { count: outcome.candidates.len() });

    let passing: BTreeSet<String> = outcome
        .baseline
        .tests
        .iter()
        .filter(|t| t.outcome.is_ok())
        .map(|t| t.nodeid.clone())
        .collect();
    // Leave time for the confirmation runs of a plausible patch within the budget.
    // A confirmation run costs about the baseline without its hangs.
    let timeouts = Timeouts::from_baseline(&outcome.baseline);
    let suite: f64 = outcome
        .baseline
        .tests
        .iter()
        .filter(|t| t.outcome != crate::pytest::TestOutcome::Timeout)
        .map(|t| t.duration)
        .sum();
    let one_run = timeouts.startup + Duration::from_secs_f64(suite);
    let reserve = (one_run * u32::try_from(CONFIRMATION_RUNS).unwrap_or(2)).min(options.timeout.mul_f64(0.4));
    let search_deadline = deadline.checked_sub(reserve).unwrap_or(deadline);
    let config = LabConfig {
        root: project.root(),
        selectors: &options.selectors,
        failing,
        passing,
        total_tests: outcome.baseline.tests.len(),
        timeouts,
        deadline: search_deadline,
        jobs: options.jobs,
        stop_after_plausible: 1,
        engine: options.engine,
        baseline: &outcome.baseline,
    };
    let notes = std::sync::Mutex::new(Vec::<String>::new());
    let forward = |event: LabEvent| match event {
        LabEvent::Validated { candidate_id, outcome_name } => {
            on_event(FixEvent::Validated { candidate_id, outcome_name });
        }
        LabEvent::Note(note) => {
            let mut notes = notes.lock().expect("notes lock");
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    };
    // Search until a plausible patch survives confirmation by fresh full-suite runs: single
    // edits first, then (from 55% of the budget, or when single edits run out) pairs of edits
    // seeded by partial fixes, then the remaining single edits.
    let mut validated: Vec<Validated> = Vec::new();
    let mut best = None;
    let search_start = Instant::now();
    let pairs_at = search_start + search_deadline.saturating_duration_since(search_start).mul_f64(0.55);
    let mut phase = Phase::Single;
    // With a ranker: whether the extra collection of plausible patches has run.
    let mut collected = false;
    // An optional ranker that failed once is not tried again.
    let mut ranker_failed = false;
    loop {
        if Instant::now() >= search_deadline {
            break;
        }
        let mut round_config = config.clone();
        if phase == Phase::Single {
            round_config.deadline = pairs_at;
        }
        let done: HashSet<usize> = validated.iter().map(|v| v.candidate_id).collect();
        let round = lab::run_in(&pool, &pytest, &round_config, &outcome.candidates, &done, &forward)?;
        let exhausted = round.is_empty();
        validated.extend(round);
        if let (Some(ranker), Some(rank_options), Some(ranking)) = (ranker.as_mut(), &options.rank, outcome.ranking.as_mut()) {
            let plausible = validated.iter().filter(|v| v.outcome.is_plausible()).count();
            if !collected && plausible > 0 {
                // Keep searching, in rank order, for more plausible patches to choose from.
                collected = true;
                let now = Instant::now();
                if plausible < rank_options.max_plausible && now < search_deadline {
                    let mut extra = config.clone();
                    let share = search_deadline.saturating_duration_since(now).mul_f64(rank_options.extra_share);
                    let effort = now.saturating_duration_since(search_start).mul_f64(rank_options.extra_factor).max(MIN_EXTRA);
                    extra.deadline = now + share.min(effort);
                    extra.stop_after_plausible = rank_options.max_plausible - plausible;
                    let done: HashSet<usize> = validated.iter().map(|v| v.candidate_id).collect();
                    validated.extend(lab::run_in(&pool, &pytest, &extra, &outcome.candidates, &done, &forward)?);
                }
            }
            let unscored: Vec<&Candidate> = validated
                .iter()
                .filter(|v| v.outcome.is_plausible() && !ranking.scores.contains_key(&v.candidate_id))
                .map(|v| &outcome.candidates[v.candidate_id])
                .collect();
            if !unscored.is_empty() && Instant::now() >= search_deadline {
                // Scoring must not eat the confirmation reserve: rank by operator score alone.
                let note = "SmolLM2 ranking skipped for lack of time: plausible patches ranked by operator score".to_string();
                let mut notes = notes.lock().expect("notes lock");
                if !notes.contains(&note) {
                    notes.push(note);
                }
            } else if !unscored.is_empty() && !ranker_failed {
                on_event(FixEvent::Ranking { count: unscored.len() });
                match ranking.stats.run(ranker, &project, &unscored) {
                    Ok(scores) => ranking.scores.extend(scores),
                    Err(err) if !rank_options.required => {
                        // Every plausible patch is ranked the same way: by operator score.
                        ranking.scores.clear();
                        ranker_failed = true;
                        let note = format!("SmolLM2 ranking failed ({err}): plausible patches ranked by operator score");
                        notes.lock().expect("notes lock").push(note);
                    }
                    Err(err) => return Err(FixError::Ranker(err)),
                }
            }
        }
        let key = |c: &Candidate| match &outcome.ranking {
            Some(ranking) => rank::combined(c.score, ranking.scores.get(&c.id)),
            None => c.score,
        };
        let mut chose = false;
        while let Some(choice) = choose_best(&outcome.candidates, &validated, &key) {
            chose = true;
            let verdict = lab::confirm(&pytest, &config, &outcome.candidates[choice], CONFIRMATION_RUNS)?;
            if verdict.is_plausible() {
                best = Some(choice);
                break;
            }
            if let Some(v) = validated.iter_mut().find(|v| v.candidate_id == choice) {
                v.outcome = verdict;
            }
            // With a ranker the collected runners-up are confirmed next; without, the search
            // goes on (at most one plausible candidate is waiting).
            if outcome.ranking.is_none() || Instant::now() >= deadline {
                break;
            }
        }
        if best.is_some() {
            break;
        }
        if chose {
            continue;
        }
        if phase == Phase::Single && (exhausted || Instant::now() >= pairs_at) {
            phase = Phase::Pairs;
            let by_id = |id: usize| &outcome.candidates[id];
            let mut seeds: Vec<&Candidate> = validated
                .iter()
                .filter(|v| v.outcome.is_partial_fix())
                .map(|v| by_id(v.candidate_id))
                .collect();
            let partners: Vec<&Candidate> = outcome
                .candidates
                .iter()
                .filter(|c| matches!(c.source, candidate::Source::Operator(_)))
                .take(PAIR_PARTNERS)
                .collect();
            if seeds.is_empty() {
                seeds = partners.iter().copied().take(PAIR_SEEDS_WITHOUT_PARTIAL_FIXES).collect();
            }
            let next_id = outcome.candidates.len();
            let pairs = candidate::pairs(&project, &seeds, &partners, next_id, MAX_PAIRS);
            on_event(FixEvent::CandidatesReady { count: outcome.candidates.len() + pairs.len() });
            outcome.pair_candidates = pairs.len();
            // Pairs are validated before the remaining single edits.
            let mut ordered = pairs;
            let (tried, untried): (Vec<Candidate>, Vec<Candidate>) =
                std::mem::take(&mut outcome.candidates).into_iter().partition(|c| done.contains(&c.id) || validated.iter().any(|v| v.candidate_id == c.id));
            let map = renumber(&mut outcome.candidates, tried, &mut ordered, untried, &mut validated);
            if let Some(ranking) = outcome.ranking.as_mut() {
                ranking.scores = ranking.scores.drain().map(|(id, n)| (map[&id], n)).collect();
            }
            continue;
        }
        if exhausted {
            break;
        }
    }
    validated.sort_by_key(|v| v.candidate_id);
    drop(config);
    outcome.validated = validated;
    outcome.best = best;
    outcome.warnings.extend(notes.into_inner().expect("notes lock"));
    outcome.status = if outcome.best.is_some() { FixStatus::Fixed } else { FixStatus::NotFixed };
    if let Some(best) = outcome.best_candidate() {
        let original = project.file(&best.patch.file).map(|f| f.parsed.text()).unwrap_or_default();
        outcome.diff = Some(unified_diff(&best.patch.file, original, &best.patched_text));
    }
    outcome.elapsed = start.elapsed();
    Ok(outcome)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Single,
    Pairs,
}

/// Top single edits that partner with seeds in two-edit candidates.
const PAIR_PARTNERS: usize = 60;
/// Seeds taken from the top single edits when no candidate fixed part of the failing tests.
const PAIR_SEEDS_WITHOUT_PARTIAL_FIXES: usize = 15;
const MAX_PAIRS: usize = 1500;

/// Put `tried` first, then `pairs`, then `untried` into `out`, giving every candidate its new
/// position as id and rewriting the ids in `validated`. Returns the map old id → new id.
fn renumber(
    out: &mut Vec<Candidate>,
    tried: Vec<Candidate>,
    pairs: &mut Vec<Candidate>,
    untried: Vec<Candidate>,
    validated: &mut [Validated],
) -> HashMap<usize, usize> {
    let mut all: Vec<Candidate> = tried;
    all.append(pairs);
    all.extend(untried);
    let mut map = HashMap::new();
    for (new_id, c) in all.iter_mut().enumerate() {
        map.insert(c.id, new_id);
        c.id = new_id;
    }
    for v in validated {
        v.candidate_id = map[&v.candidate_id];
    }
    *out = all;
    map
}

/// Fresh full-suite runs a plausible patch must pass before it is reported (the second
/// rejects flaky passes).
const CONFIRMATION_RUNS: usize = 2;

/// Among plausible candidates: highest `key` (the score, localization × operator prior, or
/// with a ranker `rank::combined`), then the smallest edit, then the earliest generated.
fn choose_best(candidates: &[Candidate], validated: &[Validated], key: &dyn Fn(&Candidate) -> f64) -> Option<usize> {
    validated
        .iter()
        .filter(|v| v.outcome == CandidateOutcome::Plausible)
        .map(|v| &candidates[v.candidate_id])
        .min_by(|a, b| {
            key(b)
                .total_cmp(&key(a))
                .then_with(|| a.edit_size.cmp(&b.edit_size))
                .then_with(|| a.id.cmp(&b.id))
        })
        .map(|c| c.id)
}
