//! `fix` end to end: baseline, localization, candidate generation, validation, choice of patch.

use crate::exit_code::ExitCode;
use crate::localize::{localize, Localization};
use crate::patch::unified_diff;
use crate::project::{Project, ProjectError};
use crate::pytest::{CollectError, PytestError, RunSpec, Session};
use crate::repair::candidate::{Candidate, CandidateId, GenerateLimits, NeuralLimits};
use crate::repair::choose::behaviour::{self, ReturnCheck, Watched};
use crate::repair::choose::guard::{self, Confirmation, Guard, GuardPlan, GuardSummary, PendingGuard, RestOfSuite};
use crate::repair::choose::minimal;
use crate::repair::choose::overfit::{self, AntiPattern};
use crate::repair::choose::rank::{self, Naturalness, RankStats, Ranker};
use crate::repair::generate::cloze::{ClozeOptions, ClozeSource, ClozeStats};
use crate::repair::generate::patcher::{ModelTurns, PatcherSource};
use crate::repair::generate::{CombinationSource, OperatorSource, TemplateSource};
use crate::repair::learn::priors::Priors;
use crate::repair::learn::templates::Templates;
use crate::repair::search::{self, CandidateSource, Search, SourceKind, SourceStats};
use crate::repair::validate::{self, EngineChoice, LabConfig, LabError, LabEvent, Timeouts, Validated};
use crate::sandbox::{DockerConfig, SandboxError, SandboxKind};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of `deepdebug fix`.
#[derive(Debug, Clone)]
pub struct FixOptions {
    pub repo: PathBuf,
    /// Wall-clock budget for the whole run, baseline included.
    pub timeout: Duration,
    /// pytest selectors (paths, node ids) naming the failing tests to fix; empty = every
    /// failing test. The rest of the suite still guards against regressions, unless
    /// `tests_only`.
    pub selectors: Vec<String>,
    /// Run only the selected tests, baseline and validation alike (`--tests-only`; unsafe: a
    /// patch may break tests outside the selection).
    pub tests_only: bool,
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
    /// Language-model candidates (`None`: off).
    pub lm: Option<ClozeOptions>,
    /// Learned fix templates (`None`: off).
    pub templates: Option<Arc<Templates>>,
    /// Files and functions no candidate may edit.
    pub exclude: crate::exclude::Exclude,
    /// Report a confirmed patch with an anti-pattern as a fix; by default it is only
    /// suggested ([`FixStatus::Suggested`]).
    pub accept_overfit: bool,
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
    /// The collection also stops after this many times as many candidates as the search
    /// validated before the first plausible patch (but at least [`MIN_EXTRA_CANDIDATES`]):
    /// effort in proportion to the bug's.
    pub extra_factor: f64,
}

/// The fewest candidates the collection of more plausible patches validates (see
/// [`RankOptions::extra_factor`]), time permitting.
pub const MIN_EXTRA_CANDIDATES: usize = 300;

impl RankOptions {
    /// Up to 5 plausible patches within 30% of the remaining search time and 3× the candidates
    /// the first one took (at least [`MIN_EXTRA_CANDIDATES`]); the model must work.
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
    /// Model directory: a T5 model (config.json, tokenizer.json, model.safetensors) or a LoRA
    /// adapter on SmolLM2 (adapter_config.json, adapter_model.safetensors).
    pub model: PathBuf,
    pub limits: NeuralLimits,
    /// The bundled patcher (`fix`'s default): failing to load it is only a warning, and it
    /// waits for the language-model lines' first window. A patcher asked for must load, and
    /// goes first.
    pub bundled: bool,
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
    /// The selectors' files ran, but none of the tests `--tests` named.
    #[error("none of the tests given with --tests ran ({}); `python -m pytest` with them in the project shows why", .0.join(", "))]
    SelectedNotRun(Vec<String>),
    /// pytest refused its command line: usually `addopts` naming an option of a plugin that the
    /// project's Python environment lacks.
    #[error("pytest rejected its options ({0}): the project's pytest configuration (addopts in pytest.ini, pyproject.toml, setup.cfg or tox.ini) may need a plugin that is not installed in the Python environment `fix` uses (its .venv, or python3); install it there")]
    PytestUsage(String),
    #[error("the test suite found no failing test within its share of the budget ({}s of --timeout {}s): name the failing test with --tests NODEID, or raise --timeout", .left.as_secs_f64().round(), .timeout.as_secs_f64().round())]
    BaselineTimeout { timeout: Duration, left: Duration },
    #[error("patcher model: {0}")]
    Model(#[from] crate::model::ModelError),
    #[error("`{path}` is a {task} model; `fix --model` needs a patch model (`train --task patch`)", path = .0.display(), task = .1)]
    WrongTask(PathBuf, &'static str),
    #[error("SmolLM2 ranker: {0}")]
    Ranker(#[source] crate::model::ModelError),
}

impl FixError {
    /// The documented exit code of `fix` stopped by this error (see [`ExitCode`]): the
    /// environment (no Python or pytest, sandbox, ranker, pytest options), a baseline that
    /// cannot be used, a usage error, or an internal failure.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            FixError::Pytest(
                PytestError::PythonMissing(_)
                | PytestError::PytestMissing { .. }
                | PytestError::PythonUnresponsive { .. }
                | PytestError::Sandbox(_),
            )
            | FixError::Sandbox(_)
            | FixError::Ranker(_)
            | FixError::PytestUsage(_) => ExitCode::Environment,
            FixError::CollectionErrors(_)
            | FixError::NoTests(_)
            | FixError::SelectedNotRun(_)
            | FixError::BaselineTimeout { .. } => ExitCode::BaselineBroken,
            FixError::Project(ProjectError::NotADirectory(_))
            | FixError::Model(crate::model::ModelError::NotAModel(_))
            | FixError::WrongTask(..) => ExitCode::Usage,
            _ => ExitCode::Software,
        }
    }
}

fn format_collect_errors(errors: &[CollectError]) -> String {
    errors
        .iter()
        .map(|e| {
            let last = crate::text::last_line(&e.message);
            format!("  {}: {last}", if e.nodeid.is_empty() { "<session>" } else { &e.nodeid })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tail_hint(tail: &str) -> String {
    let last = crate::text::last_line(tail);
    if last.is_empty() {
        String::new()
    } else {
        format!(" ({last})")
    }
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixStatus {
    /// A plausible patch was found and confirmed: `best`.
    Fixed { best: CandidateId },
    /// The only confirmed plausible patch shows an anti-pattern ([`overfit`]): it may fit the
    /// tests rather than fix the bug, so it is offered as a suggestion, not reported as a fix
    /// (unless [`FixOptions::accept_overfit`]).
    Suggested { best: CandidateId },
    /// Candidates were tried, none passed every test.
    NotFixed,
    /// Every test already passes.
    NothingToFix,
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchEnd {
    /// A confirmed plausible patch.
    Found,
    /// The search deadline (the budget less the confirmation reserve).
    Deadline,
    /// Every source ran out of candidates.
    Exhausted,
    /// No search ran (nothing to fix).
    NotStarted,
}

/// Everything a `fix` run learned.
pub struct FixOutcome {
    pub status: FixStatus,
    pub python: PathBuf,
    pub baseline: Session,
    pub failing: Vec<String>,
    pub localization: Localization,
    /// Every candidate the search admitted, indexed by [`CandidateId`].
    pub candidates: Vec<Arc<Candidate>>,
    /// Per source: proposals, candidates, validations, plausible patches, seconds.
    pub sources: Vec<(SourceKind, SourceStats)>,
    /// Validation results, by candidate id.
    pub validated: Vec<Validated>,
    /// `git apply`-able diff of the chosen patch (the fix, or the suggestion).
    pub diff: Option<String>,
    /// The diff of every plausible candidate (the chosen one and its alternatives), by id.
    pub plausible_diffs: HashMap<CandidateId, String>,
    pub warnings: Vec<String>,
    pub elapsed: Duration,
    pub baseline_elapsed: Duration,
    /// From the end of the baseline to the first validation result (`None`: none came).
    pub first_validation: Option<Duration>,
    /// Wall time of the validation rounds (what candidates per second divide by).
    pub validation_elapsed: Duration,
    pub search_end: SearchEnd,
    /// What the language-model source did (`None`: it was off).
    pub lm: Option<ClozeStats>,
    /// With `--rank smollm`: the model and the likelihoods of the plausible candidates.
    pub ranking: Option<Ranking>,
    /// The regression guard: its size, what checked the patch, what was left out.
    pub guard: GuardSummary,
    /// The anti-patterns ([`overfit`]) of every plausible candidate and every scored one, by
    /// id (an empty list: none).
    pub overfit: HashMap<CandidateId, Vec<AntiPattern>>,
}

/// What likelihood ranking saw.
#[derive(Debug, Clone)]
pub struct Ranking {
    pub model: PathBuf,
    /// Likelihoods of every scored plausible candidate.
    pub scores: HashMap<CandidateId, Naturalness>,
    pub stats: RankStats,
    /// Plausible candidates whose change contains another plausible one's
    /// ([`minimal::superseded`]), when the best was last chosen.
    pub superseded: HashSet<CandidateId>,
}

impl FixOutcome {
    /// The patch reported as the fix.
    #[must_use]
    pub fn best_candidate(&self) -> Option<&Candidate> {
        match self.status {
            FixStatus::Fixed { best } => Some(&self.candidates[best.0]),
            _ => None,
        }
    }

    /// The patch the search chose: the fix, or the suggestion that was not trusted as one.
    #[must_use]
    pub fn chosen_candidate(&self) -> Option<&Candidate> {
        match self.status {
            FixStatus::Fixed { best } | FixStatus::Suggested { best } => Some(&self.candidates[best.0]),
            _ => None,
        }
    }

    /// The anti-patterns of the chosen patch (empty: none, or no patch).
    #[must_use]
    pub fn chosen_overfit(&self) -> &[AntiPattern] {
        self.chosen_candidate().and_then(|c| self.overfit.get(&c.id)).map_or(&[], Vec::as_slice)
    }

    /// A fix with an anti-pattern becomes a suggestion: on the legacy real-bug suite almost
    /// every such patch failed the developer's hidden tests (datasets/legacy/README.md).
    fn distrust_overfit(&mut self) {
        if let FixStatus::Fixed { best } = self.status {
            if !self.chosen_overfit().is_empty() {
                self.status = FixStatus::Suggested { best };
            }
        }
    }

    /// The chosen patch's id.
    #[must_use]
    pub fn best(&self) -> Option<CandidateId> {
        self.best_candidate().map(|c| c.id)
    }
}

/// Progress of a run, for the CLI's progress bar.
#[derive(Debug, Clone)]
pub enum FixEvent {
    BaselineStarted,
    /// The search started; it ends by `deadline` at the latest.
    SearchStarted {
        deadline: Instant,
    },
    Validated {
        candidate_id: CandidateId,
        outcome: validate::OutcomeKind,
    },
    /// Plausible candidates are being scored by the language model.
    Ranking {
        count: usize,
    },
    /// The best plausible patch is being confirmed by fresh runs of the suite, until
    /// `deadline` at the latest (the end of the budget).
    Confirming {
        deadline: Instant,
    },
}

/// Run `fix`. The user's repository is only read; all test runs happen in scratch copies.
///
/// # Errors
/// When the project, Python or pytest are unusable, or the baseline cannot run the tests.
pub fn fix(options: &FixOptions, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<FixOutcome, FixError> {
    let start = Instant::now();
    let project = Project::load(&options.repo)?;
    let mut warnings: Vec<String> = project.warnings().iter().map(ToString::to_string).collect();
    // Models load first: a bad model directory should fail before the baseline runs.
    let sampler = load_patcher(options, &mut warnings)?;
    let ranker = load_ranker(options, &mut warnings)?;
    let (pytest, sandbox_warning) =
        crate::pytest::for_project(project.root(), options.python.as_deref(), options.sandbox, &options.docker)?;
    warnings.extend(sandbox_warning);
    // The validation engines start now: their fork servers import pytest and collect the
    // focus (the selected tests' files, or the whole suite) while the baseline runs.
    let focus = options.focus();
    let pool = validate::Pool::start(&pytest, project.root(), &focus, options.jobs, options.engine)?;
    on_event(FixEvent::BaselineStarted);
    let baseline = run_baseline(options, &pytest, &project, &focus, start)?;
    let mut outcome = FixOutcome::new(pytest.python().to_path_buf(), baseline, start.elapsed(), warnings);
    outcome.failing.retain(|id| options.tests_only || selected(id, &options.selectors));
    if options.selectors.is_empty() {
        outcome.set_aside_environment_hangs();
    }
    outcome.ranking = ranker.as_ref().map(|r| Ranking {
        model: r.path().to_path_buf(),
        scores: HashMap::new(),
        stats: RankStats::default(),
        superseded: HashSet::new(),
    });
    if outcome.failing.is_empty() {
        outcome.elapsed = start.elapsed();
        return Ok(outcome);
    }
    let mut guard = Guard::default();
    guard.absorb(&outcome.baseline, &outcome.failing);
    let pending = PendingGuard::default();
    let rest = options.guards_rest().then(|| RestOfSuite {
        focus_files: &focus,
        failing: &outcome.failing,
        per_test: options.baseline_test_timeout.min(GUARD_TEST_LIMIT),
        time_box: (start + options.timeout).saturating_duration_since(Instant::now()).mul_f64(GUARD_SHARE),
    });
    let searched = std::thread::scope(|scope| {
        match &rest {
            // The rest of the suite runs beside the search; its failures are only warnings.
            Some(rest) => {
                let (pytest, root, pending, base) = (&pytest, project.root(), &pending, guard.clone());
                scope.spawn(move || {
                    let learned = guard::run_rest(pytest, root, rest, base.clone()).unwrap_or(base);
                    pending.set(learned);
                });
            }
            None => pending.set(guard.clone()),
        }
        let engines = (&pytest, &pool, &pending, focus.as_slice());
        search_stage(options, &project, engines, &outcome, (sampler, ranker), start, on_event)
    });
    let searched = searched?;
    let learned = pending.get().unwrap_or(guard);
    outcome.warnings.extend(learned.warnings());
    outcome.guard = GuardSummary::new(&learned, searched.guarded);
    outcome.absorb_search(searched, &project, start);
    if !options.accept_overfit {
        outcome.distrust_overfit();
    }
    if outcome.best().is_some() && outcome.guard.thin() {
        outcome.warnings.push("the regression guard is thin: only the failing tests checked the patch (no other test of the suite passed before the change); review it with care".into());
    }
    Ok(outcome)
}

/// Per-test limit of the run of the rest of the suite (tests that wait on the network must
/// not hold the guard up).
const GUARD_TEST_LIMIT: Duration = Duration::from_secs(3);

/// Share of the time left after the baseline that the rest of the suite may take.
const GUARD_SHARE: f64 = 0.35;

/// Share of the budget the baseline of the focus (or the whole suite) may take before it
/// is cut; the tests it did not reach are left out of the guard.
const BASELINE_SHARE: f64 = 0.5;

/// What the search stage hands back to [`fix`].
struct Searched<'p> {
    localization: Localization,
    search: Search<'p>,
    best: Option<CandidateId>,
    end: SearchEnd,
    run: RunResults,
    handles: Handles,
    /// Baseline-passing tests that guarded the reported patch at its confirmation.
    guarded: Option<usize>,
}

/// Localization, sources, search, ranking and confirmation.
fn search_stage<'p>(
    options: &FixOptions,
    project: &'p Project,
    (pytest, pool, guard, focus): (&crate::pytest::Pytest, &validate::Pool, &PendingGuard, &[String]),
    outcome: &FixOutcome,
    (sampler, ranker): (Option<(crate::model::Patcher, NeuralLimits)>, Option<Ranker>),
    start: Instant,
    on_event: &(dyn Fn(FixEvent) + Sync),
) -> Result<Searched<'p>, FixError> {
    let mut localization = localize(project, &outcome.without_unselected_failures());
    localization.retain_editable(project, &options.exclude);
    let budget = Budget::new(start, options.timeout, &outcome.baseline, options.guards_rest());
    let note = trace_note(outcome);
    let (sources, handles) = sources(options, project, (&localization, &note), sampler);
    let search = Mutex::new(Search::new(project, sources, budget.late_at).excluding(options.exclude.clone()));
    let ranking = outcome.ranking.clone();
    on_event(FixEvent::SearchStarted { deadline: budget.search_deadline });
    let (best, end, run) = {
        let config = lab_config((options, focus), project, outcome, budget.search_deadline);
        let validation = Validation { pytest, pool, config };
        let mut run = SearchRun::new(options, project, validation, &search, (ranker, ranking), &budget);
        run.guard = Some(guard);
        let (best, end) = run.search_and_confirm(on_event)?;
        (best, end, run.finish())
    };
    let guarded = run.guarded;
    let search = search.into_inner().expect("search lock");
    Ok(Searched { localization, search, best, end, run, handles, guarded })
}

impl FixOutcome {
    /// Take over what the search stage learned.
    fn absorb_search(&mut self, searched: Searched<'_>, project: &Project, start: Instant) {
        let Searched { localization, search, best, end, run, handles, .. } = searched;
        self.localization = localization;
        self.ranking = run.ranking;
        self.warnings.extend(run.notes);
        self.first_validation =
            run.first_validated.map(|t| t.saturating_duration_since(start).saturating_sub(self.baseline_elapsed));
        self.validated = search.validated();
        self.validation_elapsed = run.validating;
        self.lm = handles.lm.map(|stats| stats.lock().expect("cloze stats").clone());
        if let Some(err) = self.lm.as_ref().and_then(|lm| lm.error.as_ref()) {
            self.warnings.push(format!("language-model candidates stopped: {err}"));
        }
        if let Some(err) = handles.patcher_error.and_then(|e| e.lock().expect("patcher error").take()) {
            self.warnings.push(format!("patcher candidates stopped: {err}"));
        }
        self.finish(project, &search, best, end, start.elapsed());
        for (id, flags) in run.behaviour {
            let patterns = self.overfit.entry(id).or_default();
            patterns.extend(flags);
            patterns.sort();
            patterns.dedup();
        }
        let plausible: Vec<&Candidate> = (self.validated.iter())
            .filter(|v| v.outcome.is_plausible())
            .map(|v| self.candidates[v.candidate_id.0].as_ref())
            .collect();
        overfit::inherit(project, &plausible, &mut self.overfit);
    }
}

/// The trained patcher of `--model`, checked to be a patch model.
fn load_patcher(
    options: &FixOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<(crate::model::Patcher, NeuralLimits)>, FixError> {
    let Some(neural) = &options.neural else { return Ok(None) };
    let sampler = match crate::model::Patcher::load(&neural.model) {
        Ok(sampler) => sampler,
        Err(err) if neural.bundled => {
            warnings.push(format!("patcher candidates are off ({err})"));
            return Ok(None);
        }
        Err(err) => return Err(err.into()),
    };
    if sampler.task() != crate::model::Task::Patch {
        return Err(FixError::WrongTask(neural.model.clone(), sampler.task().name()));
    }
    Ok(Some((sampler, neural.limits.clone())))
}

/// The SmolLM2 ranker of `--rank`; an optional one that cannot load only warns.
fn load_ranker(options: &FixOptions, warnings: &mut Vec<String>) -> Result<Option<Ranker>, FixError> {
    let Some(rank) = &options.rank else { return Ok(None) };
    match Ranker::load(&rank.gguf) {
        Ok(ranker) => Ok(Some(ranker)),
        Err(err) if !rank.required => {
            warnings.push(format!("SmolLM2 ranking is off ({err}): plausible patches are ranked by operator score"));
            Ok(None)
        }
        Err(err) => Err(FixError::Ranker(err)),
    }
}

/// The focus once, with coverage, in a scratch copy: the selected tests' files (or the whole
/// suite without `--tests`), tolerant of modules that cannot be collected and cut at its share
/// of the budget. A cut focus that missed a selected test is followed by a run of the
/// selectors alone.
fn run_baseline(
    options: &FixOptions,
    pytest: &crate::pytest::Pytest,
    project: &Project,
    focus: &[String],
    start: Instant,
) -> Result<Session, FixError> {
    let scratch = validate::scratch_copy(project.root(), "deepdebug-baseline-")?;
    let deadline = start + options.timeout;
    let share = |d: Instant| d.saturating_duration_since(Instant::now()).mul_f64(BASELINE_SHARE);
    let box_end = Instant::now() + share(deadline);
    let run = |tests: &[String], until: Instant| {
        let left = until.saturating_duration_since(Instant::now());
        pytest.run(&RunSpec::baseline(scratch.path(), options.baseline_test_timeout, left).of(tests))
    };
    let mut baseline = run(focus, box_end)?;
    let missed = |session: &Session| {
        let ran: HashSet<&str> = session.tests.iter().map(|t| t.nodeid.as_str()).collect();
        options.selectors.iter().any(|s| s.contains("::") && !ran.contains(s.as_str()))
    };
    if baseline.exit.is_timeout() && !options.selectors.is_empty() && missed(&baseline) {
        baseline = run(&options.selectors, Instant::now() + share(deadline))?;
    }
    check_baseline(options, baseline, share(deadline).max(options.timeout.mul_f64(BASELINE_SHARE)))
}

/// A baseline that ran no test, or no failing test before its time box, stops `fix`; one
/// that ran any is good (modules that could not be collected become warnings).
fn check_baseline(options: &FixOptions, baseline: Session, left: Duration) -> Result<Session, FixError> {
    let failing = baseline.failing().any(|t| selected(&t.nodeid, &options.selectors));
    if baseline.exit.is_timeout() && !failing {
        return Err(FixError::BaselineTimeout { timeout: options.timeout, left });
    }
    if baseline.tests.is_empty() {
        if let Some(usage) = crate::pytest::usage_error(&baseline.output_tail) {
            return Err(FixError::PytestUsage(usage));
        }
        if !baseline.collect_errors.is_empty() {
            return Err(FixError::CollectionErrors(baseline.collect_errors.clone()));
        }
        return Err(FixError::NoTests(baseline.output_tail.clone()));
    }
    if !options.selectors.is_empty() && !baseline.tests.iter().any(|t| selected(&t.nodeid, &options.selectors)) {
        return Err(FixError::SelectedNotRun(options.selectors.clone()));
    }
    Ok(baseline)
}

/// The trace note of the first failing test for the models' prompts: its error and the
/// locals of the innermost frame in project code (not a test's).
fn trace_note(outcome: &FixOutcome) -> String {
    let Some(test) = outcome.failing.first().and_then(|id| outcome.baseline.test(id)) else { return String::new() };
    let failure = test.failure.as_ref();
    let test_files = crate::localize::test_files(&outcome.baseline);
    let frame = failure.and_then(|f| {
        (f.frames.iter().rev()).find(|fr| {
            fr.in_project && !crate::project::is_test_path(&fr.file) && !test_files.contains(fr.file.as_str())
        })
    });
    let error_type = match failure {
        Some(f) if f.limit.is_some() => "Timeout",
        Some(f) => f.kind.as_str(),
        None => "",
    };
    crate::model::trace_note::Trace {
        test: Some(&test.nodeid),
        error_type,
        message: failure.map_or("", |f| f.message.as_str()),
        frame: frame.map(|f| (f.function.as_str(), &f.locals)),
    }
    .note()
}

/// The language-model sampler's statistics, shared with its thread.
type LmStats = Arc<Mutex<ClozeStats>>;

/// Every candidate source `options` asks for, in a fixed order.
fn sources<'p>(
    options: &FixOptions,
    project: &'p Project,
    (localization, note): (&Localization, &str),
    patcher: Option<(crate::model::Patcher, NeuralLimits)>,
) -> (Vec<Box<dyn CandidateSource + 'p>>, Handles) {
    let mut sources: Vec<Box<dyn CandidateSource + 'p>> = vec![Box::new(OperatorSource::new(
        project,
        &localization.lines,
        options.limits.max_lines,
        options.priors.clone(),
    ))];
    if let Some(templates) = &options.templates {
        sources.push(Box::new(TemplateSource::new(
            project,
            &localization.lines,
            options.limits.max_lines,
            Arc::clone(templates),
        )));
    }
    let mut handles = Handles::default();
    // The line sampler and the patcher share the CPU's model time by turns.
    let bundled = options.neural.as_ref().is_some_and(|n| n.bundled);
    let turns = (options.lm.is_some() && patcher.is_some()).then(|| Arc::new(ModelTurns::new(!bundled)));
    if let Some(lm) = &options.lm {
        let note = if lm.traces { note } else { "" };
        let (source, stats) = ClozeSource::start(project, localization, lm, note, turns.clone());
        handles.lm = Some(stats);
        sources.push(Box::new(source));
    }
    if let Some((sampler, limits)) = patcher {
        let note = if limits.traces { note } else { "" };
        let (source, error) = PatcherSource::start(project, (&localization.functions, note), sampler, &limits, turns);
        handles.patcher_error = Some(error);
        sources.push(Box::new(source));
    }
    sources.push(Box::new(CombinationSource::default()));
    (sources, handles)
}

/// What the background sources report after the search.
#[derive(Default)]
struct Handles {
    lm: Option<LmStats>,
    patcher_error: Option<Arc<Mutex<Option<String>>>>,
}

/// Where the budget goes: the search ends early enough for the confirmation runs.
struct Budget {
    deadline: Instant,
    search_deadline: Instant,
    /// With nothing to confirm at `search_deadline`, the search goes on until then: time for
    /// one confirmation run is left.
    last_call: Instant,
    /// When single edits have had their share and combinations may start without seeds.
    late_at: Instant,
    timeout: Duration,
    /// Fixed cost of one pytest session.
    startup: Duration,
}

impl Budget {
    /// A confirmation run costs about the baseline without its hangs; two must fit (at most
    /// 40% of the budget). While the rest of the suite is still being learned (`guard_pending`)
    /// the whole 40% is kept; [`SearchRun::refresh_budget`] gives back what the guard leaves.
    fn new(start: Instant, timeout: Duration, baseline: &Session, guard_pending: bool) -> Budget {
        let timeouts = Timeouts::from_baseline(baseline);
        let suite: f64 = baseline
            .tests
            .iter()
            .filter(|t| t.outcome != crate::pytest::TestOutcome::Timeout)
            .map(|t| t.duration)
            .sum();
        let one_run = timeouts.startup + Duration::from_secs_f64(suite);
        let reserve = (one_run * u32::try_from(CONFIRMATION_RUNS).unwrap_or(2)).min(timeout.mul_f64(0.4));
        let reserve = if guard_pending { timeout.mul_f64(0.4) } else { reserve };
        let deadline = start + timeout;
        let search_deadline = deadline.checked_sub(reserve).unwrap_or(deadline);
        let last_call = if guard_pending {
            search_deadline
        } else {
            deadline.checked_sub(one_run.mul_f64(1.2)).unwrap_or(deadline).max(search_deadline)
        };
        let now = Instant::now();
        let late_at = now + search_deadline.saturating_duration_since(now).mul_f64(SINGLE_EDIT_SHARE);
        Budget { deadline, search_deadline, last_call, late_at, timeout, startup: timeouts.startup }
    }
}

/// Share of the search time after which combinations may start without partial fixes.
const SINGLE_EDIT_SHARE: f64 = 0.55;

fn lab_config<'a>(
    (options, focus): (&FixOptions, &'a [String]),
    project: &'a Project,
    outcome: &'a FixOutcome,
    deadline: Instant,
) -> LabConfig<'a> {
    LabConfig {
        selectors: focus,
        failing: outcome.failing.clone(),
        stop_after_plausible: 1,
        ..LabConfig::for_baseline(project.root(), &outcome.baseline, options.engine, options.jobs, deadline)
    }
}

impl FixOptions {
    /// What the baseline and every validation session run: the user's selectors with
    /// `--tests-only`, else the files that hold them (passed by path, so pytest collects them
    /// whatever their names; their other tests guard with coverage), else the whole suite.
    #[must_use]
    pub fn focus(&self) -> Vec<String> {
        if self.tests_only {
            return self.selectors.clone();
        }
        let mut files: Vec<String> = Vec::new();
        for selector in &self.selectors {
            let file = guard::file_of(selector.trim_start_matches("./")).to_string();
            if !files.contains(&file) {
                files.push(file);
            }
        }
        files
    }

    /// Whether the rest of the suite runs beside the search to guard plausible patches: with
    /// selectors, unless `--tests-only`.
    fn guards_rest(&self) -> bool {
        !self.selectors.is_empty() && !self.tests_only
    }
}

/// Whether pytest node id `nodeid` falls under one of `selectors` (a node id, a node id
/// prefix of parametrized cases, a file or a directory); every test when there are none.
#[must_use]
pub fn selected(nodeid: &str, selectors: &[String]) -> bool {
    selectors.is_empty()
        || selectors.iter().any(|selector| {
            let selector = selector.trim_start_matches("./").trim_end_matches('/');
            nodeid == selector
                || nodeid
                    .strip_prefix(selector)
                    .is_some_and(|rest| rest.starts_with("::") || rest.starts_with('[') || rest.starts_with('/'))
        })
}

/// Failing tests of the baseline; those that hung go last (the slowest to reject).
fn failing_tests(baseline: &Session) -> Vec<String> {
    let mut failing: Vec<&crate::pytest::TestResult> = baseline.failing().collect();
    failing.sort_by_key(|t| t.outcome == crate::pytest::TestOutcome::Timeout);
    failing.into_iter().map(|t| t.nodeid.clone()).collect()
}

impl FixOutcome {
    fn new(python: PathBuf, baseline: Session, baseline_elapsed: Duration, warnings: Vec<String>) -> FixOutcome {
        FixOutcome {
            status: FixStatus::NothingToFix,
            python,
            failing: failing_tests(&baseline),
            localization: Localization::default(),
            candidates: Vec::new(),
            sources: Vec::new(),
            validated: Vec::new(),
            diff: None,
            plausible_diffs: HashMap::new(),
            warnings,
            elapsed: baseline_elapsed,
            baseline_elapsed,
            first_validation: None,
            validation_elapsed: Duration::ZERO,
            search_end: SearchEnd::NotStarted,
            lm: None,
            baseline,
            ranking: None,
            guard: GuardSummary::default(),
            overfit: HashMap::new(),
        }
    }

    /// Without `--tests`: tests that hung without running a line of project code (waiting on
    /// a network or a service the sandbox does not have) are not repair targets while other
    /// tests fail; they are left out with a warning that says how to include them.
    fn set_aside_environment_hangs(&mut self) {
        let test_files = crate::localize::test_files(&self.baseline);
        let hung_outside = |id: &String| {
            self.baseline.test(id).is_some_and(|t| {
                t.outcome == crate::pytest::TestOutcome::Timeout
                    && t.coverage
                        .keys()
                        .all(|file| crate::project::is_test_path(file) || test_files.contains(file.as_str()))
            })
        };
        let (hung, rest): (Vec<String>, Vec<String>) = self.failing.iter().cloned().partition(hung_outside);
        if hung.is_empty() || rest.is_empty() {
            return;
        }
        self.warnings.push(format!(
            "{} test(s) hung without running project code (waiting on a network or service?) and are not repair targets: {}{}; name them with --tests to include them",
            hung.len(),
            hung.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            if hung.len() > 3 { ", ..." } else { "" }
        ));
        self.failing = rest;
    }

    /// The baseline without the failing tests outside the selection (what localization sees).
    fn without_unselected_failures(&self) -> Session {
        let mut view = self.baseline.clone();
        view.tests.retain(|t| t.outcome.is_ok() || self.failing.contains(&t.nodeid));
        view
    }

    fn finish(
        &mut self,
        project: &Project,
        search: &Search<'_>,
        best: Option<CandidateId>,
        end: SearchEnd,
        elapsed: Duration,
    ) {
        self.candidates = search.candidates().to_vec();
        self.sources = search.stats();
        self.search_end = end;
        self.status = best.map_or(FixStatus::NotFixed, |best| FixStatus::Fixed { best });
        let scored = |id: &CandidateId| self.ranking.as_ref().is_some_and(|r| r.scores.contains_key(id));
        self.overfit = (self.validated.iter())
            .filter(|v| v.outcome.is_plausible() || scored(&v.candidate_id))
            .map(|v| {
                let mut patterns = overfit::of_candidate(project, search.candidate(v.candidate_id));
                let naturalness = self.ranking.as_ref().and_then(|r| r.scores.get(&v.candidate_id));
                patterns.extend(rank::unnatural(naturalness).then_some(AntiPattern::Unnatural));
                (v.candidate_id, patterns)
            })
            .collect();
        let diff = |c: &Candidate| {
            let original = project.file(&c.patch.file).map(|f| f.parsed.text()).unwrap_or_default();
            unified_diff(&c.patch.file, original, &c.patched_text)
        };
        self.plausible_diffs = (self.validated.iter())
            .filter(|v| v.outcome.is_plausible())
            .map(|v| (v.candidate_id, diff(search.candidate(v.candidate_id))))
            .collect();
        self.diff = self.chosen_candidate().map(diff);
        self.elapsed = elapsed;
    }
}

/// The search's state across validation rounds: rounds stop at a plausible patch, which is
/// ranked and confirmed before the search goes on.
struct SearchRun<'r, 'p> {
    options: &'r FixOptions,
    project: &'p Project,
    pytest: &'r crate::pytest::Pytest,
    pool: &'r validate::Pool,
    config: LabConfig<'r>,
    search: &'r Mutex<Search<'p>>,
    ranker: Option<Ranker>,
    ranking: Option<Ranking>,
    notes: Mutex<Vec<String>>,
    /// When the first validation result came.
    first_validated: std::sync::OnceLock<Instant>,
    /// The whole run's deadline (confirmation included).
    deadline: Instant,
    /// Until when a search with nothing to confirm may go on past its own deadline.
    last_call: Instant,
    /// The regression guard, learned beside the search (`None`: the baseline's tests only).
    guard: Option<&'r PendingGuard>,
    /// Whether the budget has been fitted to the learned guard.
    budget_fitted: bool,
    timeout: Duration,
    startup: Duration,
    /// Baseline-passing tests that guarded the confirmed patch.
    guarded: Option<usize>,
    /// Wall time spent in validation rounds.
    validating: Duration,
    /// A confirmed plausible patch with anti-patterns, and them: reported only if the search
    /// finds no plausible patch without any before its deadline.
    fallback: Option<(CandidateId, Vec<AntiPattern>)>,
    /// What the chosen plausible patches' functions return on the tests' inputs.
    returns: ReturnCheck<'r>,
    /// The behavioural anti-patterns of every plausible patch checked so far (empty: none).
    behaviour: HashMap<CandidateId, Vec<AntiPattern>>,
    /// Plausible patches whose change contains a flagged one's, as of the last choice.
    inherited: HashSet<CandidateId>,
}

/// What a [`SearchRun`] leaves for the outcome.
struct RunResults {
    ranking: Option<Ranking>,
    notes: Vec<String>,
    first_validated: Option<Instant>,
    guarded: Option<usize>,
    behaviour: HashMap<CandidateId, Vec<AntiPattern>>,
    validating: Duration,
}

/// What validates a search's candidates: pytest, the pool of warm workers, the lab's settings.
struct Validation<'r> {
    pytest: &'r crate::pytest::Pytest,
    pool: &'r validate::Pool,
    config: LabConfig<'r>,
}

impl<'r, 'p> SearchRun<'r, 'p> {
    fn new(
        options: &'r FixOptions,
        project: &'p Project,
        validation: Validation<'r>,
        search: &'r Mutex<Search<'p>>,
        (ranker, ranking): (Option<Ranker>, Option<Ranking>),
        budget: &Budget,
    ) -> Self {
        let Validation { pytest, pool, config } = validation;
        let (notes, first_validated) = (Mutex::new(Vec::new()), std::sync::OnceLock::new());
        let per_test = config.timeouts.per_test.max(Duration::from_secs(2));
        let (deadline, last_call, timeout, startup) =
            (budget.deadline, budget.last_call, budget.timeout, budget.startup);
        SearchRun {
            options,
            project,
            pytest,
            pool,
            config,
            search,
            ranker,
            ranking,
            notes,
            first_validated,
            deadline,
            last_call,
            guard: None,
            budget_fitted: false,
            timeout,
            startup,
            guarded: None,
            validating: Duration::ZERO,
            fallback: None,
            returns: ReturnCheck::new(pytest, project.root(), per_test),
            behaviour: HashMap::new(),
            inherited: HashSet::new(),
        }
    }

    fn finish(self) -> RunResults {
        RunResults {
            ranking: self.ranking,
            notes: self.notes.into_inner().expect("notes lock"),
            first_validated: self.first_validated.into_inner(),
            guarded: self.guarded,
            behaviour: self.behaviour,
            validating: self.validating,
        }
    }

    /// The behavioural anti-patterns of `candidate` (see [`behaviour`]), checked once, within a
    /// fifth of the time left.
    fn check_behaviour(&mut self, candidate: &Candidate) -> &[AntiPattern] {
        if !self.behaviour.contains_key(&candidate.id) {
            let flags = match Watched::of(self.project, candidate) {
                Some(watched) => {
                    let tests = watched.tests(self.config.baseline, &self.config.failing);
                    let until = Instant::now() + self.deadline.saturating_duration_since(Instant::now()) / 5;
                    let checked = behaviour::Checked {
                        reaching: &tests,
                        failing: &self.config.failing,
                        baseline: self.config.baseline,
                    };
                    let findings = self.returns.check(candidate, &watched, &checked, until).unwrap_or_default();
                    let mut flags = Vec::new();
                    if !findings.new_kinds.is_empty() {
                        flags.push(AntiPattern::NewReturnType);
                    }
                    if self.failing_timed_out() && findings.changes_results() {
                        flags.push(AntiPattern::ChangedResults);
                    }
                    if findings.skips_code() {
                        flags.push(AntiPattern::SkippedCode);
                    }
                    flags
                }
                None => Vec::new(),
            };
            self.behaviour.insert(candidate.id, flags);
        }
        &self.behaviour[&candidate.id]
    }

    /// Every failing test had timed out at baseline (the bug made them slow, not wrong).
    fn failing_timed_out(&self) -> bool {
        let outcome = |id: &String| self.config.baseline.test(id).map(|t| t.outcome);
        !self.config.failing.is_empty()
            && self.config.failing.iter().all(|id| outcome(id) == Some(crate::pytest::TestOutcome::Timeout))
    }

    /// Once the guard is known, the confirmation reserve is two runs of it (at most 40% of
    /// the budget) and the search may go on until one run is left.
    fn refresh_budget(&mut self) {
        let Some(guard) = self.guard.filter(|_| !self.budget_fitted).and_then(PendingGuard::get) else { return };
        self.budget_fitted = true;
        let focus: f64 =
            self.config.failing.iter().filter_map(|id| self.config.baseline.test(id)).map(|t| t.duration).sum();
        // A run of the guard collects more files than the focus: start-up and tests with margin.
        let one_run = (self.startup + Duration::from_secs_f64(guard.seconds() + focus)).mul_f64(1.5);
        let reserve = (one_run * 2).min(self.timeout.mul_f64(0.4));
        let search_deadline = self.deadline.checked_sub(reserve).unwrap_or(self.deadline);
        self.config.deadline = self.config.deadline.max(search_deadline);
        self.last_call =
            self.deadline.checked_sub(one_run.mul_f64(1.2)).unwrap_or(self.deadline).max(self.config.deadline);
    }

    /// Validate until a plausible patch survives confirmation by fresh full-suite runs, the
    /// search deadline passes, or every source is exhausted.
    fn search_and_confirm(
        &mut self,
        on_event: &(dyn Fn(FixEvent) + Sync),
    ) -> Result<(Option<CandidateId>, SearchEnd), FixError> {
        // With a ranker: whether the extra collection of plausible patches has run.
        let mut collected = false;
        loop {
            self.refresh_budget();
            if Instant::now() >= self.config.deadline {
                // Nothing waits for confirmation: the time kept for a second run goes to the
                // search (a patch found now is confirmed by one run).
                if self.config.deadline >= self.last_call || Instant::now() >= self.last_call {
                    return Ok(self.end_with_fallback(SearchEnd::Deadline));
                }
                self.config.deadline = self.last_call;
            }
            let config = self.config.clone();
            self.pause_sources(false);
            let found = self.round(&config, on_event)?;
            if self.ranker.is_some() && !collected && !self.plausible().is_empty() {
                collected = true;
                self.collect_more(on_event)?;
            }
            // Scoring and confirmation get the CPU to themselves (a language model sampling
            // beside them made one scoring take 83 s instead of a few).
            self.pause_sources(true);
            self.score_plausible(on_event)?;
            let (best, chose) = self.confirm_best(on_event)?;
            if best.is_some() {
                return Ok((best, SearchEnd::Found));
            }
            if !chose && found == 0 && Instant::now() < self.config.deadline {
                return Ok(self.end_with_fallback(SearchEnd::Exhausted));
            }
        }
    }

    /// How the search ends without a confirmed patch free of anti-patterns: with the flagged
    /// one kept aside, if any (and the note that says what it may be).
    fn end_with_fallback(&mut self, end: SearchEnd) -> (Option<CandidateId>, SearchEnd) {
        match self.fallback.take() {
            Some((id, patterns)) => {
                note_overfit(&self.notes, &patterns);
                (Some(id), SearchEnd::Found)
            }
            None => (None, end),
        }
    }

    /// One validation round with `config`; returns how many plausible patches it found.
    fn round(&mut self, config: &LabConfig<'_>, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<usize, FixError> {
        let (notes, first) = (&self.notes, &self.first_validated);
        let forward = |event: LabEvent| match event {
            LabEvent::Validated { candidate_id, outcome } => {
                first.get_or_init(Instant::now);
                on_event(FixEvent::Validated { candidate_id, outcome });
            }
            LabEvent::Note(note) => push_note(notes, note),
        };
        let started = Instant::now();
        let round =
            validate::run_feed(self.pool, self.pytest, config, &search::SharedSearch::new(self.search), &forward);
        self.validating += started.elapsed();
        let round = round?;
        Ok(round.iter().filter(|v| v.outcome.is_plausible()).count())
    }

    fn plausible(&self) -> Vec<CandidateId> {
        self.search.lock().expect("search lock").plausible()
    }

    fn pause_sources(&self, paused: bool) {
        self.search.lock().expect("search lock").pause_sources(paused);
    }

    /// Keep searching, in rank order, for more plausible patches for the ranker to choose
    /// from: `extra_factor` times as many candidates as the first one took (at least
    /// [`MIN_EXTRA_CANDIDATES`]), within a share of the remaining time. Counted in candidates,
    /// not seconds, so a faster engine does not shrink the choice; one round, so no
    /// validation is cut short by an inner deadline.
    fn collect_more(&mut self, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<(), FixError> {
        let Some(rank_options) = self.options.rank.clone() else { return Ok(()) };
        let (plausible, now) = (self.plausible().len(), Instant::now());
        if plausible >= rank_options.max_plausible || now >= self.config.deadline {
            return Ok(());
        }
        let validated = self.validated_count();
        let extra = LabConfig {
            deadline: now + self.config.deadline.saturating_duration_since(now).mul_f64(rank_options.extra_share),
            stop_after_plausible: rank_options.max_plausible - plausible,
            stop_after_validated: ((validated as f64 * rank_options.extra_factor) as usize).max(MIN_EXTRA_CANDIDATES),
            ..self.config.clone()
        };
        self.round(&extra, on_event)?;
        Ok(())
    }

    fn validated_count(&self) -> usize {
        self.search.lock().expect("search lock").validated_count()
    }

    /// Likelihoods of the plausible patches not scored yet (unless time is up or the
    /// optional ranker failed once).
    fn score_plausible(&mut self, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<(), FixError> {
        let (Some(ranker), Some(ranking), Some(rank_options)) =
            (self.ranker.as_mut(), self.ranking.as_mut(), &self.options.rank)
        else {
            return Ok(());
        };
        let search = self.search.lock().expect("search lock");
        let plausible: Vec<&Candidate> = search.plausible().into_iter().map(|id| search.candidate(id)).collect();
        let on_start = |count| on_event(FixEvent::Ranking { count });
        match score_new(ranker, ranking, (self.project, &plausible), self.last_call, &on_start) {
            Scored::Nothing => {}
            Scored::OutOfTime => push_note(
                // Scoring must not eat the confirmation reserve: rank by operator score alone.
                &self.notes,
                "SmolLM2 ranking skipped for lack of time: plausible patches ranked by operator score".into(),
            ),
            Scored::Done if ranking.stats.out_of_time > 0 => {
                push_note(&self.notes, "SmolLM2 left some plausible patches unscored to keep within --timeout".into())
            }
            Scored::Done => {}
            Scored::Failed(err) if !rank_options.required => {
                // Every plausible patch is ranked the same way: by operator score.
                ranking.scores.clear();
                self.ranker = None;
                push_note(
                    &self.notes,
                    format!("SmolLM2 ranking failed ({err}): plausible patches ranked by operator score"),
                );
            }
            Scored::Failed(err) => return Err(FixError::Ranker(err)),
        }
        Ok(())
    }

    /// Score `candidate` alone when ranking is on and the scoring of every plausible patch
    /// left it out (time ran short there, and the choice is the one to report), within the
    /// same reserve; true when it turns out [`rank::unnatural`].
    fn score_chosen(&mut self, candidate: &Candidate) -> bool {
        let (Some(ranker), Some(ranking)) = (self.ranker.as_mut(), self.ranking.as_mut()) else { return false };
        let scored = score_new(ranker, ranking, (self.project, &[candidate]), self.last_call, &|_| {});
        matches!(scored, Scored::Done) && rank::unnatural(ranking.scores.get(&candidate.id))
    }

    /// Confirm plausible patches best first; returns the confirmed one, and whether any was
    /// tried. Without a ranker one is tried per round (at most one waits).
    fn confirm_best(&mut self, on_event: &(dyn Fn(FixEvent) + Sync)) -> Result<(Option<CandidateId>, bool), FixError> {
        let mut chose = false;
        loop {
            let choice = {
                let search = self.search.lock().expect("search lock");
                let scores = self.ranking.as_ref().map(|r| &r.scores);
                let (plausible, implausible): (Vec<&Candidate>, Vec<&Candidate>) = search
                    .plausible()
                    .into_iter()
                    .map(|id| search.candidate(id))
                    .partition(|c| !rank::implausible(scores.and_then(|s| s.get(&c.id))));
                if !implausible.is_empty() {
                    push_note(&self.notes, format!(
                        "some plausible patches are not reported: SmolLM2 finds their function over {:.0} nats less likely than the original (patches that fit the tests rather than fix the bug; `implausible` in --json)",
                        -rank::MIN_GAIN
                    ));
                }
                let superseded = minimal::superseded(search.project(), &plausible);
                if let Some(ranking) = &mut self.ranking {
                    ranking.superseded.clone_from(&superseded);
                }
                let mut patterns: HashMap<CandidateId, Vec<AntiPattern>> =
                    plausible.iter().map(|c| (c.id, self.own_anti_patterns(c))).collect();
                overfit::inherit(self.project, &plausible, &mut patterns);
                let flagged: HashSet<CandidateId> =
                    patterns.iter().filter(|(_, p)| !p.is_empty()).map(|(id, _)| *id).collect();
                self.inherited = (patterns.iter())
                    .filter(|(_, p)| p.contains(&AntiPattern::ContainsFlagged))
                    .map(|(id, _)| *id)
                    .collect();
                let key = |c: &Candidate| match &self.ranking {
                    Some(ranking) => rank::combined(c.score, ranking.scores.get(&c.id)),
                    None => c.score,
                };
                choose_best(plausible, &Demoted { overfit: &flagged, superseded: &superseded }, &key)
                    .map(|id| Arc::new(search.candidate(id).clone()))
            };
            let Some(candidate) = choice else { return Ok((None, chose)) };
            if self.score_chosen(&candidate) {
                // SmolLM2 finds the choice unnatural (it had not been scored): choose again.
                chose = true;
                continue;
            }
            let checked = self.behaviour.contains_key(&candidate.id);
            if !checked && !self.check_behaviour(&candidate).is_empty() {
                // Demoted: choose again (a patch checked before is not checked again).
                chose = true;
                continue;
            }
            if self.fallback.is_some() && !self.anti_patterns(&candidate).is_empty() {
                // The best is flagged, and a flagged patch is already confirmed: nothing new.
                return Ok((None, chose));
            }
            chose = true;
            on_event(FixEvent::Confirming { deadline: self.deadline });
            let Some(plan) = self.guard_plan(&candidate) else {
                push_note(&self.notes, format!(
                    "a plausible patch ({}:{}, {}) was found too late to run the whole regression guard before --timeout; it is not reported (a larger --timeout would let it be checked)",
                    candidate.patch.file, candidate.line, candidate.description
                ));
                return Ok((None, true));
            };
            match guard::confirm(self.pytest, &self.config, &plan, &candidate, CONFIRMATION_RUNS, self.deadline)? {
                Confirmation::Confirmed { runs } => {
                    self.guarded = Some(plan.guard_tests());
                    if plan.dropped > 0 {
                        push_note(&self.notes, format!("{} test(s) of the regression guard did not fit in --timeout and did not check the patch (the failing tests' files and the tests that import the edited module went first)", plan.dropped));
                    }
                    if runs < CONFIRMATION_RUNS {
                        push_note(&self.notes, format!("the patch was confirmed by {runs} fresh run of the suite: --timeout left no time for a second"));
                    }
                    let patterns = self.anti_patterns(&candidate);
                    if !patterns.is_empty() && self.may_search_on() {
                        // Kept aside: the search goes on for a patch without anti-patterns.
                        self.fallback = Some((candidate.id, patterns));
                        return Ok((None, true));
                    }
                    note_overfit(&self.notes, &patterns);
                    return Ok((Some(candidate.id), true));
                }
                Confirmation::OutOfTime => {
                    push_note(&self.notes, format!(
                        "a plausible patch ({}:{}, {}) could not be confirmed by a fresh run of the suite before --timeout; a larger --timeout would let it",
                        candidate.patch.file, candidate.line, candidate.description
                    ));
                    return Ok((None, true));
                }
                Confirmation::Rejected(verdict) => {
                    self.search.lock().expect("search lock").set_outcome(candidate.id, verdict)
                }
            }
            if self.ranking.is_none() || Instant::now() >= self.deadline {
                return Ok((None, true));
            }
        }
    }
}

impl SearchRun<'_, '_> {
    /// The anti-patterns of `candidate`: its own, and [`AntiPattern::ContainsFlagged`] when
    /// the last choice found it contains a flagged plausible patch.
    fn anti_patterns(&self, candidate: &Candidate) -> Vec<AntiPattern> {
        let mut patterns = self.own_anti_patterns(candidate);
        if self.inherited.contains(&candidate.id) {
            patterns.push(AntiPattern::ContainsFlagged);
        }
        patterns
    }

    /// The anti-patterns of `candidate`'s own change: syntactic ([`overfit`]), behavioural
    /// (checked before its confirmation) and the language model's `unnatural`.
    fn own_anti_patterns(&self, candidate: &Candidate) -> Vec<AntiPattern> {
        let mut patterns = overfit::of_candidate(self.project, candidate);
        patterns.extend(self.behaviour.get(&candidate.id).into_iter().flatten());
        let scores = self.ranking.as_ref().map(|r| &r.scores);
        if rank::unnatural(scores.and_then(|s| s.get(&candidate.id))) {
            patterns.push(AntiPattern::Unnatural);
        }
        patterns.sort();
        patterns.dedup();
        patterns
    }

    /// Whether the search has time left for another plausible patch after a flagged one: a
    /// round of validation and a confirmation before the search's deadline.
    fn may_search_on(&self) -> bool {
        Instant::now() + Duration::from_secs(1) < self.config.deadline
    }

    /// The guard's part that a confirmation run of `candidate` can afford before the deadline
    /// (waiting for the rest of the suite to finish its run first). `None` when the guard had
    /// to shrink although one run of it fits in the confirmation reserve (40 % of the budget):
    /// the patch came too late to be checked, and an unchecked patch is not reported. Only a
    /// guard larger than the budget shrinks.
    fn guard_plan(&self, candidate: &Candidate) -> Option<GuardPlan> {
        let learned = match self.guard {
            Some(pending) => pending.wait(self.deadline),
            None => None,
        };
        let guard = learned.unwrap_or_else(|| {
            let mut guard = Guard::default();
            guard.absorb(self.config.baseline, &self.config.failing);
            guard
        });
        // One whole run of the guard is worth more than two runs of a part of it: the guard
        // shrinks only when one run does not fit ([`guard::confirm`] runs the second if it fits).
        let left = self.deadline.saturating_duration_since(Instant::now());
        let per_run = (left.as_secs_f64() - self.startup.as_secs_f64() * 1.5) / 1.5;
        let module = module_words(&candidate.patch.file);
        let imports = |file: &str| self.project.file(file).is_some_and(|f| imports_module(f.parsed.text(), &module));
        let plan = guard.plan(&self.config.failing, per_run.max(0.0), &imports);
        let whole_run = (self.startup.as_secs_f64() + guard.seconds()) * 1.5;
        (plan.dropped == 0 || whole_run > self.timeout.as_secs_f64() * 0.4).then_some(plan)
    }
}

/// The dotted module name of a project file (`src/shop/cart.py` → `["shop", "cart"]` without
/// a leading `src`; a package's `__init__.py` names the package).
fn module_words(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".py").trim_end_matches("/__init__");
    let words: Vec<String> = stem.split('/').map(str::to_string).collect();
    match words.split_first() {
        Some((first, rest)) if first == "src" && !rest.is_empty() => rest.to_vec(),
        _ => words,
    }
}

/// Whether Python `text` imports the module named by `words` (or the name it defines last).
fn imports_module(text: &str, words: &[String]) -> bool {
    let Some(last) = words.last() else { return false };
    let dotted = words.join(".");
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("import ") || l.starts_with("from "))
        .any(|l| l.contains(&dotted) || l.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == last))
}

/// What scoring plausible patches with SmolLM2 came to.
enum Scored {
    /// Every one was scored already.
    Nothing,
    /// The last moment for a model call had passed.
    OutOfTime,
    /// Scored (within the time left; see `RankStats::out_of_time`).
    Done,
    Failed(crate::model::ModelError),
}

/// Score those of `candidates` that `ranking` has no score for yet, before `last_call`
/// (`on_start` hears how many); their scores join `ranking.scores`.
fn score_new(
    ranker: &mut Ranker,
    ranking: &mut Ranking,
    (project, candidates): (&Project, &[&Candidate]),
    last_call: Instant,
    on_start: &dyn Fn(usize),
) -> Scored {
    let unscored: Vec<&Candidate> =
        candidates.iter().copied().filter(|c| !ranking.scores.contains_key(&c.id)).collect();
    if unscored.is_empty() {
        return Scored::Nothing;
    }
    if Instant::now() >= last_call {
        return Scored::OutOfTime;
    }
    on_start(unscored.len());
    match ranking.stats.run(ranker, project, &unscored, last_call) {
        Ok(scores) => {
            ranking.scores.extend(scores);
            Scored::Done
        }
        Err(err) => Scored::Failed(err),
    }
}

fn push_note(notes: &Mutex<Vec<String>>, note: String) {
    let mut notes = notes.lock().expect("notes lock");
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// Warn that the reported patch shows `anti_patterns` (every plausible patch did, or it would
/// not have been chosen).
fn note_overfit(notes: &Mutex<Vec<String>>, anti_patterns: &[AntiPattern]) {
    if anti_patterns.is_empty() {
        return;
    }
    let names: Vec<&str> = anti_patterns.iter().map(|a| a.name()).collect();
    push_note(notes, format!(
        "the patch may fit the tests rather than fix the bug: it degrades the code it edits or reads far less natural than the bug ({}; `overfit` in --json), and no plausible patch without such a sign was found",
        names.join(", ")
    ));
}

/// Fresh full-suite runs a plausible patch must pass before it is reported (the second
/// rejects flaky passes).
const CONFIRMATION_RUNS: usize = 2;

/// Plausible candidates that rank after the others, whatever their score.
struct Demoted<'a> {
    /// Candidates with an anti-pattern ([`overfit::anti_patterns`]): they rank after all others.
    overfit: &'a HashSet<CandidateId>,
    /// Candidates whose change contains another's ([`minimal::superseded`]).
    superseded: &'a HashSet<CandidateId>,
}

/// Among plausible candidates: those without an anti-pattern ([`overfit`]: they pass the tests
/// by degrading the code), then those whose change contains no other plausible candidate's
/// change ([`minimal::superseded`]: the tests justify only the smaller one), then the fewest
/// edits, then the fewest deleted calls (a patch that changes more, or drops a call, is
/// likelier to fit the tests rather than fix the bug, and a language model's likelihood gain
/// grows with the code a patch deletes), then the highest `key` (the score, localization ×
/// prior, or with a ranker `rank::combined`), then the smallest edit, then the earliest
/// admitted.
fn choose_best(
    plausible: Vec<&Candidate>,
    demoted: &Demoted<'_>,
    key: &dyn Fn(&Candidate) -> f64,
) -> Option<CandidateId> {
    let (overfit, superseded) = (demoted.overfit, demoted.superseded);
    plausible
        .into_iter()
        .min_by(|a, b| {
            (overfit.contains(&a.id), superseded.contains(&a.id))
                .cmp(&(overfit.contains(&b.id), superseded.contains(&b.id)))
                .then_with(|| a.patch.edits().len().cmp(&b.patch.edits().len()))
                .then_with(|| a.deleted_calls.cmp(&b.deleted_calls))
                .then_with(|| key(b).total_cmp(&key(a)))
                .then_with(|| a.edit_size.cmp(&b.edit_size))
                .then_with(|| a.id.cmp(&b.id))
        })
        .map(|c| c.id)
}

#[cfg(test)]
mod tests {
    use super::{choose_best, selected, Demoted};
    use crate::patch::{Edit, Patch};
    use crate::repair::candidate::{Candidate, CandidateId, Provenance};
    use std::collections::HashSet;

    fn candidate(id: usize, score: f64) -> Candidate {
        let patch = Patch::single("m.py", Edit::replacement(0..1, "y"));
        Candidate {
            id: CandidateId(id),
            patched_text: patch.apply("x = 1\n"),
            patch,
            source: Provenance::LanguageModel,
            line: 1,
            description: String::new(),
            score,
            edit_size: 2,
            deleted_calls: 0,
            focus: None,
        }
    }

    #[test]
    fn a_plausible_candidate_with_an_anti_pattern_ranks_after_every_other_even_superseded_ones() {
        let (flagged, superseded) = (HashSet::from([CandidateId(0)]), HashSet::from([CandidateId(1)]));
        let demoted = Demoted { overfit: &flagged, superseded: &superseded };
        let (overfit, bigger, plain) = (candidate(0, 0.9), candidate(1, 0.2), candidate(2, 0.1));
        let key = |c: &Candidate| c.score;
        assert_eq!(choose_best(vec![&overfit, &bigger, &plain], &demoted, &key), Some(CandidateId(2)));
        assert_eq!(choose_best(vec![&overfit, &bigger], &demoted, &key), Some(CandidateId(1)));
        assert_eq!(choose_best(vec![&overfit], &demoted, &key), Some(CandidateId(0)), "still reported when alone");
    }

    #[test]
    fn a_fix_with_an_anti_pattern_is_only_suggested() {
        use super::{AntiPattern, FixOutcome, FixStatus};
        use crate::process::Exit;
        use crate::pytest::Session;
        use std::sync::Arc;
        let session = Session::empty(Exit::Success, std::time::Duration::ZERO);
        let mut outcome = FixOutcome::new("python3".into(), session, std::time::Duration::ZERO, Vec::new());
        outcome.candidates = vec![Arc::new(candidate(0, 0.5))];
        outcome.status = FixStatus::Fixed { best: CandidateId(0) };
        outcome.overfit.insert(CandidateId(0), Vec::new());
        outcome.distrust_overfit();
        assert_eq!(outcome.status, FixStatus::Fixed { best: CandidateId(0) }, "no anti-pattern: a fix");
        outcome.overfit.insert(CandidateId(0), vec![AntiPattern::ConstantReturn]);
        outcome.distrust_overfit();
        assert_eq!(outcome.status, FixStatus::Suggested { best: CandidateId(0) });
        assert!(outcome.best_candidate().is_none(), "a suggestion is not the fix");
        assert_eq!(outcome.chosen_candidate().map(|c| c.id), Some(CandidateId(0)));
        assert_eq!(outcome.chosen_overfit(), [AntiPattern::ConstantReturn]);
    }

    #[test]
    fn errors_map_to_the_documented_exit_codes() {
        use super::FixError;
        use crate::exit_code::ExitCode;
        assert_eq!(FixError::NoTests(String::new()).exit_code(), ExitCode::BaselineBroken);
        assert_eq!(FixError::SelectedNotRun(vec!["t.py::x".into()]).exit_code(), ExitCode::BaselineBroken);
        assert_eq!(FixError::PytestUsage("--flake8".into()).exit_code(), ExitCode::Environment);
        assert_eq!(FixError::WrongTask("m".into(), "bug-create").exit_code(), ExitCode::Usage);
        let scratch = crate::repair::validate::LabError::Scratch(std::io::Error::other("disk full"));
        assert_eq!(FixError::Lab(scratch).exit_code(), ExitCode::Software);
    }

    #[test]
    fn selectors_match_node_ids_their_parametrized_cases_files_and_directories() {
        let sel = |s: &[&str]| s.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert!(selected("tests/test_a.py::test_x", &[]));
        assert!(selected("tests/test_a.py::test_x", &sel(&["tests/test_a.py"])));
        assert!(selected("tests/test_a.py::test_x[1-2]", &sel(&["tests/test_a.py::test_x"])));
        assert!(selected("tests/unit/test_a.py::test_x", &sel(&["./tests/"])));
        assert!(!selected("tests/test_ab.py::test_x", &sel(&["tests/test_a"])));
        assert!(!selected("tests/test_a.py::test_xy", &sel(&["tests/test_a.py::test_x"])));
    }
}
