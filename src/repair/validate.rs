//! The main loop of `fix`: validate ranked candidates in scratch copies, in parallel, within a deadline.

use crate::project::copy_tree;
use crate::pytest::server::{ForkServer, Request, ServerMode, Swap};
use crate::pytest::{Pytest, PytestError, RunSpec, Session, TestRun};
use crate::repair::candidate::{Candidate, CandidateId, Focus};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod batch;
pub mod path;

pub use path::{EnginePath, OffPath, PathTaken, PathTotals};

/// The result of validating one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CandidateOutcome {
    /// Every originally failing test passes and nothing that passed breaks.
    Plausible,
    /// Some originally failing test still fails.
    StillFailing {
        failing: Vec<String>,
        /// Originally failing tests that passed (before the first failure stopped the run).
        fixed: usize,
    },
    /// The failing tests pass but a previously passing test now fails.
    Regression { broken: Vec<String> },
    /// A test or the whole session ran out of time (often an infinite loop).
    Timeout,
    /// pytest could not even collect the tests (e.g. an import error).
    Unviable { reason: String },
    /// Plausible in the validation engine, but a fresh full-suite run failed (flaky tests,
    /// or an effect the engine's shortcuts could not see).
    Unconfirmed { failing: Vec<String> },
}

impl CandidateOutcome {
    #[must_use]
    pub fn is_plausible(&self) -> bool {
        matches!(self, CandidateOutcome::Plausible)
    }

    /// Some, but not all, originally failing tests pass, and more than `source` had to fix
    /// to count ([`Provenance::progress_threshold`]: a combination must beat its seed): a seed
    /// for multi-edit patches.
    #[must_use]
    pub fn is_partial_fix(&self, source: crate::repair::candidate::Provenance) -> bool {
        self.fixed() >= source.progress_threshold() && !self.is_plausible()
    }

    /// Originally failing tests that now pass (all of them when plausible is not told apart).
    #[must_use]
    pub fn fixed(&self) -> usize {
        match self {
            CandidateOutcome::StillFailing { fixed, .. } => *fixed,
            _ => 0,
        }
    }

    #[must_use]
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The outcome without its details.
    #[must_use]
    pub fn kind(&self) -> OutcomeKind {
        match self {
            CandidateOutcome::Plausible => OutcomeKind::Plausible,
            CandidateOutcome::StillFailing { .. } => OutcomeKind::StillFailing,
            CandidateOutcome::Regression { .. } => OutcomeKind::Regression,
            CandidateOutcome::Timeout => OutcomeKind::Timeout,
            CandidateOutcome::Unviable { .. } => OutcomeKind::Unviable,
            CandidateOutcome::Unconfirmed { .. } => OutcomeKind::Unconfirmed,
        }
    }
}

/// Which [`CandidateOutcome`] a validation had, for events and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeKind {
    Plausible,
    StillFailing,
    Regression,
    Timeout,
    Unviable,
    Unconfirmed,
}

impl OutcomeKind {
    /// The name reports use (`"still-failing"`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Plausible => "plausible",
            OutcomeKind::StillFailing => "still-failing",
            OutcomeKind::Regression => "regression",
            OutcomeKind::Timeout => "timeout",
            OutcomeKind::Unviable => "unviable",
            OutcomeKind::Unconfirmed => "unconfirmed",
        }
    }
}

/// A file and the original line ranges of the function bodies an edit touches.
type AffectedKey = (String, Vec<(usize, usize)>);

/// One validated candidate.
#[derive(Debug, Clone)]
pub struct Validated {
    pub candidate_id: CandidateId,
    pub outcome: CandidateOutcome,
    pub elapsed: Duration,
    /// The engine path of its first session, and why it was not hot-swapped.
    pub path: PathTaken,
}

/// Timeouts derived from the baseline run.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Wall-clock limit per test.
    pub per_test: Duration,
    /// CPU-time limit per test: rejects busy loops long before the wall-clock limit, and a
    /// loaded machine cannot trip it.
    pub per_test_cpu: Duration,
    /// Fixed cost of one pytest session (interpreter start-up, collection).
    pub startup: Duration,
}

impl Timeouts {
    /// Per-test limit: 4× the slowest test that finished in the baseline plus 0.2 s, at least
    /// 0.3 s; CPU limit: 4× the most CPU a finished baseline test used plus 0.05 s; start-up:
    /// the baseline's wall time not spent inside tests.
    #[must_use]
    pub fn from_baseline(baseline: &Session) -> Timeouts {
        let finished = || baseline.tests.iter().filter(|t| t.outcome != crate::pytest::TestOutcome::Timeout);
        let slowest = finished().map(|t| t.duration).fold(0.0, f64::max);
        let most_cpu = finished().map(|t| t.cpu).fold(0.0, f64::max);
        let in_tests: f64 = baseline.tests.iter().map(|t| t.duration).sum();
        let startup = (baseline.elapsed.as_secs_f64() - in_tests).max(0.3);
        Timeouts {
            per_test: Duration::from_secs_f64((4.0 * slowest + 0.2).max(0.3)),
            per_test_cpu: Duration::from_secs_f64(4.0 * most_cpu + 0.05),
            startup: Duration::from_secs_f64(startup),
        }
    }

    /// Limit for a session running `tests` tests.
    #[must_use]
    pub fn session(&self, tests: usize) -> Duration {
        self.startup * 3 + self.per_test * u32::try_from(tests.max(1)).unwrap_or(u32::MAX) + Duration::from_secs(2)
    }
}

/// How candidates are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    /// A persistent fork server per worker whose children each validate a batch of
    /// hot-swapped candidates, checking for state left behind between them (as `Fork` where
    /// a candidate cannot be hot-swapped or the server cannot check).
    Batch,
    /// A persistent fork server per worker, one forked child per candidate (falls back to
    /// `Subprocess` when it cannot start).
    Fork,
    /// One pytest process per session (slow, maximally isolated).
    Subprocess,
}

/// Events reported while the lab runs (for progress bars).
#[derive(Debug, Clone)]
pub enum LabEvent {
    Validated {
        candidate_id: CandidateId,
        outcome: OutcomeKind,
    },
    /// Something the user should know about how validation ran (e.g. a fallback).
    Note(String),
}

/// What the lab needs to know about the baseline.
#[derive(Clone)]
pub struct LabConfig<'a> {
    pub root: &'a Path,
    /// Selectors the user gave (`--tests`); empty for the whole suite.
    pub selectors: &'a [String],
    pub failing: Vec<String>,
    pub passing: BTreeSet<String>,
    pub total_tests: usize,
    pub timeouts: Timeouts,
    pub deadline: Instant,
    pub jobs: usize,
    /// Stop once this many plausible patches are found.
    pub stop_after_plausible: usize,
    /// Stop once this many candidates are validated in the round (`usize::MAX`: no limit).
    pub stop_after_validated: usize,
    pub engine: EngineChoice,
    /// The baseline session (with per-test and collection-time coverage).
    pub baseline: &'a Session,
}

impl<'a> LabConfig<'a> {
    /// Validate against `baseline` of the project at `root`: its failing tests must pass, its
    /// passing tests must keep passing, with limits learned from it, the whole suite, no early
    /// stop; struct update syntax changes the rest.
    #[must_use]
    pub fn for_baseline(
        root: &'a Path,
        baseline: &'a Session,
        engine: EngineChoice,
        jobs: usize,
        deadline: Instant,
    ) -> LabConfig<'a> {
        LabConfig {
            root,
            selectors: &[],
            failing: baseline.failing().map(|t| t.nodeid.clone()).collect(),
            passing: baseline.tests.iter().filter(|t| t.outcome.is_ok()).map(|t| t.nodeid.clone()).collect(),
            total_tests: baseline.tests.len(),
            timeouts: Timeouts::from_baseline(baseline),
            deadline,
            jobs,
            stop_after_plausible: usize::MAX,
            stop_after_validated: usize::MAX,
            engine,
            baseline,
        }
    }

    /// True when a line of `focus`'s bodies ran at import time: hot-swapping would leave
    /// import-time results stale, and per-test coverage would not show every dependent test.
    pub fn runs_at_import(&self, file: &str, focus: &Focus) -> bool {
        self.baseline.collect_coverage.get(file).is_some_and(|lines| {
            lines.iter().any(|l| focus.original_body_lines.iter().any(|(a, b)| (a..=b).contains(&l)))
        })
    }

    /// Regression-test selection: the passing tests that executed a line of `focus`'s bodies
    /// in the baseline, plus those whose coverage shows no project code at all (they may run
    /// the project in a subprocess). A body edit cannot change any other test's outcome.
    pub fn affected_tests(&self, file: &str, focus: &Focus) -> Vec<String> {
        self.baseline
            .tests
            .iter()
            .filter(|t| self.passing.contains(&t.nodeid))
            .filter(|t| {
                let opaque = t.coverage.keys().all(|f| crate::project::is_test_path(f));
                let touches = t.coverage.get(file).is_some_and(|lines| {
                    lines.iter().any(|l| focus.original_body_lines.iter().any(|(a, b)| (a..=b).contains(&l)))
                });
                opaque || touches
            })
            .map(|t| t.nodeid.clone())
            .collect()
    }
}

/// How long a worker waits before asking a pending search again.
pub const WAIT: Duration = Duration::from_millis(20);

/// Errors that abort the lab (infrastructure, not candidates).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("failed to make a scratch copy of the project: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("failed to write a candidate into the scratch copy: {0}")]
    Write(#[source] std::io::Error),
    #[error(transparent)]
    Pytest(#[from] PytestError),
}

/// Validate `candidates` in rank order until the deadline or enough plausible patches.
///
/// # Errors
/// Only when scratch copies cannot be made or written, or pytest cannot be started.
pub fn run(
    pytest: &Pytest,
    config: &LabConfig<'_>,
    candidates: &[Candidate],
    skip: &HashSet<CandidateId>,
    on_event: &(dyn Fn(LabEvent) + Sync),
) -> Result<Vec<Validated>, LabError> {
    run_in(&Pool::default(), pytest, config, candidates, skip, on_event)
}

/// Scratch copies of the project, each with its validation engine, kept across [`run_in`]
/// calls: `fix` fills the pool while the baseline runs (its fork servers import pytest and
/// collect the suite meanwhile) and every search phase reuses it.
#[derive(Default)]
pub struct Pool {
    slots: Mutex<Vec<Slot>>,
}

/// One worker's scratch copy and engine (`None`: to be started on first use).
struct Slot {
    scratch: tempfile::TempDir,
    engine: Option<Engine>,
}

/// A fresh temporary copy of the project at `root` (named `{prefix}…`), removed on drop.
///
/// # Errors
/// [`LabError::Scratch`] when the directory cannot be made or the copy fails.
pub fn scratch_copy(root: &Path, prefix: &str) -> Result<tempfile::TempDir, LabError> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().map_err(LabError::Scratch)?;
    copy_tree(root, dir.path()).map_err(LabError::Scratch)?;
    Ok(dir)
}

impl Pool {
    /// `jobs` scratch copies of `root`, each with a fork server started but not waited for,
    /// when `engine` uses fork servers (none for `Subprocess`: the workers make their copies).
    /// A server that cannot even be started is tried again (and reported) on first use.
    ///
    /// # Errors
    /// When a scratch copy cannot be made.
    pub fn start(
        pytest: &Pytest,
        root: &Path,
        selectors: &[String],
        jobs: usize,
        engine: EngineChoice,
    ) -> Result<Pool, LabError> {
        if engine == EngineChoice::Subprocess {
            return Ok(Pool::default());
        }
        let mut slots = Vec::new();
        for _ in 0..jobs.max(1) {
            let scratch = scratch_copy(root, "deepdebug-scratch-")?;
            let engine = pytest.spawn_fork_server(scratch.path(), selectors).ok().map(Engine::Fork);
            slots.push(Slot { scratch, engine });
        }
        Ok(Pool { slots: Mutex::new(slots) })
    }

    /// Slots waiting in the pool, and how many of them hold a fork server that is ready.
    #[must_use]
    pub fn idle(&self) -> (usize, usize) {
        let slots = self.slots.lock().expect("pool lock");
        let ready =
            slots.iter().filter(|s| matches!(&s.engine, Some(Engine::Fork(server)) if server.is_ready())).count();
        (slots.len(), ready)
    }

    /// Take up to `jobs` slots, making new (engine-less) ones when the pool has fewer.
    fn take(&self, jobs: usize, root: &Path) -> Result<Vec<Slot>, LabError> {
        let mut taken: Vec<Slot> = {
            let mut slots = self.slots.lock().expect("pool lock");
            let keep = slots.len().saturating_sub(jobs);
            slots.split_off(keep)
        };
        while taken.len() < jobs {
            taken.push(Slot { scratch: scratch_copy(root, "deepdebug-scratch-")?, engine: None });
        }
        Ok(taken)
    }
}

/// Where the lab's workers get candidates from: a fixed list ([`run_in`]) or a search that
/// generates them as it goes.
pub trait Feed: Sync {
    /// The next candidate to validate.
    fn next(&self) -> Next;
    /// A candidate's result (a lenient re-check reports a second result for the same id).
    fn record(&self, validated: &Validated);
}

/// What a [`Feed`] has for a worker.
pub enum Next {
    Candidate(Arc<Candidate>),
    /// Nothing now, maybe soon (a source is still generating): ask again shortly.
    Wait,
    /// Nothing more.
    Done,
}

/// A fixed list of candidates in order, as a [`Feed`].
struct ListFeed<'c> {
    queue: Mutex<VecDeque<&'c Candidate>>,
}

impl Feed for ListFeed<'_> {
    fn next(&self) -> Next {
        match self.queue.lock().expect("queue lock").pop_front() {
            Some(c) => Next::Candidate(Arc::new(c.clone())),
            None => Next::Done,
        }
    }

    fn record(&self, _validated: &Validated) {}
}

/// [`run`] with the scratch copies and engines of `pool` (returned to it afterwards).
///
/// # Errors
/// As [`run`].
pub fn run_in(
    pool: &Pool,
    pytest: &Pytest,
    config: &LabConfig<'_>,
    candidates: &[Candidate],
    skip: &HashSet<CandidateId>,
    on_event: &(dyn Fn(LabEvent) + Sync),
) -> Result<Vec<Validated>, LabError> {
    let queue: VecDeque<&Candidate> = candidates.iter().filter(|c| !skip.contains(&c.id)).collect();
    if queue.is_empty() {
        return Ok(Vec::new());
    }
    let config = LabConfig { jobs: config.jobs.clamp(1, queue.len()), ..config.clone() };
    let mut results = run_feed(pool, pytest, &config, &ListFeed { queue: Mutex::new(queue) }, on_event)?;
    results.sort_by_key(|v| v.candidate_id);
    Ok(results)
}

/// Validate what `feed` hands out, in parallel (`config.jobs` workers from `pool`), until the
/// deadline, enough plausible patches, or the feed is done. Returns every result, in the
/// order found (a lenient re-check replaces the first result).
///
/// # Errors
/// As [`run`].
pub fn run_feed(
    pool: &Pool,
    pytest: &Pytest,
    config: &LabConfig<'_>,
    feed: &dyn Feed,
    on_event: &(dyn Fn(LabEvent) + Sync),
) -> Result<Vec<Validated>, LabError> {
    let shared = Workbench {
        feed,
        results: Mutex::new(Vec::new()),
        plausible_found: std::sync::atomic::AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        first_error: Mutex::new(None),
        recheck: Mutex::new(VecDeque::new()),
        busy: std::sync::atomic::AtomicUsize::new(0),
    };
    with_workers(pool, pytest, config, config.jobs, on_event, &|worker| shared.work(worker, config, on_event))?;
    if let Some(err) = shared.first_error.into_inner().expect("error lock") {
        return Err(err);
    }
    Ok(shared.results.into_inner().expect("results lock"))
}

/// Run `work` on `jobs` workers from `pool` (scratch copies made for any it lacks), one
/// thread each, and give their scratch copies and engines back to the pool.
///
/// # Errors
/// When a scratch copy cannot be made.
pub fn with_workers(
    pool: &Pool,
    pytest: &Pytest,
    config: &LabConfig<'_>,
    jobs: usize,
    on_event: &(dyn Fn(LabEvent) + Sync),
    work: &(dyn Fn(&mut Worker<'_>) + Sync),
) -> Result<(), LabError> {
    let slots = pool.take(jobs.max(1), config.root)?;
    let slots: Vec<Slot> = std::thread::scope(|scope| {
        let workers: Vec<_> = slots
            .into_iter()
            .map(|slot| {
                scope.spawn(move || {
                    let mut worker = Worker::from_slot(pytest, config, slot, on_event);
                    work(&mut worker);
                    worker.into_slot()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    pool.slots.lock().expect("pool lock").extend(slots);
    Ok(())
}

/// A worker takes a waiting lenient recheck after this many candidates.
const RECHECK_EVERY: usize = 16;
/// How often a worker with nothing to do looks again for rechecks other workers may still add.
const RECHECK_POLL: Duration = Duration::from_millis(2);

/// What a worker does next.
#[derive(Debug)]
enum Turn {
    /// Validate these candidates, with the lenient limit or not.
    Validate(Vec<Arc<Candidate>>, bool),
    /// Nothing to do now: look again after this long.
    Wait(Duration),
    /// Nothing more to do.
    Finish,
}

/// What the workers of one [`run_feed`] share.
struct Workbench<'f> {
    feed: &'f dyn Feed,
    results: Mutex<Vec<Validated>>,
    plausible_found: std::sync::atomic::AtomicUsize,
    stop: AtomicBool,
    first_error: Mutex<Option<LabError>>,
    /// Candidates stopped by the tight CPU limit inside an originally failing test: checked
    /// again with the lenient limit once the feed is done (a correct fix may simply do more
    /// work than the buggy code did).
    recheck: Mutex<VecDeque<Arc<Candidate>>>,
    /// Workers drawing or validating now: until they are done they may add rechecks, so a
    /// worker that finds the feed done and no recheck waiting stays while another is busy.
    busy: std::sync::atomic::AtomicUsize,
}

impl Workbench<'_> {
    /// One worker's loop: take, validate, record, until stopped, past the deadline or done.
    fn work(&self, worker: &mut Worker<'_>, config: &LabConfig<'_>, on_event: &(dyn Fn(LabEvent) + Sync)) {
        let mut fresh = 0usize;
        loop {
            if self.stop.load(Ordering::SeqCst) || Instant::now() >= config.deadline {
                return;
            }
            let (candidates, lenient) = match self.take(&mut fresh, worker.batch_size()) {
                Turn::Validate(candidates, lenient) => (candidates, lenient),
                Turn::Wait(pause) => {
                    std::thread::sleep(pause);
                    continue;
                }
                Turn::Finish => return,
            };
            let validated = worker.validate_all(&candidates, lenient);
            self.settle_all(&candidates, validated, lenient, config, on_event);
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// A worker's next turn; `fresh` counts the candidates it drew from the feed (and the
    /// rechecks it took in their turn), `size` is how many it takes at once. The worker counts
    /// as busy from before it draws until it has settled what it drew (`work` ends that), so
    /// no other worker finishes while it holds candidates that may still need a recheck.
    fn take(&self, fresh: &mut usize, size: usize) -> Turn {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let turn = self.turn(fresh, size);
        if !matches!(turn, Turn::Validate(..)) {
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
        turn
    }

    /// [`Workbench::take`] without the count.
    fn turn(&self, fresh: &mut usize, size: usize) -> Turn {
        // A search may never run dry: rechecks also get every RECHECK_EVERY-th turn.
        if *fresh > 0 && fresh.is_multiple_of(RECHECK_EVERY) {
            if let Some(c) = self.pop_recheck() {
                *fresh += 1;
                return Turn::Validate(vec![c], true);
            }
        }
        match self.feed.next() {
            Next::Candidate(c) => {
                let drawn = self.draw_more(c, size);
                *fresh += drawn.len();
                Turn::Validate(drawn, false)
            }
            Next::Wait => self.pop_recheck().map_or(Turn::Wait(WAIT), |c| Turn::Validate(vec![c], true)),
            Next::Done => match self.pop_recheck() {
                Some(c) => Turn::Validate(vec![c], true),
                // Another worker (this one counts itself) may still queue a recheck: stay to
                // share it.
                None if self.busy.load(Ordering::SeqCst) > 1 => Turn::Wait(RECHECK_POLL),
                None => Turn::Finish,
            },
        }
    }

    fn pop_recheck(&self) -> Option<Arc<Candidate>> {
        self.recheck.lock().expect("recheck lock").pop_front()
    }

    /// Record what one `validate_all` call came to (an error stops the run).
    fn settle_all(
        &self,
        candidates: &[Arc<Candidate>],
        validated: Result<Vec<Option<(Validated, bool)>>, LabError>,
        lenient: bool,
        config: &LabConfig<'_>,
        on_event: &(dyn Fn(LabEvent) + Sync),
    ) {
        match validated {
            Ok(results) => {
                for (candidate, result) in candidates.iter().zip(results) {
                    if let Some((validated, cpu_limited)) = result {
                        self.settle(candidate, validated, cpu_limited, lenient, config, on_event);
                    }
                }
            }
            Err(err) => {
                self.stop.store(true, Ordering::SeqCst);
                self.first_error.lock().expect("error lock").get_or_insert(err);
            }
        }
    }

    /// `first` and up to `size - 1` more candidates the feed has ready now.
    fn draw_more(&self, first: Arc<Candidate>, size: usize) -> Vec<Arc<Candidate>> {
        let mut drawn = vec![first];
        while drawn.len() < size {
            match self.feed.next() {
                Next::Candidate(c) => drawn.push(c),
                Next::Wait | Next::Done => break,
            }
        }
        drawn
    }

    fn settle(
        &self,
        candidate: &Arc<Candidate>,
        validated: Validated,
        cpu_limited: bool,
        lenient: bool,
        config: &LabConfig<'_>,
        on_event: &(dyn Fn(LabEvent) + Sync),
    ) {
        if cpu_limited && !lenient {
            self.recheck.lock().expect("recheck lock").push_back(Arc::clone(candidate));
        }
        if validated.outcome.is_plausible()
            && self.plausible_found.fetch_add(1, Ordering::SeqCst) + 1 >= config.stop_after_plausible
        {
            self.stop.store(true, Ordering::SeqCst);
        }
        if !(lenient && cpu_limited) {
            on_event(LabEvent::Validated { candidate_id: candidate.id, outcome: validated.outcome.kind() });
        }
        self.feed.record(&validated);
        let mut results = self.results.lock().expect("results lock");
        results.retain(|v: &Validated| v.candidate_id != candidate.id);
        results.push(validated);
        if results.len() >= config.stop_after_validated {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

// One engine per worker: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
enum Engine {
    Fork(ForkServer),
    Subprocess,
}

/// One validation worker: a scratch copy of the project and its engine.
pub struct Worker<'a> {
    pytest: &'a Pytest,
    config: &'a LabConfig<'a>,
    root: PathBuf,
    /// The scratch copy (from a [`Pool`] slot), `root`.
    scratch: tempfile::TempDir,
    engine: Engine,
    on_event: &'a (dyn Fn(LabEvent) + Sync),
    /// [`LabConfig::affected_tests`] by file and focus: many candidates edit the same function,
    /// and the selection walks every test's coverage.
    affected: HashMap<AffectedKey, Arc<[String]>>,
    /// Seconds one candidate takes in a batch (a running average): sizes the next batch.
    batch_cost: Option<f64>,
}

impl<'a> Worker<'a> {
    /// A worker on a pool slot: its engine is waited for (or started) now.
    fn from_slot(
        pytest: &'a Pytest,
        config: &'a LabConfig<'a>,
        slot: Slot,
        on_event: &'a (dyn Fn(LabEvent) + Sync),
    ) -> Worker<'a> {
        let root = slot.scratch.path().to_path_buf();
        let engine = Worker::ready_engine(pytest, config, &root, slot.engine, on_event);
        Worker {
            pytest,
            config,
            root,
            scratch: slot.scratch,
            engine,
            on_event,
            affected: HashMap::new(),
            batch_cost: None,
        }
    }

    /// The slot to give back to the pool.
    fn into_slot(self) -> Slot {
        Slot { scratch: self.scratch, engine: Some(self.engine) }
    }

    /// The engine `config` asks for, ready to validate: `engine` (a pooled one, maybe still
    /// starting) or a new one; falls back to subprocess runs with a note.
    fn ready_engine(
        pytest: &Pytest,
        config: &LabConfig<'_>,
        root: &Path,
        engine: Option<Engine>,
        on_event: &(dyn Fn(LabEvent) + Sync),
    ) -> Engine {
        if config.engine == EngineChoice::Subprocess {
            return Engine::Subprocess;
        }
        let startup = config.timeouts.startup * 4 + Duration::from_secs(20);
        let started = match engine {
            Some(Engine::Subprocess) => return Engine::Subprocess,
            Some(Engine::Fork(mut server)) if !server.is_ready() => server.wait_ready(startup).map(|()| server),
            Some(ready @ Engine::Fork(_)) => return ready,
            None => pytest.fork_server(root, config.selectors, startup),
        };
        match started {
            Ok(server) => {
                if server.mode() == ServerMode::Cold {
                    on_event(LabEvent::Note(format!(
                        "fork server runs cold (fresh collection per candidate): {}",
                        server.why()
                    )));
                }
                Engine::Fork(server)
            }
            Err(err) => {
                on_event(LabEvent::Note(format!("{err}; {}", fallback(pytest))));
                Engine::Subprocess
            }
        }
    }

    /// Run `tests` (all of them, no early exit) against `file` replaced by `text`, hot-swapping
    /// the focus functions when possible; the scratch copy is restored afterwards.
    ///
    /// # Errors
    /// When the scratch copy cannot be written or pytest cannot start.
    pub fn run_patched(
        &mut self,
        file: &str,
        text: &str,
        focus: Option<&Focus>,
        tests: &[String],
    ) -> Result<Session, LabError> {
        let path = self.root.join(file);
        let original = std::fs::read(&path).map_err(LabError::Write)?;
        std::fs::write(&path, text).map_err(LabError::Write)?;
        let focus = focus.filter(|f| !self.config.runs_at_import(file, f));
        let swap = focus.map(|f| swap_of(file, f, text));
        let cpu = self.config.timeouts.per_test_cpu;
        let mut request = self.request(Some(tests), tests.len(), swap.as_ref(), cpu);
        request.run.exit_first = false;
        request.frames = true;
        let session = self.session(&request);
        std::fs::write(&path, &original).map_err(LabError::Write)?;
        session
    }

    /// Validate one candidate; also says whether the tight CPU limit stopped an originally
    /// failing test (worth a second, `lenient` look).
    fn validate(&mut self, candidate: &Candidate, lenient: bool) -> Result<(Validated, bool), LabError> {
        let start = Instant::now();
        let file = &candidate.patch.file;
        let path = self.root.join(file);
        let original = std::fs::read(&path).map_err(LabError::Write)?;
        std::fs::write(&path, &candidate.patched_text).map_err(LabError::Write)?;
        let focus = candidate.focus.as_ref().filter(|f| !self.config.runs_at_import(file, f));
        let host_why = match (&candidate.focus, focus) {
            (_, Some(_)) => None,
            (Some(_), None) => Some(OffPath::ImportTime),
            (None, None) => Some(path::outside_functions(candidate)),
        };
        let swap = focus.map(|f| swap_of(file, f, &candidate.patched_text));
        let config = self.config;
        let affected = focus.map(|f| {
            self.affected
                .entry((file.clone(), f.original_body_lines.clone()))
                .or_insert_with(|| config.affected_tests(file, f).into())
                .clone()
        });
        // The lenient look uses the wall-clock limit as CPU limit too.
        let cpu = if lenient { self.config.timeouts.per_test } else { self.config.timeouts.per_test_cpu };
        let judged = self.judge(swap.as_ref(), affected.as_deref(), cpu);
        std::fs::write(&path, &original).map_err(LabError::Write)?;
        let (outcome, cpu_limited, first) = judged?;
        let taken = PathTaken::of_session(&first, self.pytest.sandbox().is_container(), host_why);
        Ok((Validated { candidate_id: candidate.id, outcome, elapsed: start.elapsed(), path: taken }, cpu_limited))
    }

    /// A session of `tests` (`None`: the whole selection, `count` tests) under the run's
    /// limits and `cpu`, until the deadline at the latest: stopping at the first failure,
    /// without frames (struct update syntax changes that).
    fn request<'r>(
        &self,
        tests: Option<&'r [String]>,
        count: usize,
        swap: Option<&Swap>,
        cpu: Duration,
    ) -> Request<'r> {
        let remaining = self.config.deadline.saturating_duration_since(Instant::now());
        let run = TestRun {
            exit_first: true,
            per_test_timeout: Some(self.config.timeouts.per_test),
            per_test_cpu: Some(cpu),
            ..TestRun::new(tests, self.config.timeouts.session(count).min(remaining.max(Duration::from_secs(1))))
        };
        Request { run, swap: swap.cloned(), frames: false }
    }

    /// Run `request` on the worker's fork server, or as one pytest process in the scratch copy
    /// (which holds the patched file) without a server or once it failed.
    fn session(&mut self, request: &Request<'_>) -> Result<Session, LabError> {
        if let Engine::Fork(server) = &mut self.engine {
            match server.run(request) {
                Ok(session) => return Ok(session),
                Err(err) => {
                    (self.on_event)(LabEvent::Note(format!("{err}; {}", fallback(self.pytest))));
                    self.engine = Engine::Subprocess;
                }
            }
        }
        let run = TestRun { tests: Some(request.run.tests.unwrap_or(self.config.selectors)), ..request.run };
        let spec = RunSpec { root: &self.root, coverage: false, run, deselect: &[], watch: &[] };
        Ok(self.pytest.run(&spec)?)
    }

    /// `affected`: the passing tests that can be affected by the patch (`None`: all of them).
    /// The outcome, and whether the tight CPU limit stopped an originally failing test.
    fn judge(
        &mut self,
        swap: Option<&Swap>,
        affected: Option<&[String]>,
        cpu: Duration,
    ) -> Result<(CandidateOutcome, bool, Session), LabError> {
        let config = self.config;
        let (tests, failing_only) = self.first_tests(affected);
        let first = self.session(&self.request(Some(&tests), tests.len(), swap, cpu))?;
        match self.first_verdict(&first, &tests, failing_only) {
            Some(outcome) => {
                let cpu_limited = self.cpu_limited_failing(&first);
                Ok((outcome, cpu_limited, first))
            }
            None => {
                let expected: Vec<String> = config.passing.iter().chain(&config.failing).cloned().collect();
                let full = self.session(&self.request(None, config.total_tests, swap, cpu))?;
                Ok((self.verdict(&full, &expected, false).unwrap_or(CandidateOutcome::Plausible), false, first))
            }
        }
    }

    /// The tests of the first session that judges a candidate, and whether they are the
    /// originally failing tests alone (a pass then needs a run of the whole suite).
    /// Originally failing tests come first (those that hung in the baseline last): most
    /// candidates are rejected there, cheaply, and tests passing before the first failure show
    /// partial fixes (seeds for multi-edit patches). With a known set of affected tests one
    /// session runs the failing tests and then those, stopping at the first failure.
    fn first_tests(&self, affected: Option<&[String]>) -> (Vec<String>, bool) {
        let failing = &self.config.failing;
        match affected {
            Some(tests) => {
                let mut all = failing.clone();
                all.extend(tests.iter().filter(|t| !failing.contains(t)).cloned());
                (all, false)
            }
            None => (failing.clone(), true),
        }
    }

    /// The outcome the first session decides (`None`: it needs the whole suite to decide).
    fn first_verdict(&self, session: &Session, tests: &[String], failing_only: bool) -> Option<CandidateOutcome> {
        match self.verdict(session, tests, failing_only) {
            None if !failing_only => Some(CandidateOutcome::Plausible),
            verdict => verdict,
        }
    }

    /// An originally failing test was stopped by the CPU limit (not the wall clock).
    fn cpu_limited_failing(&self, session: &Session) -> bool {
        session.tests.iter().any(|t| {
            t.outcome == crate::pytest::TestOutcome::Timeout
                && self.config.failing.contains(&t.nodeid)
                && t.failure.as_ref().is_some_and(|f| f.limit == Some(crate::pytest::TestLimit::Cpu))
        })
    }

    /// `None` when every test in `expected` passed (or was skipped).
    fn verdict(&self, session: &Session, expected: &[String], originally_failing: bool) -> Option<CandidateOutcome> {
        if session.exit.is_timeout() || session.tests.iter().any(|t| t.outcome == crate::pytest::TestOutcome::Timeout) {
            return Some(CandidateOutcome::Timeout);
        }
        // Modules that could not be collected at baseline are not the candidate's doing.
        let baseline_broken = |nodeid: &str| self.config.baseline.collect_errors.iter().any(|e| e.nodeid == nodeid);
        if let Some(error) = session.collect_errors.iter().find(|e| !baseline_broken(&e.nodeid)) {
            let reason = error.message.lines().last().unwrap_or_default().to_string();
            return Some(CandidateOutcome::Unviable { reason });
        }
        // Tests that already failed in the baseline outside the selection are not judged.
        let judged = |id: &String| self.config.passing.contains(id) || self.config.failing.contains(id);
        let bad: Vec<String> = session.failing().map(|t| t.nodeid.clone()).filter(judged).collect();
        if !bad.is_empty() {
            return Some(if originally_failing || bad.iter().all(|b| self.config.failing.contains(b)) {
                let fixed = session
                    .tests
                    .iter()
                    .filter(|t| t.outcome.is_ok() && self.config.failing.contains(&t.nodeid))
                    .count();
                CandidateOutcome::StillFailing { failing: bad, fixed }
            } else {
                CandidateOutcome::Regression { broken: bad }
            });
        }
        // With -x a crash could stop the session early: every expected test must have run.
        let ran: BTreeSet<&str> = session.tests.iter().map(|t| t.nodeid.as_str()).collect();
        let missing = expected.iter().any(|id| !ran.contains(id.as_str()));
        if missing || session.exit_status.is_none() {
            let reason = format!("pytest stopped early: {}", crate::text::last_line(&session.output_tail));
            return Some(CandidateOutcome::Unviable { reason });
        }
        None
    }
}

/// The hot swap of `focus`'s functions in `file`, patched to `patched_text`: the child compiles
/// only the functions under stand-ins of their blocks, or the module-level statements that hold
/// them (compiling a whole large module, or class, cost a child more than running its test).
fn swap_of(file: &str, focus: &Focus, patched_text: &str) -> Swap {
    Swap { file: file.to_string(), functions: focus.functions.clone(), source: Some(focus.swap_source(patched_text)) }
}

/// What validation falls back to without a fork server.
fn fallback(pytest: &Pytest) -> &'static str {
    if pytest.sandbox().is_container() {
        "using one container per pytest session"
    } else {
        "using one pytest process per candidate"
    }
}

#[cfg(test)]
mod tests {
    use super::{Feed, Next, Turn, Validated, Workbench, RECHECK_POLL};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A feed that has handed out everything.
    struct Finished;

    impl Feed for Finished {
        fn next(&self) -> Next {
            Next::Done
        }
        fn record(&self, _: &Validated) {}
    }

    fn shared(feed: &Finished) -> Workbench<'_> {
        Workbench {
            feed,
            results: Mutex::new(Vec::new()),
            plausible_found: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            first_error: Mutex::new(None),
            recheck: Mutex::new(std::collections::VecDeque::new()),
            busy: AtomicUsize::new(0),
        }
    }

    #[test]
    fn a_worker_stays_while_another_may_still_queue_a_recheck_and_finishes_once_all_are_idle() {
        let feed = Finished;
        let shared = shared(&feed);
        shared.busy.store(1, Ordering::SeqCst); // another worker is validating
        assert!(matches!(shared.take(&mut 0, 32), Turn::Wait(pause) if pause == RECHECK_POLL));
        assert_eq!(shared.busy.load(Ordering::SeqCst), 1, "a worker with nothing to do is not busy");
        shared.busy.store(0, Ordering::SeqCst);
        assert!(matches!(shared.take(&mut 0, 32), Turn::Finish));
        assert_eq!(shared.busy.load(Ordering::SeqCst), 0);
    }
}
