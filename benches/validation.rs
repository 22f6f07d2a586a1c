//! Benchmark: candidates validated per second by the batch and fork-server engines vs. one pytest process per run (also in Docker).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use deepdebug::localize::localize;
use deepdebug::project::{copy_tree, Project};
use deepdebug::pytest::{Pytest, RunSpec, Session, TestRun};
use deepdebug::repair::candidate::{Candidate, GenerateLimits};
use deepdebug::repair::generate;
use deepdebug::repair::learn::priors::Priors;
use deepdebug::repair::validate::{self, EngineChoice, LabConfig};
use deepdebug::sandbox::docker::IMAGE_PYTHON;
use deepdebug::sandbox::{DockerConfig, Sandbox, SandboxKind};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A generated project: `modules` modules of `functions` functions, one test per function,
/// and one comparison bug in the first function.
fn make_project(dir: &Path, modules: usize, functions: usize) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("pkg/__init__.py"), "").unwrap();
    for m in 0..modules {
        let mut src = String::from("import json\nimport statistics\nimport decimal\n\n");
        let mut tests = format!("from pkg.mod{m} import *\n\n");
        for f in 0..functions {
            let op = if m == 0 && f == 0 { ">" } else { ">=" };
            writeln!(
                src,
                "def f{f}(xs, k={f}):\n    out = []\n    for x in xs:\n        if x {op} k:\n            out.append(x - k)\n    return sorted(out)\n"
            )
            .unwrap();
            writeln!(
                tests,
                "def test_f{f}():\n    assert f{f}([{f}, {a}, {b}]) == [0, {da}, {db}]\n",
                a = f + 3,
                b = f + 7,
                da = 3,
                db = 7
            )
            .unwrap();
        }
        std::fs::write(dir.join(format!("pkg/mod{m}.py")), src).unwrap();
        std::fs::write(dir.join(format!("tests/test_mod{m}.py")), tests).unwrap();
    }
}

/// A project whose tests leave state behind in module globals, a class attribute and a cache:
/// an engine that ran several candidates in one process without noticing would judge later
/// candidates differently.
fn make_leaky_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("pkg/__init__.py"), "").unwrap();
    let module = "import functools\n\nCOUNTER = [0]\nSEEN = {}\n\n\nclass Settings:\n    level = 0\n\n\ndef bump(step):\n    if step > 1:\n        COUNTER[0] += step\n    return COUNTER[0]\n\n\ndef remember(key, value):\n    SEEN[key] = value\n    Settings.level += 1\n    return len(SEEN)\n\n\n@functools.lru_cache(maxsize=None)\ndef scaled(x):\n    return x * (Settings.level + 1)\n";
    let tests = "from pkg.state import bump, remember, scaled, Settings\n\n\ndef test_bump_one():\n    assert bump(1) == 1\n\n\ndef test_bump_three():\n    assert bump(3) == 3\n\n\ndef test_remember():\n    assert remember('k', bump(2)) == 1\n    assert Settings.level == 1\n\n\ndef test_scaled():\n    assert scaled(2) == 2\n";
    // A second test module: a candidate stopped at a failure there leaves it set up.
    let more = "import pytest\nfrom pkg.state import bump\n\n\n@pytest.fixture(scope='module')\ndef start():\n    yield bump(0)\n\n\ndef test_step_two(start):\n    assert bump(2) == start + 2\n\n\ndef test_step_zero(start):\n    assert bump(0) >= start\n";
    std::fs::write(dir.join("pkg/state.py"), module).unwrap();
    std::fs::write(dir.join("tests/test_state.py"), tests).unwrap();
    std::fs::write(dir.join("tests/test_more.py"), more).unwrap();
}

/// User + system CPU seconds of this process or of its reaped children.
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills the zeroed struct.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    #[allow(clippy::cast_precision_loss)]
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Validate `candidates` with `engine` on `jobs` workers.
fn measure(
    pytest: &Pytest,
    project: &Project,
    baseline: &Session,
    candidates: &[Candidate],
    engine: EngineChoice,
    jobs: usize,
) -> Measure {
    let config =
        LabConfig::for_baseline(project.root(), baseline, engine, jobs, Instant::now() + Duration::from_secs(3600));
    measure_with(pytest, &config, candidates)
}

/// Validate `candidates` under `config`: rate, median time, hot-swapped share and outcomes.
fn measure_with(pytest: &Pytest, config: &LabConfig<'_>, candidates: &[Candidate]) -> Measure {
    let (own, children) = (cpu_seconds(libc::RUSAGE_SELF), cpu_seconds(libc::RUSAGE_CHILDREN));
    let start = Instant::now();
    let validated = validate::run(pytest, config, candidates, &HashSet::new(), &|_| {}).unwrap();
    let elapsed = start.elapsed().as_secs_f64();
    eprintln!(
        "  {:?} engine, {} job(s): {elapsed:.2} s wall; CPU {:.2} s in deepdebug, {:.2} s in Python (servers, children, processes)",
        config.engine,
        config.jobs,
        cpu_seconds(libc::RUSAGE_SELF) - own,
        cpu_seconds(libc::RUSAGE_CHILDREN) - children
    );
    let mut each: Vec<f64> = validated.iter().map(|v| v.elapsed.as_secs_f64() * 1000.0).collect();
    each.sort_by(f64::total_cmp);
    let fast = validated.iter().filter(|v| v.path.path.is_fast()).count();
    Measure {
        per_second: validated.len() as f64 / elapsed,
        fast_share: fast as f64 / validated.len().max(1) as f64,
        median_ms: each.get(each.len() / 2).copied().unwrap_or(0.0),
        outcomes: validated.iter().map(|v| v.outcome.name()).collect(),
        details: validated.iter().map(|v| format!("{:?}", v.outcome)).collect(),
    }
}

/// The small project validated in Docker: one container per pytest session vs. the fork server
/// in one container (skipped with `DEEPDEBUG_SKIP_DOCKER=1` or without the engine and image).
fn docker_row(candidates_per_run: usize) {
    if std::env::var("DEEPDEBUG_SKIP_DOCKER").is_ok_and(|v| v == "1") {
        println!("docker: skipped (DEEPDEBUG_SKIP_DOCKER=1)");
        return;
    }
    let sandbox = match Sandbox::new(SandboxKind::Docker, &DockerConfig::default()) {
        Ok(sandbox) => Arc::new(sandbox),
        Err(err) => {
            println!("docker: skipped ({err})");
            return;
        }
    };
    let pytest = Pytest::with_sandbox(Path::new(IMAGE_PYTHON), sandbox).expect("the image's python3 with pytest");
    let dir = tempfile::tempdir().unwrap();
    make_project(dir.path(), 1, 5);
    let project = Project::load(dir.path()).unwrap();
    let baseline =
        pytest.run(&RunSpec::baseline(project.root(), Duration::from_secs(10), Duration::from_secs(300))).unwrap();
    let localization = localize(&project, &baseline);
    let mut candidates =
        generate::operator_candidates(&project, &localization, GenerateLimits::default(), &Priors::default());
    candidates.truncate(candidates_per_run.min(20));
    let slow = measure(&pytest, &project, &baseline, &candidates, EngineChoice::Subprocess, 1);
    let fast = measure(&pytest, &project, &baseline, &candidates, EngineChoice::Fork, 1);
    assert_agree("the small project in Docker", &slow, &fast);
    println!(
        "docker, small project, {} candidates, 1 job: {:.2}/s with a container per session ({:.0} ms each), \
         {:.2}/s with the fork server in one container ({:.1} ms each): {:.1}x",
        candidates.len(),
        slow.per_second,
        slow.median_ms,
        fast.per_second,
        fast.median_ms,
        fast.per_second / slow.per_second
    );
}

struct Measure {
    per_second: f64,
    /// Share of the candidates hot-swapped (`batch` or `warm` engine path).
    fast_share: f64,
    /// Median time to validate one candidate, in milliseconds (engine start-up excluded).
    median_ms: f64,
    outcomes: Vec<&'static str>,
    details: Vec<String>,
}

/// Panics, naming the candidates, when two engines disagree on any outcome.
fn assert_agree(what: &str, a: &Measure, b: &Measure) {
    let differ: Vec<String> = (0..a.outcomes.len().max(b.outcomes.len()))
        .filter(|&i| a.outcomes.get(i) != b.outcomes.get(i))
        .map(|i| format!("#{i}: {:?} vs {:?}", a.details.get(i), b.details.get(i)))
        .collect();
    assert!(differ.is_empty(), "engines disagree on {what}: {}", differ.join("; "));
}

fn main() {
    // "wide": few tests but long modules (1,400 lines), as in real projects, where compiling
    // the patched module (not only the edited function) used to dominate a child's time.
    let sizes: &[(&str, usize, usize)] = &[("small", 1, 5), ("medium", 8, 15), ("large", 30, 20), ("wide", 2, 200)];
    // `BENCH_PROJECTS=small,wide` runs only those projects (for profiling one of them).
    let only: Option<Vec<String>> =
        std::env::var("BENCH_PROJECTS").ok().map(|v| v.split(',').map(str::to_string).collect());
    let sizes: Vec<_> =
        sizes.iter().filter(|(name, ..)| only.as_ref().is_none_or(|o| o.iter().any(|n| n == name))).collect();
    let candidates_per_run: usize = std::env::var("BENCH_CANDIDATES").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    // As `fix` does: a version manager's shim is resolved once, for the baseline and the engine.
    let here = std::env::current_dir().unwrap();
    let pytest =
        Pytest::in_dir(Path::new("python3"), Arc::new(Sandbox::none()), Some(&here)).expect("python3 with pytest");
    println!("python: {}", pytest.python().display());
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    println!("validation engine benchmark: {candidates_per_run} candidates per run, engine start-up included");
    println!("baseline: one pytest process per candidate, run one at a time (`--engine subprocess --jobs 1`)");
    // A `fix` run validates hundreds of candidates: the engine's start-up (Python, pytest,
    // collection) is paid once per worker, the baseline's once per candidate. The long run
    // repeats the candidates (fresh ids) to show the rate once start-up is amortized.
    let long_factor: usize = std::env::var("BENCH_LONG_FACTOR").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    println!(
        "{:<8} {:>6} {:>13} {:>8} {:>8} {:>9} {:>8} {:>8} {:>11} {:>8} {:>8} {:>12} {:>8}",
        "project",
        "tests",
        "subprocess/s",
        "fork/s",
        "1 job",
        "batch/s",
        "1 job",
        format!("fork {cores}j"),
        format!("batch {cores}j/s"),
        "default",
        "fork long",
        format!("batch long/s"),
        "long"
    );
    let mut medium_long = None;
    for &&(name, modules, functions) in &sizes {
        let dir = tempfile::tempdir().unwrap();
        make_project(dir.path(), modules, functions);
        let project = Project::load(dir.path()).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        copy_tree(project.root(), scratch.path()).unwrap();
        let baseline =
            pytest.run(&RunSpec::baseline(scratch.path(), Duration::from_secs(10), Duration::from_secs(300))).unwrap();
        let localization = localize(&project, &baseline);
        let mut candidates =
            generate::operator_candidates(&project, &localization, GenerateLimits::default(), &Priors::default());
        candidates.truncate(candidates_per_run);
        let measure =
            |engine: EngineChoice, jobs: usize| measure(&pytest, &project, &baseline, &candidates, engine, jobs);
        let slow = measure(EngineChoice::Subprocess, 1);
        let fork = measure(EngineChoice::Fork, 1);
        let batch = measure(EngineChoice::Batch, 1);
        let fork_all = measure(EngineChoice::Fork, cores);
        let batch_all = measure(EngineChoice::Batch, cores);
        for other in [&fork, &batch, &fork_all, &batch_all] {
            assert_agree(name, &slow, other);
        }
        let repeated: Vec<Candidate> = (0..long_factor.max(1))
            .flat_map(|_| candidates.iter().cloned())
            .enumerate()
            .map(|(id, c)| Candidate { id: deepdebug::repair::candidate::CandidateId(id), ..c })
            .collect();
        let long = |engine| self::measure(&pytest, &project, &baseline, &repeated, engine, cores);
        let (fork_long, batch_long) = (long(EngineChoice::Fork), long(EngineChoice::Batch));
        assert_agree(&format!("{name}, repeated"), &fork_long, &batch_long);
        let ratio = |m: &Measure| m.per_second / slow.per_second;
        println!(
            "{name:<8} {:>6} {:>13.2} {:>8.2} {:>7.1}x {:>9.2} {:>7.1}x {:>7.1}x {:>11.2} {:>7.1}x {:>8.1}x {:>12.2} {:>7.1}x",
            baseline.tests.len(),
            slow.per_second,
            fork.per_second,
            ratio(&fork),
            batch.per_second,
            ratio(&batch),
            ratio(&fork_all),
            batch_all.per_second,
            ratio(&batch_all),
            ratio(&fork_long),
            batch_long.per_second,
            ratio(&batch_long),
        );
        if name == "medium" {
            medium_long = Some((repeated.len(), ratio(&batch_long)));
            busy_loop_rows(&pytest, &project, &baseline, &repeated, &slow, long_factor, cores);
        }
        let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
        for o in &slow.outcomes {
            *kinds.entry(o).or_default() += 1;
        }
        eprintln!("  {name}: {} candidates: {kinds:?}", slow.outcomes.len());
        eprintln!(
            "  {name}: median per candidate {:.1} ms subprocess, {:.1} ms fork, {:.1} ms batch",
            slow.median_ms, fork.median_ms, batch.median_ms
        );
    }
    println!("default = batch engine on all {cores} cores (what `deepdebug fix` does) vs. the baseline");
    println!(
        "long = the same on the candidates repeated {long_factor} times (start-up amortized as in a `fix` run) vs. the baseline, \
         whose rate does not depend on the count"
    );
    leaky_row(&pytest, cores);
    real_rows(candidates_per_run, cores);
    docker_row(candidates_per_run);
    if let Some((count, ratio)) = medium_long {
        println!("validation speedup: {ratio:.1}x (batch engine, all cores, {count} candidates, medium project)");
    }
}

/// Where the batch engine's time goes on the long run: the candidates the baseline judged
/// timeouts (busy loops: each needs the tight CPU limit and then the lenient one, the same in
/// every engine) validated alone, on one job and on all cores, and the rest without them.
fn busy_loop_rows(
    pytest: &Pytest,
    project: &Project,
    baseline: &Session,
    repeated: &[Candidate],
    slow: &Measure,
    long_factor: usize,
    cores: usize,
) {
    let count = slow.outcomes.len();
    let times_out = |i: usize| slow.outcomes[i % count] == "timeout";
    let pick = |loops: bool| -> Vec<Candidate> {
        repeated.iter().enumerate().filter(|&(i, _)| times_out(i) == loops).map(|(_, c)| c.clone()).collect()
    };
    let (loops, rest) = (pick(true), pick(false));
    if loops.is_empty() {
        return;
    }
    let rate = |set: &[Candidate], jobs| measure(pytest, project, baseline, set, EngineChoice::Batch, jobs).per_second;
    let (one, all, others) = (rate(&loops, 1), rate(&loops, cores), rate(&rest, cores));
    println!(
        "busy loops: the {} candidates of the long run that time out ({} × {long_factor}), alone: {one:.2}/s on 1 job, \
         {all:.2}/s on {cores} (rechecks spread over the workers); the other {} candidates: {others:.2}/s ({:.1}× the baseline)",
        loops.len(),
        loops.len() / long_factor.max(1),
        rest.len(),
        others / slow.per_second
    );
}

/// The project whose tests leave state behind: the batch engine must judge every candidate
/// as the fork-per-candidate engine does.
fn leaky_row(pytest: &Pytest, cores: usize) {
    let dir = tempfile::tempdir().unwrap();
    make_leaky_project(dir.path());
    let project = Project::load(dir.path()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(project.root(), scratch.path()).unwrap();
    let baseline =
        pytest.run(&RunSpec::baseline(scratch.path(), Duration::from_secs(10), Duration::from_secs(300))).unwrap();
    let localization = localize(&project, &baseline);
    let candidates =
        generate::operator_candidates(&project, &localization, GenerateLimits::default(), &Priors::default());
    let fork = measure(pytest, &project, &baseline, &candidates, EngineChoice::Fork, cores);
    let batch = measure(pytest, &project, &baseline, &candidates, EngineChoice::Batch, cores);
    assert_agree("the leaky project", &fork, &batch);
    let plausible = batch.outcomes.iter().filter(|o| **o == "plausible").count();
    println!(
        "leaky project ({} tests in two modules that mutate globals, a class attribute and a cache): {} candidates, {plausible} plausible, \
         batch and fork engines agree on every one ({:.2}/s batch, {:.2}/s fork)",
        baseline.tests.len(),
        candidates.len(),
        batch.per_second,
        fork.per_second
    );
}

/// Real projects as found: the first bug of each package of the legacy real-bug suite
/// (`datasets/legacy`, built into `LEGACY_DIR`, default `/work/legacybugs`; skipped when it is
/// not built), with the failing tests' files as the selection. The batch engine on every core
/// must judge each candidate as one pytest process per candidate does.
fn real_rows(candidates_per_run: usize, cores: usize) {
    let suite = std::path::PathBuf::from(std::env::var("LEGACY_DIR").unwrap_or_else(|_| "/work/legacybugs".into()));
    let Ok(manifest) = std::fs::read_to_string(suite.join("manifest.json")) else {
        println!("real projects: skipped (no legacy suite at {}; see datasets/legacy/README.md)", suite.display());
        return;
    };
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let mut packages = HashSet::new();
    println!(
        "real projects (legacy suite, first bug per package, {candidates_per_run} candidates): {:<14} {:>6} {:>13} {:>9} {:>7} {:>6}",
        "bug", "tests", "subprocess/s", "batch/s", "ratio", "fast"
    );
    for bug in manifest["bugs"].as_array().unwrap() {
        let id = bug["id"].as_str().unwrap();
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(suite.join("meta").join(format!("{id}.json"))).unwrap())
                .unwrap();
        if !packages.insert(meta["package"].as_str().unwrap().to_string()) {
            continue;
        }
        real_row(&suite.join("bugs").join(id), id, &meta, candidates_per_run, cores);
    }
}

fn real_row(dir: &Path, id: &str, meta: &serde_json::Value, candidates_per_run: usize, cores: usize) {
    let python = dir.join(".venv/bin/python");
    let pytest = Pytest::in_dir(&python, Arc::new(Sandbox::none()), Some(dir)).expect("the bug's venv python");
    let mut files: Vec<String> = (meta["visible"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap().split("::").next().unwrap().to_string())
        .collect();
    files.sort();
    files.dedup();
    let project = Project::load(dir).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(project.root(), scratch.path()).unwrap();
    let run = TestRun {
        per_test_timeout: Some(Duration::from_secs(10)),
        ..TestRun::new(Some(&files), Duration::from_secs(300))
    };
    let spec = RunSpec { root: scratch.path(), coverage: true, run, deselect: &[], watch: &[] };
    let baseline = pytest.run(&spec).unwrap();
    let localization = localize(&project, &baseline);
    let mut candidates =
        generate::operator_candidates(&project, &localization, GenerateLimits::default(), &Priors::default());
    candidates.truncate(candidates_per_run);
    let measure = |engine: EngineChoice, jobs: usize| {
        let mut config = LabConfig::for_baseline(
            project.root(),
            &baseline,
            engine,
            jobs,
            Instant::now() + Duration::from_secs(3600),
        );
        config.selectors = &files;
        measure_with(&pytest, &config, &candidates)
    };
    let (slow, batch) = (measure(EngineChoice::Subprocess, 1), measure(EngineChoice::Batch, cores));
    assert_agree(id, &slow, &batch);
    println!(
        "{:<76} {:>6} {:>13.2} {:>9.2} {:>6.1}x {:>5.0}%",
        format!("  {id} ({} candidates)", candidates.len()),
        baseline.tests.len(),
        slow.per_second,
        batch.per_second,
        batch.per_second / slow.per_second,
        batch.fast_share * 100.0
    );
}
