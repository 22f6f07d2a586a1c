//! Fix-commit mining: (buggy, fixed) function pairs from git history, sharded and resumable.
//!
//! Layout: `git` walks history (git2), `extract` diffs functions (tree-sitter),
//! `output` appends rows and checkpoints, `parquet` converts shards, `run` orchestrates.

mod extract;
mod git;
mod output;
#[cfg(feature = "parquet")]
pub mod parquet;
mod progress;
mod report;
mod run;

pub use crate::shard::{Shard, ShardError, INDEX_ENV_VARS};
pub use extract::{edited_functions, pair_hash, FileEditStats, FunctionEdit};
pub use git::is_fix_message;
pub use output::{for_each_row, Checkpoint, PairRow, ShardPaths};
pub use report::{MineReport, MineStats, RepoOutcome, RepoReport, FORMAT_VERSION};
pub use run::{mine, MineConfig};

use std::path::PathBuf;

/// An infrastructure failure that aborts a shard (per-repository problems are data).
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error("parse checkpoint {path}")]
    BadCheckpoint { path: PathBuf, source: serde_json::Error },
    #[error("resume from checkpoint {path}: it has format version {found} or another shard; delete it to start over")]
    IncompatibleCheckpoint { path: PathBuf, found: u32 },
    #[error("resume {path}: the checkpoint covers {expected} bytes but the file has {found}")]
    TruncatedOutput { path: PathBuf, expected: u64, found: u64 },
    #[error("parse a row of {path}")]
    BadRow { path: PathBuf, source: serde_json::Error },
    #[error("write parquet file {path}: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("start the worker thread pool: {0}")]
    ThreadPool(String),
    #[error("continue after a worker thread panicked")]
    Poisoned,
    #[error("continue: injected fault (crash test) before the checkpoint")]
    InjectedFault,
}
