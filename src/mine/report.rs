//! Serialized results of mining: per-repository statistics, outcomes and the shard report.

use serde::{Deserialize, Serialize};

/// Version of the report, checkpoint and row formats written by `deepdebug mine`.
pub const FORMAT_VERSION: u32 = 1;

/// Counters for one repository (or, summed, for a whole shard).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MineStats {
    /// Commits reachable from HEAD and local branches.
    pub commits_walked: u64,
    /// Non-merge commits whose message contains "fix" (any case).
    pub fix_commits: u64,
    /// Fix commits with several parents, skipped (their changes are mined on the branch).
    pub merges_skipped: u64,
    /// Fix commits without a parent: root commits and shallow-clone boundaries.
    pub parentless_skipped: u64,
    /// Fix commits whose parent or objects could not be read.
    pub unreadable_commits: u64,
    /// Modified or renamed `.py` files compared.
    pub python_files_compared: u64,
    pub binary_files_skipped: u64,
    pub non_utf8_files_skipped: u64,
    pub large_files_skipped: u64,
    /// Functions in both versions whose text differs.
    pub functions_edited: u64,
    /// Edits that vanish after normalization.
    pub trivial_edits_dropped: u64,
    /// Nontrivial edits already written earlier in this shard.
    pub duplicates_dropped: u64,
    pub pairs_written: u64,
}

impl MineStats {
    pub fn add(&mut self, other: &MineStats) {
        self.commits_walked += other.commits_walked;
        self.fix_commits += other.fix_commits;
        self.merges_skipped += other.merges_skipped;
        self.parentless_skipped += other.parentless_skipped;
        self.unreadable_commits += other.unreadable_commits;
        self.python_files_compared += other.python_files_compared;
        self.binary_files_skipped += other.binary_files_skipped;
        self.non_utf8_files_skipped += other.non_utf8_files_skipped;
        self.large_files_skipped += other.large_files_skipped;
        self.functions_edited += other.functions_edited;
        self.trivial_edits_dropped += other.trivial_edits_dropped;
        self.duplicates_dropped += other.duplicates_dropped;
        self.pairs_written += other.pairs_written;
    }
}

/// What happened to one repository in this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RepoOutcome {
    /// Mined in this run; its rows are in the shard file.
    Mined,
    /// Mined by an earlier run of the same shard (found in the checkpoint); not redone.
    Resumed,
    /// Could not be mined (not a repository, corrupt objects, ...). Not checkpointed, so
    /// a rerun tries again.
    Failed { error: String },
}

impl RepoOutcome {
    #[must_use]
    pub fn is_failed(&self) -> bool {
        matches!(self, RepoOutcome::Failed { .. })
    }
}

/// One repository's outcome and counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RepoReport {
    /// The repository path as given on the command line.
    pub repo: String,
    pub outcome: RepoOutcome,
    pub stats: MineStats,
}

/// Summary of one `deepdebug mine` shard, written as `report-<shard>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MineReport {
    pub format_version: u32,
    pub shard_index: usize,
    pub shard_count: usize,
    /// Repositories owned by this shard, in command-line order.
    pub repos: Vec<RepoReport>,
    /// Sum over `repos`, resumed ones included.
    pub totals: MineStats,
    /// Rows in the JSONL file (resumed rows included).
    pub rows: u64,
    pub jsonl: String,
    pub parquet: Option<String>,
    pub elapsed_seconds: f64,
}

impl MineReport {
    #[must_use]
    pub fn failed_repos(&self) -> usize {
        self.repos.iter().filter(|r| r.outcome.is_failed()).count()
    }
}
