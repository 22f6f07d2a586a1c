//! `deepdebug priors`: learn operator priors from mined fix pairs and write priors.json.

use anyhow::Context;
use deepdebug::exit_code::ExitCode;
use deepdebug::repair::priors::Priors;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PriorsArgs {
    /// JSONL of mined fix pairs (rows with `before` and `after`).
    #[arg(long)]
    data: PathBuf,
    /// Where to write priors.json (stdout when absent).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: &PriorsArgs) -> anyhow::Result<ExitCode> {
    let (_, file) = Priors::learn_from_jsonl(&args.data)?;
    let json = serde_json::to_string_pretty(&file)?;
    match &args.out {
        Some(path) => std::fs::write(path, json).with_context(|| format!("failed to write {}", path.display()))?,
        None => println!("{json}"),
    }
    eprintln!("{} of {} fix pairs explained by one operator edit", file.explained, file.pairs);
    Ok(ExitCode::Success)
}
