//! `deepdebug inject`: plant heuristic and neural bugs in tested functions, keep those the tests catch, record traces.

mod lm;
mod row;

pub use lm::{LineBug, LinePlanter, LmBugs};

pub use row::{BugRow, FrameRow, KindStats, RepoReport, RepoStatus, INJECT_FORMAT_VERSION};

use crate::patch::Patch;
use crate::project::Project;
use crate::pytest::{Pytest, PytestError, RunSpec, Session, TestOutcome};
use crate::python::{functions, Parsed};
use crate::repair::candidate::focus;
use crate::repair::generate::operators::{mutations_at_line_in, FileScope};
use crate::repair::validate::{scratch_copy, with_workers, EngineChoice, LabConfig, LabError, LabEvent, Pool, Worker};
pub use crate::shard::Shard;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Options of `deepdebug inject`.
#[derive(Debug, Clone)]
pub struct InjectOptions {
    pub repos: Vec<PathBuf>,
    pub out: PathBuf,
    pub shard: Shard,
    pub python: Option<PathBuf>,
    pub jobs: usize,
    /// Mutants tried per function (spread over operator kinds).
    pub per_function: usize,
    pub seed: u64,
    /// Budget per repository.
    pub repo_timeout: Duration,
    pub engine: EngineChoice,
    /// A bug-creator model directory (`deepdebug train --task bug-create`): its samples are
    /// planted as `neural` bugs beside the heuristic ones.
    pub model: Option<PathBuf>,
    /// Neural bugs sampled per function (with `model`).
    pub neural_samples: usize,
    /// SmolLM2 rewrites covered lines of some functions: planted as `neural-lm` bugs.
    pub lm: Option<LmBugs>,
    /// Sandbox of every test run.
    pub sandbox: crate::sandbox::SandboxKind,
    pub docker: crate::sandbox::DockerConfig,
}

/// Errors that stop the whole run (per-repository problems are reported and skipped instead).
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    #[error(transparent)]
    Io(#[from] crate::io_error::PathIoError),
    #[error(transparent)]
    Pytest(#[from] PytestError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error("`{0}` is a {1} model; neural bugs need a bug-create model")]
    WrongTask(PathBuf, &'static str),
    #[cfg(feature = "parquet")]
    #[error(transparent)]
    Parquet(#[from] crate::mine::MineError),
}

/// Progress events.
#[derive(Debug, Clone)]
pub enum InjectEvent {
    RepoStarted { repo: String, mutants: usize },
    MutantDone { killed: bool },
    RepoFinished(RepoReport),
}

/// Run injection over the shard's repositories, appending rows to
/// `OUT/bugs-SHARD.jsonl` and recording finished repositories in `OUT/checkpoint-SHARD.json`
/// so that an interrupted run resumes where it stopped.
///
/// # Errors
/// Only when the output directory cannot be written or Python/pytest are unusable.
pub fn run(options: &InjectOptions, on_event: &(dyn Fn(InjectEvent) + Sync)) -> Result<Vec<RepoReport>, InjectError> {
    let io = crate::io_error::path_io;
    std::fs::create_dir_all(&options.out).map_err(io("create", &options.out))?;
    let tag = options.shard.file_stem();
    let rows_path = options.out.join(format!("bugs-{tag}.jsonl"));
    let checkpoint_path = options.out.join(format!("checkpoint-{tag}.json"));
    let mut checkpoint_default = Checkpoint { format_version: INJECT_FORMAT_VERSION, ..Checkpoint::default() };
    let mut checkpoint: Checkpoint = std::fs::read_to_string(&checkpoint_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(|c: &Checkpoint| c.format_version == INJECT_FORMAT_VERSION)
        .unwrap_or_else(|| std::mem::take(&mut checkpoint_default));
    // Rows written after the last checkpoint belong to an interrupted repository: drop them.
    if let Ok(meta) = std::fs::metadata(&rows_path) {
        if meta.len() > checkpoint.rows_bytes {
            let file = std::fs::OpenOptions::new().write(true).open(&rows_path).map_err(io("open", &rows_path))?;
            file.set_len(checkpoint.rows_bytes).map_err(io("truncate", &rows_path))?;
        }
    }
    let mut sampler = match &options.model {
        Some(dir) => {
            let sampler = crate::model::Patcher::load(dir)?;
            if sampler.task() != crate::model::Task::BugCreate {
                return Err(InjectError::WrongTask(dir.clone(), sampler.task().name()));
            }
            Some(sampler)
        }
        None => None,
    };
    let planter = options.lm.clone().map(LinePlanter::load).transpose()?;
    let mut models = Models { sampler: sampler.as_mut(), planter: planter.as_ref() };
    let mut repos = options.repos.clone();
    repos.sort();
    repos.dedup();
    for (i, repo) in repos.iter().enumerate() {
        if !options.shard.owns(i) {
            continue;
        }
        let name = repo.display().to_string();
        if checkpoint.repos.iter().any(|r| r.repo == name) {
            continue; // finished before an interruption
        }
        let (report, rows) = match inject_repo(repo, options, &mut models, on_event) {
            Ok(done) => done,
            Err(RepoError::Skip(reason)) => (RepoReport::skipped(&name, reason), Vec::new()),
            Err(RepoError::Fatal(err)) => return Err(err),
        };
        // Rows first, then the checkpoint (with the rows file's length): a crash in between
        // re-runs the repository after truncating its rows away.
        let mut file =
            std::fs::OpenOptions::new().create(true).append(true).open(&rows_path).map_err(io("open", &rows_path))?;
        let mut text = String::new();
        for row in &rows {
            text.push_str(&serde_json::to_string(row).expect("rows serialize"));
            text.push('\n');
        }
        file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(io("write", &rows_path))?;
        checkpoint.rows_bytes = file.metadata().map_err(io("read", &rows_path))?.len();
        checkpoint.repos.push(report.clone());
        let tmp = checkpoint_path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(&checkpoint).expect("checkpoint serializes"))
            .map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, &checkpoint_path).map_err(io("write", &checkpoint_path))?;
        on_event(InjectEvent::RepoFinished(report));
    }
    #[cfg(feature = "parquet")]
    if rows_path.exists() {
        crate::mine::parquet::write_jsonl_as_parquet(&rows_path, &rows_path.with_extension("parquet"), ROW_COLUMNS)?;
    }
    Ok(checkpoint.repos)
}

/// Columns of the Parquet copy of the rows (nested fields as JSON text).
#[cfg(feature = "parquet")]
const ROW_COLUMNS: &[&str] = &[
    "format_version",
    "repo",
    "path",
    "function",
    "class",
    "kind",
    "line",
    "description",
    "buggy_function",
    "fixed_function",
    "context",
    "outcome",
    "failing_tests",
    "error_type",
    "error_message",
    "trace",
    "seed",
];

/// `checkpoint-SHARD.json`: finished repositories and the rows file's length after them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    format_version: u32,
    rows_bytes: u64,
    repos: Vec<RepoReport>,
}

enum RepoError {
    Skip(String),
    Fatal(InjectError),
}

impl From<LabError> for RepoError {
    fn from(err: LabError) -> Self {
        match err {
            LabError::Pytest(e) => RepoError::Fatal(InjectError::Pytest(e)),
            other => RepoError::Skip(other.to_string()),
        }
    }
}

/// A planned bug: one operator edit in a covered function.
struct Mutant {
    file: String,
    function: String,
    class: Option<String>,
    /// An operator name, or `neural`.
    kind: &'static str,
    line: usize,
    description: String,
    text: String,
    patch: Patch,
    tests: Vec<String>,
    focus: Option<crate::repair::candidate::Focus>,
    fn_range: std::ops::Range<usize>,
    /// The function's code skeleton (priority-filled context, `# target edit` markers).
    skeleton: String,
}

/// The models that plant neural bugs, when asked for.
struct Models<'m> {
    /// The bug-creator (`--model`).
    sampler: Option<&'m mut crate::model::Patcher>,
    /// SmolLM2's line rewrites (`--lm-bugs`).
    planter: Option<&'m LinePlanter>,
}

fn inject_repo(
    repo: &Path,
    options: &InjectOptions,
    models: &mut Models<'_>,
    on_event: &(dyn Fn(InjectEvent) + Sync),
) -> Result<(RepoReport, Vec<BugRow>), RepoError> {
    let started = Instant::now();
    let name = repo.display().to_string();
    let project = Project::load(repo).map_err(|e| RepoError::Skip(e.to_string()))?;
    let (pytest, _) =
        crate::pytest::for_project(project.root(), options.python.as_deref(), options.sandbox, &options.docker)
            .map_err(|e| match e {
                PytestError::Io { .. } | PytestError::ServerUnavailable(_) => RepoError::Skip(e.to_string()),
                fatal => RepoError::Fatal(fatal.into()),
            })?;
    let scratch = scratch_copy(project.root(), "deepdebug-inject-").map_err(|e| RepoError::Skip(e.to_string()))?;
    let baseline = pytest
        .run(&RunSpec::baseline(scratch.path(), Duration::from_secs(10), options.repo_timeout))
        .map_err(|e| RepoError::Skip(e.to_string()))?;
    if baseline.exit.is_timeout() {
        return Err(RepoError::Skip("the test suite did not finish in time".into()));
    }
    if !baseline.collect_errors.is_empty() {
        return Err(RepoError::Skip(format!("{} collection errors", baseline.collect_errors.len())));
    }
    let passing: BTreeSet<String> =
        baseline.tests.iter().filter(|t| t.outcome == TestOutcome::Passed).map(|t| t.nodeid.clone()).collect();
    if let (true, Some(usage)) = (baseline.tests.is_empty(), crate::pytest::usage_error(&baseline.output_tail)) {
        return Err(RepoError::Skip(format!(
            "pytest rejected its options ({usage}): a plugin named by addopts is missing?"
        )));
    }
    if passing.is_empty() {
        return Err(RepoError::Skip("no passing tests".into()));
    }
    // Sampling neural bugs may take at most half the repository's budget: the rest runs tests.
    let sampling_deadline = started + options.repo_timeout / 2;
    let mutants = plan(&project, &baseline, &passing, options, models, sampling_deadline)
        .map_err(|e| RepoError::Fatal(e.into()))?;
    on_event(InjectEvent::RepoStarted { repo: name.clone(), mutants: mutants.len() });
    let deadline = started + options.repo_timeout;
    let config = LabConfig {
        failing: Vec::new(),
        passing: passing.clone(),
        ..LabConfig::for_baseline(project.root(), &baseline, options.engine, options.jobs, deadline)
    };
    let results = validate(&pytest, &config, &mutants, options.jobs, on_event)?;
    let mut by_kind: BTreeMap<String, KindStats> = BTreeMap::new();
    let mut rows = Vec::new();
    for (mutant, session) in mutants.iter().zip(&results) {
        let Some(session) = session else { continue };
        let stats = by_kind.entry(mutant.kind.to_string()).or_default();
        stats.tried += 1;
        let failing: Vec<&crate::pytest::TestResult> = session.failing().collect();
        let timed_out = session.exit.is_timeout() || failing.iter().any(|t| t.outcome == TestOutcome::Timeout);
        if failing.is_empty() && !timed_out {
            continue; // survived: the tests do not notice this edit
        }
        stats.killed += 1;
        if timed_out {
            stats.timeouts += 1;
        }
        rows.push(BugRow::new(&name, mutant_view(mutant, &project), session, options.seed));
    }
    let report = RepoReport {
        repo: name,
        status: RepoStatus::Done,
        reason: None,
        tests: baseline.tests.len(),
        functions_covered: mutants.iter().map(|m| (&m.file, &m.function)).collect::<HashSet<_>>().len(),
        mutants_planned: mutants.len(),
        mutants_run: results.iter().filter(|r| r.is_some()).count(),
        bugs_kept: rows.len(),
        by_kind,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok((report, rows))
}

fn mutant_view<'a>(mutant: &'a Mutant, project: &'a Project) -> row::MutantView<'a> {
    let original = project.file(&mutant.file).map(|f| f.parsed.text()).unwrap_or_default();
    let fixed_function = &original[mutant.fn_range.clone()];
    // The function's range in the buggy text: shifted by the edits before its end.
    let delta: isize = mutant.patch.edits().iter().map(|e| e.content.len() as isize - e.range.len() as isize).sum();
    let end = mutant.fn_range.end.checked_add_signed(delta).unwrap_or(mutant.fn_range.end);
    let buggy_function = mutant.text.get(mutant.fn_range.start..end).unwrap_or_default();
    row::MutantView {
        path: &mutant.file,
        function: &mutant.function,
        class: mutant.class.as_deref(),
        kind: mutant.kind,
        line: mutant.line,
        description: &mutant.description,
        buggy_function,
        fixed_function,
        context: mutant.skeleton.clone(),
    }
}

/// Choose up to `per_function` mutants for every covered function, round-robin over operators
/// in a seeded order.
fn plan(
    project: &Project,
    baseline: &Session,
    passing: &BTreeSet<String>,
    options: &InjectOptions,
    models: &mut Models<'_>,
    sampling_deadline: Instant,
) -> Result<Vec<Mutant>, crate::model::ModelError> {
    let mut out = Vec::new();
    let mut lm_sites = Vec::new();
    let mut sampler = models.sampler.as_deref_mut();
    for file in project.repair_targets() {
        let scope = FileScope::of(&file.parsed);
        let text = file.parsed.text();
        for def in functions(&file.parsed) {
            let body_start = text[..def.body_byte_range.start].matches('\n').count() + 1;
            let covered_lines: BTreeSet<usize> = baseline
                .tests
                .iter()
                .filter(|t| passing.contains(&t.nodeid))
                .filter_map(|t| t.coverage.get(&file.rel))
                .flatten()
                .copied()
                .filter(|l| (body_start..=def.end_line).contains(l))
                .collect();
            if covered_lines.is_empty() {
                continue;
            }
            let tests: Vec<String> = baseline
                .tests
                .iter()
                .filter(|t| passing.contains(&t.nodeid))
                .filter(|t| t.coverage.get(&file.rel).is_some_and(|ls| ls.iter().any(|l| covered_lines.contains(l))))
                .map(|t| t.nodeid.clone())
                .collect();
            // Nested functions are mutated as part of their outermost function.
            let nested = functions(&file.parsed).iter().any(|o| {
                o.byte_range != def.byte_range
                    && o.body_byte_range.start <= def.byte_range.start
                    && def.byte_range.end <= o.body_byte_range.end
            });
            if nested {
                continue;
            }
            let skeleton = match sampler.as_deref() {
                Some(s) => {
                    crate::skeleton::build(&file.parsed, &def, SKELETON_BUDGET, &|t: &str| s.count_tokens(t)).text
                }
                None => {
                    crate::skeleton::build(&file.parsed, &def, SKELETON_BUDGET, &crate::skeleton::approximate_count)
                        .text
                }
            };
            // Edits are only collected here; the file is patched and re-parsed for the chosen
            // ones alone (materializing every mutation of a 1,000-line module took minutes and
            // gigabytes before the first test ran).
            let mut by_operator: BTreeMap<&'static str, Vec<(usize, crate::repair::generate::operators::Mutation)>> =
                BTreeMap::new();
            let mut seen_edits = HashSet::new();
            for &line in &covered_lines {
                for m in mutations_at_line_in(&file.parsed, &scope, line) {
                    if m.edit.range.start < def.body_byte_range.start || m.edit.range.end > def.body_byte_range.end {
                        continue;
                    }
                    if !seen_edits.insert((m.edit.range.clone(), m.edit.content.clone())) {
                        continue;
                    }
                    by_operator.entry(m.operator.name()).or_default().push((line, m));
                }
            }
            if models.planter.is_some() {
                let lines = lm::rewritable(text, &def, covered_lines.iter().copied());
                if !lines.is_empty() {
                    lm_sites.push(LmSite {
                        file,
                        def: def.clone(),
                        lines,
                        tests: tests.clone(),
                        skeleton: skeleton.clone(),
                    });
                }
            }
            let mut seen = HashSet::new();
            // Every distinct neural bug is tried, on top of the heuristic ones.
            if let Some(sampler) = sampler.as_deref_mut().filter(|_| Instant::now() < sampling_deadline) {
                out.extend(neural_mutants(sampler, file, &def, &skeleton, &tests, &mut seen, options)?);
            }
            let mut rng = crate::rng::Rng::new(options.seed ^ hash(&file.rel) ^ hash(&def.qualname));
            let mut queues: Vec<VecDeque<(usize, crate::repair::generate::operators::Mutation)>> = by_operator
                .into_values()
                .map(|mut v| {
                    rng.shuffle(&mut v);
                    v.into()
                })
                .collect();
            rng.shuffle(&mut queues);
            let mut taken = 0;
            let budget = options.per_function;
            while taken < budget && queues.iter().any(|q| !q.is_empty()) {
                for q in &mut queues {
                    if taken >= budget {
                        break;
                    }
                    while let Some((line, m)) = q.pop_front() {
                        let patch = Patch::single(file.rel.clone(), m.edit);
                        let patched = patch.apply(text);
                        let reparsed = Parsed::new(patched.as_str());
                        if !reparsed.is_valid() || !seen.insert(patched.clone()) {
                            continue;
                        }
                        out.push(Mutant {
                            skeleton: skeleton.clone(),
                            file: file.rel.clone(),
                            function: def.qualname.clone(),
                            class: def.class.clone(),
                            kind: m.operator.name(),
                            line,
                            description: m.description,
                            focus: focus(&patch, &file.parsed, &reparsed),
                            text: patched,
                            patch,
                            tests: tests.clone(),
                            fn_range: def.byte_range.clone(),
                        });
                        taken += 1;
                        break;
                    }
                }
            }
        }
    }
    if let Some(planter) = models.planter {
        let lm = lm_mutants(planter, lm_sites, options.seed, sampling_deadline)?;
        out = interleave(out, lm);
    }
    Ok(out)
}

/// `a` and `b` taken in turn while both last (validation may stop at the budget: both kinds
/// get tried), then the rest of the longer one.
fn interleave<T>(a: Vec<T>, b: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    loop {
        match (a.next(), b.next()) {
            (None, None) => return out,
            (x, y) => out.extend(x.into_iter().chain(y)),
        }
    }
}

/// A covered function whose lines SmolLM2 may rewrite.
struct LmSite<'p> {
    file: &'p crate::project::SourceFile,
    def: crate::python::FunctionDef,
    lines: Vec<usize>,
    tests: Vec<String>,
    skeleton: String,
}

/// `neural-lm` bugs in a seeded choice of `planter.options.functions` sites, a seeded
/// choice of lines in each, until the sampling deadline.
fn lm_mutants(
    planter: &LinePlanter,
    mut sites: Vec<LmSite<'_>>,
    seed: u64,
    deadline: Instant,
) -> Result<Vec<Mutant>, crate::model::ModelError> {
    let mut rng = crate::rng::Rng::new(seed ^ 0x6c6d);
    rng.shuffle(&mut sites);
    let mut out = Vec::new();
    for site in sites.iter_mut().take(planter.options.functions) {
        if Instant::now() >= deadline {
            break;
        }
        rng.shuffle(&mut site.lines);
        site.lines.truncate(planter.options.lines);
        let text = site.file.parsed.text();
        let mut seen = HashSet::new();
        let salt = seed ^ hash(&site.file.rel) ^ hash(&site.def.qualname);
        let past_deadline = || Instant::now() >= deadline;
        for bug in planter.sample(text, &site.def, &site.lines, salt, &past_deadline)? {
            let patch =
                Patch::single(site.file.rel.clone(), crate::patch::Edit::replacement(bug.range, bug.content.clone()));
            let patched = patch.apply(text);
            let reparsed = Parsed::new(patched.as_str());
            if !reparsed.is_valid() || !seen.insert(patched.clone()) {
                continue;
            }
            out.push(Mutant {
                file: site.file.rel.clone(),
                function: site.def.qualname.clone(),
                class: site.def.class.clone(),
                kind: "neural-lm",
                line: bug.line,
                description: format!("SmolLM2 rewrote line {}: `{}`", bug.line, bug.content.trim()),
                focus: focus(&patch, &site.file.parsed, &reparsed),
                text: patched,
                patch,
                tests: site.tests.clone(),
                fn_range: site.def.byte_range.clone(),
                skeleton: site.skeleton.clone(),
            });
        }
    }
    Ok(out)
}

/// Token budget of the skeleton recorded with each bug (and fed to the bug-creator).
const SKELETON_BUDGET: usize = 1024;

/// Bugs sampled from the bug-creator model for one function: re-indented, turned into a
/// minimal edit inside the function, re-parsed and deduplicated.
fn neural_mutants(
    sampler: &mut crate::model::Patcher,
    file: &crate::project::SourceFile,
    def: &crate::python::FunctionDef,
    skeleton: &str,
    tests: &[String],
    seen: &mut HashSet<String>,
    options: &InjectOptions,
) -> Result<Vec<Mutant>, crate::model::ModelError> {
    let text = file.parsed.text();
    let sample_options = crate::model::SampleOptions {
        n: options.neural_samples,
        temperature: 0.8,
        top_p: 0.95,
        max_len: sampler.max_target_len(),
        seed: options.seed ^ hash(&def.qualname),
    };
    let run = sampler.sample(skeleton, &sample_options)?;
    let line_start = text[..def.byte_range.start].rfind('\n').map_or(0, |i| i + 1);
    let old = &text[line_start..def.byte_range.end];
    let mut out = Vec::new();
    for sample in run.samples {
        let new = crate::repair::candidate::reindent(&sample.text, old);
        let new = new.trim_end_matches('\n');
        if new.trim().is_empty() || new == old {
            continue;
        }
        let edit = crate::repair::candidate::minimal_edit(old, new, line_start);
        let line = text[..edit.range.start].matches('\n').count() + 1;
        let patch = Patch::single(file.rel.clone(), edit);
        let patched = patch.apply(text);
        let reparsed = Parsed::new(patched.as_str());
        if !reparsed.is_valid() || !seen.insert(patched.clone()) {
            continue;
        }
        out.push(Mutant {
            file: file.rel.clone(),
            function: def.qualname.clone(),
            class: def.class.clone(),
            kind: "neural",
            line,
            description: format!("bug-creator sample ({} of {})", sample.count, options.neural_samples),
            focus: focus(&patch, &file.parsed, &reparsed),
            text: patched,
            patch,
            tests: tests.to_vec(),
            fn_range: def.byte_range.clone(),
            skeleton: skeleton.to_string(),
        });
    }
    Ok(out)
}

/// Run every mutant's covering tests in parallel workers; `None` for mutants not run before the deadline.
fn validate(
    pytest: &Pytest,
    config: &LabConfig<'_>,
    mutants: &[Mutant],
    jobs: usize,
    on_event: &(dyn Fn(InjectEvent) + Sync),
) -> Result<Vec<Option<Session>>, RepoError> {
    let queue = Mutex::new((0..mutants.len()).collect::<VecDeque<_>>());
    let results: Mutex<Vec<Option<Session>>> = Mutex::new(vec![None; mutants.len()]);
    let error: Mutex<Option<LabError>> = Mutex::new(None);
    let work = |worker: &mut Worker<'_>| loop {
        if Instant::now() >= config.deadline || error.lock().expect("lock").is_some() {
            break;
        }
        let Some(i) = queue.lock().expect("lock").pop_front() else { break };
        let m = &mutants[i];
        match worker.run_patched(&m.file, &m.text, m.focus.as_ref(), &m.tests) {
            Ok(session) => {
                let killed = session.failing().next().is_some() || session.exit.is_timeout();
                results.lock().expect("lock")[i] = Some(session);
                on_event(InjectEvent::MutantDone { killed });
            }
            Err(e) => {
                error.lock().expect("lock").get_or_insert(e);
                break;
            }
        }
    };
    let jobs = jobs.clamp(1, mutants.len().max(1));
    with_workers(&Pool::default(), pytest, config, jobs, &|_: LabEvent| {}, &work)?;
    if let Some(e) = error.into_inner().expect("lock") {
        return Err(e.into());
    }
    Ok(results.into_inner().expect("lock"))
}

fn hash(text: &str) -> u64 {
    crate::hash::fnv1a(text.bytes())
}

#[cfg(test)]
mod tests {
    use super::interleave;

    #[test]
    fn interleaving_alternates_while_both_last_then_keeps_the_rest() {
        assert_eq!(interleave(vec![1, 3, 5, 7], vec![2, 4]), vec![1, 2, 3, 4, 5, 7]);
        assert_eq!(interleave(Vec::new(), vec![2, 4]), vec![2, 4]);
    }
}
