//! `deepdebug eval quixbugs`: arguments, progress bar, and the JSON/Markdown/HTML result files.

use super::parse_duration;
use anyhow::Context;
use deepdebug::eval::quixbugs::{discover, evaluate, select, EvalOptions, ProgramResult};
use deepdebug::eval::render;
use deepdebug::exit_code::ExitCode;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Subcommand)]
pub enum EvalCommand {
    /// Run `fix` on every program of a QuixBugs checkout and classify each patch as genuine,
    /// plausible-only or not fixed.
    Quixbugs(QuixbugsArgs),
}

#[derive(clap::Args)]
pub struct QuixbugsArgs {
    /// Root of the QuixBugs checkout (python_programs/, correct_python_programs/, python_testcases/, ...).
    #[arg(long)]
    path: PathBuf,
    /// `fix` budget per program (e.g. 60s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    timeout: Duration,
    /// Directory for results.json, results.md and results.html.
    #[arg(long, default_value = "quixbugs.out")]
    out: PathBuf,
    /// Comma-separated program names (default: all).
    #[arg(long, value_delimiter = ',')]
    programs: Vec<String>,
    /// Programs evaluated in parallel (validation workers are shared out among them).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Python interpreter with pytest (default: python3).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Per-test limit of the baseline run (buggy programs may loop forever).
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    test_timeout: Duration,
    /// Extra inputs generated per program for the behaviour check.
    #[arg(long, default_value_t = 60)]
    generated_inputs: usize,
    /// Operator priors for `fix` (priors.json or a mined JSONL), as in `deepdebug fix --priors`.
    #[arg(long, value_name = "FILE")]
    priors: Option<PathBuf>,
    /// `fix`'s candidate sources and ranking, as `fix` runs them by default; `--seed` also
    /// seeds the behaviour check's input generator.
    #[command(flatten)]
    sources: super::sources::SourceArgs,
    #[command(flatten)]
    sandbox: super::sandbox::SandboxArgs,
}

pub fn run(command: &EvalCommand) -> anyhow::Result<ExitCode> {
    match command {
        EvalCommand::Quixbugs(args) => quixbugs(args),
    }
}

fn quixbugs(args: &QuixbugsArgs) -> anyhow::Result<ExitCode> {
    let all = match discover(&args.path) {
        Ok(all) => all,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::Usage);
        }
    };
    let programs = match select(&all, &args.programs) {
        Ok(programs) => programs,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::Usage);
        }
    };
    let sources = match args.sources.resolve() {
        Ok(sources) => sources,
        Err(code) => return Ok(code),
    };
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let jobs = args.jobs.max(1);
    let options = EvalOptions {
        root: args.path.clone(),
        timeout: args.timeout,
        test_timeout: args.test_timeout,
        python: args.python.clone(),
        jobs,
        workers: (cpus / jobs).max(1),
        generated_inputs: args.generated_inputs,
        per_call_timeout: Duration::from_secs(1),
        seed: args.sources.seed,
        priors: super::load_priors(args.priors.as_deref())?,
        sources,
        sandbox: args.sandbox.kind(),
        docker: args.sandbox.docker(),
        reports: Some(args.out.join("fix")),
    };
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(programs.len() as u64)
    } else {
        ProgressBar::with_draw_target(Some(programs.len() as u64), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} programs [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let on_done = |r: &ProgramResult| {
        bar.inc(1);
        bar.set_message(format!("{}: {}", r.name, r.status.label()));
    };
    let results = evaluate(&options, &programs, &on_done);
    bar.finish_and_clear();

    std::fs::create_dir_all(&args.out).with_context(|| format!("failed to create {}", args.out.display()))?;
    let write = |file: &str, text: String| {
        std::fs::write(args.out.join(file), text).with_context(|| format!("failed to write {file}"))
    };
    write("results.json", serde_json::to_string_pretty(&results)? + "\n")?;
    write("results.md", render::markdown(&results))?;
    write("results.html", render::html(&results))?;
    let t = &results.totals;
    eprintln!(
        "{} programs: {} genuine, {} plausible-only, {} not fixed, {} errors in {:.1}s; results in {}",
        t.programs,
        t.genuine,
        t.plausible_only,
        t.not_fixed,
        t.error,
        results.seconds,
        args.out.display()
    );
    Ok(ExitCode::Success)
}
