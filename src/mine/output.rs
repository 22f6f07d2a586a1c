//! The shard's JSONL file, its checkpoint, and crash-safe appends of whole repositories (spilled to disk as they are mined).

use super::report::{RepoReport, FORMAT_VERSION};
use super::{MineError, Shard};
use crate::io_error::path_err;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// One mined (buggy, fixed) function pair: a line of the JSONL shard and a Parquet row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairRow {
    pub format_version: u32,
    /// Repository path as given on the command line.
    pub repo: String,
    /// The fix commit and the parent it is compared against.
    pub commit: String,
    pub parent: String,
    /// File path after the commit, and before it (differs for renames).
    pub path: String,
    pub old_path: String,
    /// Qualified function name, e.g. `Shape.area`.
    pub function: String,
    /// Innermost enclosing class, if any.
    pub class: Option<String>,
    /// 1-based first line of the function before and after the fix.
    pub before_line: u64,
    pub after_line: u64,
    /// Original (unnormalized) source of the function before and after the fix.
    pub before: String,
    pub after: String,
    /// Skeleton of the file before the fix, focal function marked `# target edit`.
    pub context: String,
    /// First line of the commit message.
    pub message: String,
    /// Hex FNV-1a hash of the normalized (before, after) pair; the deduplication key.
    pub pair_hash: String,
}

/// Progress of one shard, rewritten atomically after every completed repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Checkpoint {
    pub format_version: u32,
    pub shard_index: usize,
    pub shard_count: usize,
    /// Length of the JSONL file covering exactly the completed repositories; anything
    /// after it is a partial write from a crash and is truncated on resume.
    pub jsonl_bytes: u64,
    pub rows: u64,
    /// Completed repositories with the counters they had.
    pub completed: Vec<RepoReport>,
}

/// Output file names of one shard inside the output directory.
#[derive(Debug, Clone)]
pub struct ShardPaths {
    pub jsonl: PathBuf,
    pub parquet: PathBuf,
    pub checkpoint: PathBuf,
    pub report: PathBuf,
}

impl ShardPaths {
    #[must_use]
    pub fn new(out_dir: &Path, shard: Shard) -> ShardPaths {
        let stem = shard.file_stem();
        ShardPaths {
            jsonl: out_dir.join(format!("pairs-v{FORMAT_VERSION}-{stem}.jsonl")),
            parquet: out_dir.join(format!("pairs-v{FORMAT_VERSION}-{stem}.parquet")),
            checkpoint: out_dir.join(format!("checkpoint-{stem}.json")),
            report: out_dir.join(format!("report-{stem}.json")),
        }
    }
}

/// Appends whole repositories to the JSONL file, deduplicating rows, and checkpoints.
pub struct ShardWriter {
    paths: ShardPaths,
    file: File,
    checkpoint: Checkpoint,
    seen: HashSet<u64>,
}

/// Write `bytes` to `path` through a temporary file and a rename, so readers never see
/// a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), MineError> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp).map_err(path_err(&tmp))?;
    file.write_all(bytes).map_err(path_err(&tmp))?;
    file.sync_all().map_err(path_err(&tmp))?;
    Ok(fs::rename(&tmp, path).map_err(path_err(path))?)
}

impl ShardWriter {
    /// Open the shard's output, resuming from its checkpoint when there is one.
    pub fn open(out_dir: &Path, shard: Shard) -> Result<ShardWriter, MineError> {
        fs::create_dir_all(out_dir).map_err(path_err(out_dir))?;
        let paths = ShardPaths::new(out_dir, shard);
        let checkpoint = match fs::read(&paths.checkpoint) {
            Ok(bytes) => {
                let checkpoint: Checkpoint = serde_json::from_slice(&bytes)
                    .map_err(|source| MineError::BadCheckpoint { path: paths.checkpoint.clone(), source })?;
                if checkpoint.format_version != FORMAT_VERSION
                    || checkpoint.shard_index != shard.index()
                    || checkpoint.shard_count != shard.count()
                {
                    return Err(MineError::IncompatibleCheckpoint {
                        path: paths.checkpoint.clone(),
                        found: checkpoint.format_version,
                    });
                }
                checkpoint
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Checkpoint {
                format_version: FORMAT_VERSION,
                shard_index: shard.index(),
                shard_count: shard.count(),
                jsonl_bytes: 0,
                rows: 0,
                completed: Vec::new(),
            },
            Err(e) => return Err(path_err(&paths.checkpoint)(e).into()),
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&paths.jsonl)
            .map_err(path_err(&paths.jsonl))?;
        let len = file.metadata().map_err(path_err(&paths.jsonl))?.len();
        if len < checkpoint.jsonl_bytes {
            return Err(MineError::TruncatedOutput {
                path: paths.jsonl.clone(),
                expected: checkpoint.jsonl_bytes,
                found: len,
            });
        }
        // Drop rows of a repository that was being written when the process died.
        file.set_len(checkpoint.jsonl_bytes).map_err(path_err(&paths.jsonl))?;
        let seen = read_hashes(&mut file, &paths.jsonl)?;
        file.seek(SeekFrom::End(0)).map_err(path_err(&paths.jsonl))?;
        Ok(ShardWriter { paths, file, checkpoint, seen })
    }

    #[must_use]
    pub fn paths(&self) -> &ShardPaths {
        &self.paths
    }

    #[must_use]
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// Append the rows of `spill` (dropping duplicates, counted into `report.stats`), make
    /// them durable, then record `report` as completed in the checkpoint.
    ///
    /// `fail_after_rows` is fault injection for tests: write only that many rows and
    /// return [`MineError::InjectedFault`] without checkpointing, as a crash would.
    pub fn append_repo(
        &mut self,
        spill: Spill,
        mut report: RepoReport,
        fail_after_rows: Option<usize>,
    ) -> Result<(), MineError> {
        let path = self.paths.jsonl.clone();
        let (rows, hashes) = spill.finish()?;
        let mut rows = BufReader::new(rows);
        let mut out = std::io::BufWriter::new(&mut self.file);
        let mut line = Vec::new();
        let (mut written, mut bytes) = (0_u64, 0_u64);
        for (i, hash) in hashes.into_iter().enumerate() {
            if fail_after_rows == Some(i) {
                break;
            }
            line.clear();
            rows.read_until(b'\n', &mut line).map_err(path_err(&path))?;
            if !self.seen.insert(hash) {
                report.stats.duplicates_dropped += 1;
                continue;
            }
            out.write_all(&line).map_err(path_err(&path))?;
            written += 1;
            bytes += line.len() as u64;
        }
        out.flush().map_err(path_err(&path))?;
        drop(out);
        if fail_after_rows.is_some() {
            return Err(MineError::InjectedFault);
        }
        self.file.sync_data().map_err(path_err(&path))?;
        report.stats.pairs_written = written;
        self.checkpoint.jsonl_bytes += bytes;
        self.checkpoint.rows += written;
        self.checkpoint.completed.push(report);
        let json = serde_json::to_vec_pretty(&self.checkpoint).map_err(|e| path_err(&path)(e.into()))?;
        write_atomic(&self.paths.checkpoint, &json)
    }
}

/// One repository's rows as they are mined, in an unnamed temporary file beside the shard
/// (with their deduplication keys in memory): memory stays flat however large the history.
pub struct Spill {
    file: std::io::BufWriter<File>,
    hashes: Vec<u64>,
    /// The first write error (later rows are dropped; [`Spill::finish`] reports it).
    error: Option<std::io::Error>,
    dir: PathBuf,
}

impl Spill {
    /// A spill file in `dir` (the shard's output directory), removed when dropped.
    pub fn new(dir: &Path) -> Result<Spill, MineError> {
        let file = tempfile::tempfile_in(dir).map_err(path_err(dir))?;
        Ok(Spill { file: std::io::BufWriter::new(file), hashes: Vec::new(), error: None, dir: dir.to_path_buf() })
    }

    /// Add one row.
    pub fn push(&mut self, row: &PairRow) {
        if self.error.is_some() {
            return;
        }
        let written = serde_json::to_writer(&mut self.file, row)
            .map_err(std::io::Error::from)
            .and_then(|()| self.file.write_all(b"\n"));
        match written {
            Ok(()) => self.hashes.push(u64::from_str_radix(&row.pair_hash, 16).unwrap_or_default()),
            Err(e) => self.error = Some(e),
        }
    }

    /// Rows added so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// The file, rewound, and the rows' keys in file order.
    fn finish(self) -> Result<(File, Vec<u64>), MineError> {
        let Spill { file, hashes, error, dir } = self;
        if let Some(e) = error {
            return Err(path_err(&dir)(e).into());
        }
        let mut file = file.into_inner().map_err(|e| path_err(&dir)(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(path_err(&dir))?;
        Ok((file, hashes))
    }
}

/// Deduplication keys of the rows already in the file.
fn read_hashes(file: &mut File, path: &Path) -> Result<HashSet<u64>, MineError> {
    #[derive(Deserialize)]
    struct HashOnly {
        pair_hash: String,
    }
    file.seek(SeekFrom::Start(0)).map_err(path_err(path))?;
    let mut seen = HashSet::new();
    for line in BufReader::new(&mut *file).lines() {
        let line = line.map_err(path_err(path))?;
        let row: HashOnly =
            serde_json::from_str(&line).map_err(|source| MineError::BadRow { path: path.to_path_buf(), source })?;
        seen.insert(u64::from_str_radix(&row.pair_hash, 16).unwrap_or_default());
    }
    Ok(seen)
}

/// Read every row of a JSONL shard, calling `each` in file order.
pub fn for_each_row(path: &Path, mut each: impl FnMut(PairRow) -> Result<(), MineError>) -> Result<(), MineError> {
    let file = File::open(path).map_err(path_err(path))?;
    for line in BufReader::new(file).lines() {
        let line = line.map_err(path_err(path))?;
        let row =
            serde_json::from_str(&line).map_err(|source| MineError::BadRow { path: path.to_path_buf(), source })?;
        each(row)?;
    }
    Ok(())
}
