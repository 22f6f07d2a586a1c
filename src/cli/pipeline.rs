//! `deepdebug pipeline`: arguments and progress lines of the resumable training pipeline.

use deepdebug::pipeline::{self, PipelineConfig, PipelineEvent, Stage};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PipelineArgs {
    /// The pipeline's TOML config (corpus, packages, models, evaluation).
    #[arg(long)]
    config: PathBuf,
    /// Output directory: every stage's files, `manifest.json`, `report.md`, `report.json`.
    #[arg(long)]
    out: PathBuf,
    /// Rerun this stage and every later one (finished stages before it are kept).
    #[arg(long, value_enum)]
    from: Option<Stage>,
}

pub fn run(args: &PipelineArgs) -> anyhow::Result<()> {
    let cfg = PipelineConfig::load(&args.config)?;
    let on_event = |event: PipelineEvent| match event {
        PipelineEvent::Skipped(stage) => eprintln!("[{}] finished before: skipped", stage.name()),
        PipelineEvent::Started(stage) => eprintln!("[{}] started", stage.name()),
        PipelineEvent::Finished(stage, record) => eprintln!("[{}] finished in {:.1}s", stage.name(), record.seconds),
        PipelineEvent::Note(line) => eprintln!("  {line}"),
    };
    let manifest = pipeline::run(&cfg, &args.out, args.from, &on_event)?;
    let total: f64 = manifest.stages.values().map(|r| r.seconds).sum();
    println!(
        "pipeline finished: {} stages, {total:.0}s of stage time; report: {}",
        manifest.stages.len(),
        args.out.join("report.md").display()
    );
    Ok(())
}
