//! The interface to git2 is localized here: walking history and reading edited Python files.

use super::extract::{edited_functions, FunctionEdit};
use super::report::MineStats;
use git2::{Commit, Delta, DiffFindOptions, DiffOptions, FileMode, Oid, Repository, Sort};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// A failure that prevents mining one repository at all.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("open git repository {path}")]
    Open { path: PathBuf, source: git2::Error },
    #[error("walk history of {path}")]
    Walk { path: PathBuf, source: git2::Error },
}

/// Limits applied while mining one repository.
#[derive(Debug, Clone, Copy)]
pub struct RepoLimits {
    /// Skeleton budget per row, in bytes.
    pub context_bytes: usize,
    /// Python files larger than this (either version) are skipped as generated code.
    pub max_file_bytes: usize,
}

/// One edited function of one fix commit, before deduplication.
#[derive(Debug, Clone)]
pub struct MinedEdit {
    pub commit: String,
    pub parent: String,
    pub path: String,
    pub old_path: String,
    pub summary: String,
    pub edit: FunctionEdit,
}

/// Everything mined from one repository, in history-walk order.
#[derive(Debug, Default)]
pub struct RepoMined {
    pub edits: Vec<MinedEdit>,
    pub stats: MineStats,
}

/// True when `message` contains "fix" in any letter case.
#[must_use]
pub fn is_fix_message(message: &[u8]) -> bool {
    message.windows(3).any(|w| w.eq_ignore_ascii_case(b"fix"))
}

/// Fix commits mined in parallel at a time: their edits are handed on, in commit order,
/// before the next chunk starts, so a repository's edits are never all in memory at once.
const COMMITS_PER_CHUNK: usize = 256;

/// Mine one repository: walk HEAD and local branches, keep non-merge fix commits and
/// extract their edited functions (in parallel over commits), handing each edit to
/// `on_edit` in walk order. `on_commits(n)` is called as commits are processed, for
/// progress display.
pub fn mine_repo_with(
    path: &Path,
    limits: RepoLimits,
    on_commits: &(dyn Fn(u64) + Sync),
    on_edit: &mut dyn FnMut(MinedEdit),
) -> Result<MineStats, RepoError> {
    // Re-hashing every object read costs ~5% of mining time; a corrupt object only spoils
    // its own commit (counted as unreadable or parsed as odd source), never the shard.
    // This is a process-wide libgit2 setting, and git2 is used only in this module.
    git2::opts::strict_hash_verification(false);
    let repo = Repository::open(path).map_err(|source| RepoError::Open { path: path.to_path_buf(), source })?;
    let walk_err = |source| RepoError::Walk { path: path.to_path_buf(), source };
    let mut stats = MineStats::default();
    let mut fix_commits = Vec::new();
    {
        let mut walk = repo.revwalk().map_err(walk_err)?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME).map_err(walk_err)?;
        let mut pushed = false;
        // An empty repository has an unborn HEAD and no branches: nothing to walk.
        if walk.push_head().is_ok() {
            pushed = true;
        }
        if walk.push_glob("refs/heads/*").is_ok() {
            pushed = true;
        }
        if pushed {
            for oid in walk {
                let oid = oid.map_err(walk_err)?;
                stats.commits_walked += 1;
                let Ok(commit) = repo.find_commit(oid) else {
                    stats.unreadable_commits += 1;
                    continue;
                };
                if !is_fix_message(commit.message_bytes()) {
                    continue;
                }
                stats.fix_commits += 1;
                match commit.parent_count() {
                    0 => stats.parentless_skipped += 1,
                    1 => fix_commits.push(oid),
                    _ => stats.merges_skipped += 1,
                }
            }
        }
    }
    on_commits(stats.commits_walked - fix_commits.len() as u64);
    drop(repo);

    for chunk in fix_commits.chunks(COMMITS_PER_CHUNK) {
        let per_commit: Vec<RepoMined> = chunk
            .par_iter()
            .with_min_len(8)
            .map_init(
                || Repository::open(path).ok(),
                |repo, &oid| {
                    let mined = match repo {
                        Some(repo) => mine_commit(repo, oid, limits),
                        None => RepoMined {
                            stats: MineStats { unreadable_commits: 1, ..MineStats::default() },
                            ..RepoMined::default()
                        },
                    };
                    on_commits(1);
                    mined
                },
            )
            .collect();
        for mined in per_commit {
            stats.add(&mined.stats);
            mined.edits.into_iter().for_each(&mut *on_edit);
        }
    }
    Ok(stats)
}

fn mine_commit(repo: &Repository, oid: Oid, limits: RepoLimits) -> RepoMined {
    let mut out = RepoMined::default();
    match try_mine_commit(repo, oid, limits, &mut out) {
        Ok(()) => {}
        Err(CommitSkip::NoParent) => out.stats.parentless_skipped += 1,
        Err(CommitSkip::Unreadable) => out.stats.unreadable_commits += 1,
    }
    out
}

enum CommitSkip {
    /// The parent object is absent: the commit sits on a shallow-clone boundary.
    NoParent,
    Unreadable,
}

impl From<git2::Error> for CommitSkip {
    fn from(_: git2::Error) -> CommitSkip {
        CommitSkip::Unreadable
    }
}

fn try_mine_commit(repo: &Repository, oid: Oid, limits: RepoLimits, out: &mut RepoMined) -> Result<(), CommitSkip> {
    let commit = repo.find_commit(oid)?;
    let parent = commit.parent(0).map_err(|_| CommitSkip::NoParent)?;
    let tree = commit.tree()?;
    let parent_tree = parent.tree()?;
    let mut opts = DiffOptions::new();
    opts.skip_binary_check(true);
    let mut diff = repo.diff_tree_to_tree(Some(&parent_tree), Some(&tree), Some(&mut opts))?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;
    let summary = summary(&commit);
    let commit_id = oid.to_string();
    let parent_id = parent.id().to_string();
    for delta in diff.deltas() {
        if !matches!(delta.status(), Delta::Modified | Delta::Renamed) {
            continue;
        }
        let (old, new) = (delta.old_file(), delta.new_file());
        let is_blob =
            |m: FileMode| matches!(m, FileMode::Blob | FileMode::BlobExecutable | FileMode::BlobGroupWritable);
        if !is_blob(old.mode()) || !is_blob(new.mode()) {
            continue;
        }
        let (Some(new_path), Some(old_path)) = (new.path_bytes(), old.path_bytes()) else { continue };
        if !new_path.ends_with(b".py") {
            continue;
        }
        out.stats.python_files_compared += 1;
        let before_blob = repo.find_blob(old.id())?;
        let after_blob = repo.find_blob(new.id())?;
        let (before, after) = (before_blob.content(), after_blob.content());
        if before.len() > limits.max_file_bytes || after.len() > limits.max_file_bytes {
            out.stats.large_files_skipped += 1;
            continue;
        }
        if before.contains(&0) || after.contains(&0) {
            out.stats.binary_files_skipped += 1;
            continue;
        }
        let (Ok(before), Ok(after)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
            out.stats.non_utf8_files_skipped += 1;
            continue;
        };
        let (edits, file_stats) = edited_functions(before, after, limits.context_bytes);
        out.stats.functions_edited += file_stats.functions_edited;
        out.stats.trivial_edits_dropped += file_stats.trivial_edits;
        let path = String::from_utf8_lossy(new_path).into_owned();
        let old_path = String::from_utf8_lossy(old_path).into_owned();
        out.edits.extend(edits.into_iter().map(|edit| MinedEdit {
            commit: commit_id.clone(),
            parent: parent_id.clone(),
            path: path.clone(),
            old_path: old_path.clone(),
            summary: summary.clone(),
            edit,
        }));
    }
    Ok(())
}

/// First line of the commit message, decoded lossily.
fn summary(commit: &Commit<'_>) -> String {
    let message = commit.message_bytes();
    let first = message.split(|&b| b == b'\n').find(|l| !l.iter().all(u8::is_ascii_whitespace)).unwrap_or_default();
    String::from_utf8_lossy(first).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_filter_is_case_insensitive_substring() {
        assert!(is_fix_message(b"Fix crash"));
        assert!(is_fix_message(b"bugFIX: off by one"));
        assert!(is_fix_message(b"prefix handling"));
        assert!(!is_fix_message(b"Add feature"));
        assert!(!is_fix_message(b"fi x"));
        assert!(is_fix_message(b"\xff\xfe fix non-utf8 message"));
    }
}
