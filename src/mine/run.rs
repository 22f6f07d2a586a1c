//! Orchestration of one shard: pick its repositories, mine them in parallel, append, convert.

use super::git::{mine_repo_with, MinedEdit, RepoError, RepoLimits};
use super::output::{write_atomic, PairRow, ShardPaths, ShardWriter, Spill};
use super::progress::Progress;
use super::report::{MineReport, MineStats, RepoOutcome, RepoReport, FORMAT_VERSION};
use super::{MineError, Shard};
use crate::io_error::path_err;
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::error::Error as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// Everything `deepdebug mine` needs to know.
#[derive(Debug, Clone)]
pub struct MineConfig {
    /// Repositories (work trees or bare), in the same order for every shard.
    pub repos: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub shard: Shard,
    /// Also write a Parquet copy of the JSONL shard once all repositories are done
    /// (ignored, and the report's `parquet` is `null`, without the `parquet` feature).
    pub parquet: bool,
    /// Draw progress bars on stderr.
    pub progress: bool,
    /// Worker threads; `None` uses rayon's default (one per core).
    pub threads: Option<usize>,
    /// Skeleton budget per row, in bytes.
    pub context_bytes: usize,
    /// Python files larger than this are skipped.
    pub max_file_bytes: usize,
    /// Fault injection for crash tests: after this many repositories are appended in
    /// this run, write half of the next one and fail without checkpointing it.
    pub fail_after_repos: Option<usize>,
}

impl Default for MineConfig {
    fn default() -> MineConfig {
        MineConfig {
            repos: Vec::new(),
            out_dir: PathBuf::from("mined"),
            shard: Shard::default(),
            parquet: true,
            progress: false,
            threads: None,
            context_bytes: 4096,
            max_file_bytes: 1 << 20,
            fail_after_repos: None,
        }
    }
}

/// Mine this shard's repositories into `config.out_dir`, resuming from its checkpoint.
///
/// A repository that cannot be mined is reported as [`RepoOutcome::Failed`] and the run
/// continues; only output and checkpoint failures abort.
pub fn mine(config: &MineConfig) -> Result<MineReport, MineError> {
    match config.threads {
        None => mine_in_pool(config),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| MineError::ThreadPool(e.to_string()))?
            .install(|| mine_in_pool(config)),
    }
}

fn mine_in_pool(config: &MineConfig) -> Result<MineReport, MineError> {
    let start = Instant::now();
    let mut seen = HashSet::new();
    let unique: Vec<PathBuf> = config.repos.iter().filter(|r| seen.insert(r.as_path())).cloned().collect();
    let owned: Vec<PathBuf> =
        unique.into_iter().enumerate().filter(|(i, _)| config.shard.owns(*i)).map(|(_, r)| r).collect();
    let writer = ShardWriter::open(&config.out_dir, config.shard)?;
    let paths = writer.paths().clone();
    let done: HashMap<String, RepoReport> =
        writer.checkpoint().completed.iter().map(|r| (r.repo.clone(), r.clone())).collect();

    let progress = Progress::new(config.progress, owned.len() as u64);
    let limits = RepoLimits { context_bytes: config.context_bytes, max_file_bytes: config.max_file_bytes };
    let state = Mutex::new((writer, 0_usize));
    let on_commits = |n: u64| progress.commits_done(n);
    let results: Vec<Result<RepoReport, MineError>> = owned
        .par_iter()
        .with_max_len(1)
        .map(|repo| {
            let key = repo.display().to_string();
            if let Some(previous) = done.get(&key) {
                progress.repo_done(&key);
                return Ok(RepoReport { repo: key, outcome: RepoOutcome::Resumed, stats: previous.stats });
            }
            let mut spill = Spill::new(&config.out_dir)?;
            let stats = match mine_repo_with(repo, limits, &on_commits, &mut |e| spill.push(&row(&key, e))) {
                Ok(stats) => stats,
                Err(error) => {
                    progress.repo_done(&key);
                    let error = error_chain(&error);
                    return Ok(RepoReport {
                        repo: key,
                        outcome: RepoOutcome::Failed { error },
                        stats: MineStats::default(),
                    });
                }
            };
            let report = RepoReport { repo: key.clone(), outcome: RepoOutcome::Mined, stats };
            let mut guard = state.lock().map_err(|_| MineError::Poisoned)?;
            let (writer, appended) = &mut *guard;
            let fail_after_rows = (config.fail_after_repos == Some(*appended)).then_some(spill.len() / 2);
            writer.append_repo(spill, report, fail_after_rows)?;
            *appended += 1;
            let report = writer.checkpoint().completed.last().cloned().ok_or(MineError::Poisoned)?;
            drop(guard);
            progress.repo_done(&key);
            Ok(report)
        })
        .collect();
    progress.finish();
    let repos = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let (writer, _) = state.into_inner().map_err(|_| MineError::Poisoned)?;
    let rows = writer.checkpoint().rows;
    drop(writer);

    let mut totals = MineStats::default();
    for report in &repos {
        totals.add(&report.stats);
    }
    let parquet = write_parquet_copy(config, &paths)?;
    let report = MineReport {
        format_version: FORMAT_VERSION,
        shard_index: config.shard.index(),
        shard_count: config.shard.count(),
        repos,
        totals,
        rows,
        jsonl: paths.jsonl.display().to_string(),
        parquet,
        elapsed_seconds: start.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_vec_pretty(&report).map_err(|e| path_err(&paths.report)(e.into()))?;
    write_atomic(&paths.report, &json)?;
    Ok(report)
}

/// Convert the finished JSONL shard to Parquet when asked to and compiled in.
fn write_parquet_copy(config: &MineConfig, paths: &ShardPaths) -> Result<Option<String>, MineError> {
    if !config.parquet {
        return Ok(None);
    }
    #[cfg(feature = "parquet")]
    {
        super::parquet::write_parquet(&paths.jsonl, &paths.parquet)?;
        Ok(Some(paths.parquet.display().to_string()))
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = paths;
        Ok(None)
    }
}

fn row(repo: &str, mined: MinedEdit) -> PairRow {
    let edit = mined.edit;
    PairRow {
        format_version: FORMAT_VERSION,
        repo: repo.to_string(),
        commit: mined.commit,
        parent: mined.parent,
        path: mined.path,
        old_path: mined.old_path,
        function: edit.function,
        class: edit.class,
        before_line: edit.before_line as u64,
        after_line: edit.after_line as u64,
        before: edit.before,
        after: edit.after,
        context: edit.context,
        message: mined.summary,
        pair_hash: format!("{:016x}", edit.pair_hash),
    }
}

fn error_chain(error: &RepoError) -> String {
    let mut text = format!("failed to {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
