//! `deepdebug fix`: arguments, progress bar, diff/JSON output and `--apply`.

use super::parse_duration;
use anyhow::{bail, Context};
use deepdebug::exit_code::ExitCode;
use deepdebug::repair::candidate::GenerateLimits;
use deepdebug::repair::fix::{fix, FixEvent, FixOptions, FixOutcome, FixStatus};
use deepdebug::repair::validate::EngineChoice;
use deepdebug::report::FixReport;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

mod settings;

/// Settings come from `[tool.deepdebug]` in the project's pyproject.toml and from its
/// deepdebug.toml (same keys as these flags, kebab-case); a flag given here overrides them.
#[derive(clap::Args, Clone)]
pub struct FixArgs {
    /// The Python project to repair.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Wall-clock budget for the whole run (e.g. 60s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    timeout: Duration,
    /// pytest selectors (paths or node ids) naming the failing tests to fix; repeatable. The
    /// rest of the suite still runs to guard against regressions (see --tests-only).
    #[arg(long = "tests", value_name = "SELECTOR")]
    tests: Vec<String>,
    /// Run only the --tests selection, baseline and validation alike. Unsafe: the reported
    /// patch may break tests outside the selection.
    #[arg(long, requires = "tests")]
    tests_only: bool,
    /// Python interpreter with pytest (default: the project's .venv, else python3).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Write the patch into the repository.
    #[arg(long)]
    apply: bool,
    /// Report a patch that shows an anti-pattern (it may fit the tests rather than fix the bug:
    /// a constant return, a deleted exit, code the tests no longer run, ...) as the fix (exit 0)
    /// instead of a suggestion (exit 3, the diff on stderr, never applied).
    #[arg(long)]
    accept_overfit: bool,
    /// Print a JSON report on stdout instead of the diff.
    #[arg(long)]
    json: bool,
    /// Also write report.json and fix.diff into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Parallel validation workers (default: number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Per-test time limit during the baseline run.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    test_timeout: Duration,
    /// Validation engine: `batch` (persistent pytest fork server whose children each validate
    /// several hot-swapped candidates, checking for state left behind between them; fastest),
    /// `fork` (the same server, one child per candidate) or `subprocess` (one pytest process
    /// per run).
    #[arg(long, value_enum, default_value = "batch")]
    engine: Engine,
    /// Operator priors: a priors.json (`deepdebug priors`) or a JSONL of mined fix pairs
    /// (`deepdebug mine` output) to learn them from.
    #[arg(long, value_name = "FILE")]
    priors: Option<PathBuf>,
    /// How many of the most suspicious lines receive candidate edits.
    #[arg(long, default_value_t = 200)]
    max_lines: usize,
    #[command(flatten)]
    pub sources: super::sources::SourceArgs,
    #[command(flatten)]
    sandbox: super::sandbox::SandboxArgs,
    /// Never edit these: a file glob relative to the project (`src/pkg/vendor/**`; a bare
    /// name matches in any directory) or a function (`src/pkg/io.py::Reader.load`); repeatable.
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,
    /// Print the settings in effect (flags, deepdebug.toml, pyproject.toml [tool.deepdebug],
    /// defaults) and where each comes from, then exit.
    #[arg(long)]
    show_settings: bool,
    /// Ignore the project's settings files.
    #[arg(long)]
    isolated: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Engine {
    Batch,
    Fork,
    Subprocess,
}

pub fn run(args: &FixArgs, matches: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    let (args, shown) = match settings::resolve(args, matches) {
        Ok(resolved) => resolved,
        Err(err) => {
            eprintln!("error: {err:#}");
            return Ok(ExitCode::Usage);
        }
    };
    if args.show_settings {
        print!("{shown}");
        return Ok(ExitCode::Success);
    }
    let options = match fix_options(&args)? {
        Ok(options) => options,
        Err(code) => return Ok(code),
    };
    let progress = Progress::new(args.json);
    let result = fix(&options, &|event| progress.show(event));
    progress.bar.finish_and_clear();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(err.exit_code());
        }
    };
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let report = FixReport::new(&outcome, &args.repo.display().to_string());
    write_out(&args, &outcome, &report)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    summarize(&args, &outcome, &report)
}

/// The library's options from the resolved flags and settings (`Err`: a usage error, said).
fn fix_options(args: &FixArgs) -> anyhow::Result<Result<FixOptions, ExitCode>> {
    let exclude = match deepdebug::exclude::Exclude::new(&args.exclude) {
        Ok(exclude) => exclude,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(Err(ExitCode::Usage));
        }
    };
    let priors = super::load_priors(args.priors.as_deref())?;
    let sources = match args.sources.resolve() {
        Ok(sources) => sources,
        Err(code) => return Ok(Err(code)),
    };
    Ok(Ok(FixOptions {
        priors,
        selectors: args.tests.clone(),
        tests_only: args.tests_only,
        python: args.python.clone(),
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        baseline_test_timeout: args.test_timeout,
        limits: GenerateLimits { max_lines: args.max_lines, ..GenerateLimits::default() },
        sandbox: args.sandbox.kind(),
        docker: args.sandbox.docker(),
        engine: match args.engine {
            Engine::Batch => EngineChoice::Batch,
            Engine::Fork => EngineChoice::Fork,
            Engine::Subprocess => EngineChoice::Subprocess,
        },
        exclude,
        accept_overfit: args.accept_overfit,
        ..FixOptions::new(args.repo.clone(), args.timeout, sources)
    }))
}

/// The spinner on stderr (hidden with `--json` or when stderr is not a terminal).
struct Progress {
    bar: ProgressBar,
    /// When the search must end: the "N s left" of the message.
    search_deadline: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Progress {
    fn new(json: bool) -> Progress {
        let bar = if json || !std::io::stderr().is_terminal() {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        } else {
            ProgressBar::new_spinner()
        };
        Progress { bar, search_deadline: std::sync::Mutex::new(None) }
    }

    fn show(&self, event: FixEvent) {
        let bar = &self.bar;
        match event {
            FixEvent::BaselineStarted => {
                bar.set_message("running the test suite (baseline, with coverage)");
                bar.enable_steady_tick(Duration::from_millis(120));
            }
            FixEvent::SearchStarted { deadline } => {
                *self.search_deadline.lock().expect("progress lock") = Some(deadline);
                let template = "{spinner} searching: {pos} candidates validated ({per_sec}) {msg} ({elapsed})";
                bar.set_style(ProgressStyle::with_template(template).expect("static template"));
                bar.set_message("");
            }
            FixEvent::Validated { outcome, .. } => {
                bar.inc(1);
                if outcome == deepdebug::repair::validate::OutcomeKind::Plausible {
                    bar.set_message("found a plausible patch, confirming");
                } else {
                    let deadline = *self.search_deadline.lock().expect("progress lock");
                    bar.set_message(format!("{:.0}s left", seconds_left(deadline)));
                }
            }
            FixEvent::Ranking { count } => bar.set_message(format!("scoring {count} plausible patches with SmolLM2")),
            FixEvent::Confirming { deadline } => bar.set_message(format!(
                "confirming a plausible patch by fresh runs of the suite ({:.0}s of the budget left)",
                seconds_left(Some(deadline))
            )),
        }
    }
}

fn seconds_left(deadline: Option<std::time::Instant>) -> f64 {
    deadline.map_or(0.0, |d| d.saturating_duration_since(std::time::Instant::now()).as_secs_f64())
}

/// `--out DIR`: report.json and, when there is a patch, fix.diff (suggestion.diff for a
/// suggestion).
fn write_out(args: &FixArgs, outcome: &FixOutcome, report: &FixReport) -> anyhow::Result<()> {
    let Some(dir) = &args.out else { return Ok(()) };
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(report)?)
        .context("failed to write report.json")?;
    if let Some(diff) = &outcome.diff {
        let name = if matches!(outcome.status, FixStatus::Suggested { .. }) { "suggestion.diff" } else { "fix.diff" };
        std::fs::write(dir.join(name), diff).with_context(|| format!("failed to write {name}"))?;
    }
    Ok(())
}

/// A suggestion on stderr, diff included (stdout stays empty: a script that applies what
/// `fix` prints applies only fixes).
fn print_suggestion(args: &FixArgs, outcome: &FixOutcome) {
    let Some(chosen) = outcome.chosen_candidate() else { return };
    let names: Vec<&str> = outcome.chosen_overfit().iter().map(|a| a.name()).collect();
    eprintln!(
        "no patch trusted as a fix: the only plausible patch found, in {}:{} ({}: {}), may fit the tests rather than fix the bug ({}); review it, or pass --accept-overfit to report such a patch as the fix",
        chosen.patch.file,
        chosen.line,
        chosen.source.name(),
        chosen.description,
        names.join(", ")
    );
    eprint!("{}", outcome.diff.as_deref().unwrap_or_default());
    if args.apply {
        eprintln!("--apply: a suggestion is not applied");
    }
}

/// The diff on stdout (unless `--json`), the summary on stderr, `--apply`, and the exit code.
fn summarize(args: &FixArgs, outcome: &FixOutcome, report: &FixReport) -> anyhow::Result<ExitCode> {
    let tried = outcome.validated.len();
    match outcome.status {
        FixStatus::NothingToFix => {
            eprintln!("all {} tests pass: nothing to fix", outcome.baseline.tests.len());
            if !args.tests.is_empty() {
                eprintln!(
                    "note: the selected tests passed with PYTHONHASHSEED={}; a test that fails only in some runs may depend on the hash seed or on test order: set PYTHONHASHSEED to a seed under which it fails",
                    deepdebug::pytest::hash_seed()
                );
            }
            Ok(ExitCode::NothingToFix)
        }
        FixStatus::Suggested { .. } => {
            print_suggestion(args, outcome);
            Ok(ExitCode::NotFixed)
        }
        FixStatus::NotFixed => {
            eprintln!(
                "no plausible patch: {tried} of {} candidates validated in {:.1}s ({}; {} failing tests)",
                outcome.candidates.len(),
                outcome.elapsed.as_secs_f64(),
                speed_line(&report.validation),
                outcome.failing.len()
            );
            Ok(ExitCode::NotFixed)
        }
        FixStatus::Fixed { .. } => {
            let best = outcome.best_candidate().expect("fixed implies a best candidate");
            if !args.json {
                print!("{}", outcome.diff.as_deref().unwrap_or_default());
            }
            eprintln!(
                "plausible patch in {}:{} ({}: {}) after {tried} candidates, {:.1}s ({}); {}",
                best.patch.file,
                best.line,
                best.source.name(),
                best.description,
                outcome.elapsed.as_secs_f64(),
                speed_line(&report.validation),
                guard_line(&outcome.guard)
            );
            if let Some(ranking) = &report.ranking {
                print_ranking(ranking);
            }
            if args.apply {
                apply(&args.repo, &best.patch.file, outcome, &best.patched_text)?;
                eprintln!("applied to {}", args.repo.join(&best.patch.file).display());
            }
            Ok(ExitCode::Success)
        }
    }
}

/// The plausible patches as SmolLM2 ranked them, the chosen one starred.
fn print_ranking(ranking: &deepdebug::report::RankingReport) {
    eprintln!(
        "SmolLM2 ranking of {} plausible patches ({} scored in {:.1}s; no anti-pattern, minimal changes, fewest edits and deleted calls first, then key = ln(score) + {} × gain):",
        ranking.plausible.len(),
        ranking.scored,
        ranking.seconds,
        ranking.likelihood_weight
    );
    for r in &ranking.plausible {
        let likelihood = r.likelihood.as_ref().map_or_else(
            || "not scored".to_string(),
            |l| {
                format!(
                    "gain {:+.2} nats ({:.3} vs {:.3} nats/token)",
                    l.gain_nats, l.nats_per_token, l.original_nats_per_token
                )
            },
        );
        let overfit = if r.overfit.is_empty() { String::new() } else { format!(", overfit: {}", r.overfit.join(", ")) };
        eprintln!(
            "  {} line {}: {} — score {:.3}, {likelihood}, key {:.2}{overfit}{}{}{}",
            if r.chosen { "*" } else { " " },
            r.line,
            r.description,
            r.score,
            r.rank_key,
            if r.superseded { ", contains a smaller plausible change" } else { "" },
            if r.implausible { ", too unlikely to report" } else { "" },
            if r.outcome.is_plausible() { String::new() } else { format!(" ({})", r.outcome) }
        );
    }
}

/// Write the patched file, refusing if the file changed since it was read.
fn apply(repo: &std::path::Path, rel: &str, outcome: &FixOutcome, patched: &str) -> anyhow::Result<()> {
    let path = repo.join(rel);
    let current = std::fs::read_to_string(&path).with_context(|| format!("failed to read {}", path.display()))?;
    let diff_now = deepdebug::patch::unified_diff(rel, &current, patched);
    if outcome.diff.as_deref() != Some(diff_now.as_str()) {
        bail!("{} changed while deepdebug was running; not applying (the diff is above)", path.display());
    }
    write_atomically(&path, patched).with_context(|| format!("failed to write {}", path.display()))
}

/// Replace `path` by a file holding `text` in one rename (same directory, same permissions):
/// an interruption leaves the old file or the new one, never half of it.
fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut staged = tempfile::Builder::new().prefix(".deepdebug-apply-").tempfile_in(dir)?;
    staged.write_all(text.as_bytes())?;
    staged.as_file().set_permissions(std::fs::metadata(path)?.permissions())?;
    staged.as_file().sync_all()?;
    staged.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// How many tests guarded the patch, and what the guard left out.
fn guard_line(guard: &deepdebug::repair::choose::guard::GuardSummary) -> String {
    let checked = guard.checked.unwrap_or(guard.known);
    let left = &guard.left_out;
    let left_out = left.uncollectable.len() + left.failing + left.timed_out;
    let mut line = format!("guarded by {checked} other test{}", if checked == 1 { "" } else { "s" });
    if guard.thin() {
        line.push_str(" (thin guard: only the failing tests checked it)");
    } else if left_out > 0 {
        line.push_str(&format!(" ({left_out} left out: see the warnings)"));
    }
    line
}

/// Validation speed for the summary line: candidates per second, the hot-swapped share, and
/// the failing tests' own time when it is most of what a candidate costs.
fn speed_line(validation: &deepdebug::report::ValidationReport) -> String {
    let mut line = format!(
        "{:.1} candidates/s, {:.0}% hot-swapped",
        validation.candidates_per_second,
        validation.fast_share * 100.0
    );
    let test = validation.failing_tests_seconds;
    if validation.candidates_per_second > 0.0 && test * validation.candidates_per_second > 0.5 {
        line.push_str(&format!("; the failing tests alone take {:.0} ms", test * 1000.0));
    }
    line
}
