//! Mined fix pairs as learning input: JSON Lines rows (plain or gzip), filtered and mapped in parallel.

use rayon::prelude::*;
use serde::Deserialize;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Lines handed to the worker threads at a time.
const CHUNK_LINES: usize = 2048;

/// The fields of a `deepdebug mine` row that learning needs; rows without `repo`, `commit`
/// or `path` (hand-written test data) read them as empty.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PairRow {
    #[serde(default)]
    pub repo: String,
    #[serde(default)]
    pub commit: String,
    #[serde(default)]
    pub path: String,
    pub before: String,
    pub after: String,
    /// The file's context the miner kept (imports, signatures), when present.
    #[serde(default)]
    pub context: Option<String>,
}

/// Errors reading mined pairs.
#[derive(Debug, thiserror::Error)]
pub enum PairsError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("`{path}` line {line}: {source}")]
    Parse { path: String, line: usize, source: serde_json::Error },
}

/// Which rows to learn from.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    /// A row is skipped when its `repo` contains one of these strings.
    pub exclude_repos: Vec<String>,
    /// Skip rows whose `path` contains `test` (test code, about 38% of the mined corpus).
    pub exclude_test_paths: bool,
}

impl RowFilter {
    #[must_use]
    pub fn keeps(&self, row: &PairRow) -> bool {
        !(self.exclude_repos.iter().any(|p| row.repo.contains(p.as_str()))
            || (self.exclude_test_paths && row.path.contains("test")))
    }
}

/// The one contiguous block of lines where `before` and `after` differ, found by stripping the
/// lines they share at the start and at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineHunk {
    /// Lines shared at the start (the block's 0-based first row on both sides).
    pub prefix: usize,
    /// Lines of `before` in the block.
    pub removed: usize,
    /// Lines of `after` in the block.
    pub added: usize,
}

impl LineHunk {
    #[must_use]
    pub fn of(before: &str, after: &str) -> LineHunk {
        let b: Vec<&str> = before.lines().collect();
        let a: Vec<&str> = after.lines().collect();
        let prefix = b.iter().zip(&a).take_while(|(x, y)| x == y).count();
        let room = b.len().min(a.len()) - prefix;
        let suffix = b.iter().rev().zip(a.iter().rev()).take_while(|(x, y)| x == y).count().min(room);
        LineHunk { prefix, removed: b.len() - prefix - suffix, added: a.len() - prefix - suffix }
    }
}

/// Read the rows of `path` (JSON Lines, gzip-compressed when it starts with the gzip magic
/// bytes) and map each with `f` on all cores, while a reader thread decompresses the next
/// lines. Results come back in file order.
///
/// # Errors
/// When the file cannot be read or a non-blank line is not a row.
pub fn map_rows<T: Send>(path: &Path, f: impl Fn(&PairRow) -> T + Sync) -> Result<Vec<T>, PairsError> {
    let name = path.display().to_string();
    let read_error = |source| PairsError::Read { path: name.clone(), source };
    let mut reader = open(path).map_err(read_error)?;
    let (sender, chunks) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<String>>>(2);
    std::thread::scope(|scope| {
        scope.spawn(move || loop {
            let chunk = read_chunk(&mut reader);
            let last = chunk.as_ref().map_or(true, Vec::is_empty);
            if sender.send(chunk).is_err() || last {
                return;
            }
        });
        let mut out = Vec::new();
        let mut first_line = 1;
        for chunk in chunks {
            let chunk = chunk.map_err(read_error)?;
            let mapped: Vec<Result<Option<T>, serde_json::Error>> =
                chunk.par_iter().map(|line| map_line(line, &f)).collect();
            for (i, result) in mapped.into_iter().enumerate() {
                let parse_error = |source| PairsError::Parse { path: name.clone(), line: first_line + i, source };
                out.extend(result.map_err(parse_error)?);
            }
            first_line += chunk.len();
        }
        Ok(out)
    })
}

fn map_line<T>(line: &str, f: &impl Fn(&PairRow) -> T) -> Result<Option<T>, serde_json::Error> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let row: PairRow = serde_json::from_str(line)?;
    Ok(Some(f(&row)))
}

fn open(path: &Path) -> std::io::Result<Box<dyn BufRead + Send>> {
    let mut file = BufReader::new(File::open(path)?);
    let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip { Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(file))) } else { Box::new(file) })
}

/// Up to [`CHUNK_LINES`] lines; empty at the end of the input.
fn read_chunk(reader: &mut dyn BufRead) -> std::io::Result<Vec<String>> {
    let mut chunk = Vec::with_capacity(CHUNK_LINES);
    while chunk.len() < CHUNK_LINES {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        chunk.push(line);
    }
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_and_plain_rows_read_alike_in_file_order() {
        let rows: String =
            (0..5000).map(|i| format!("{{\"repo\":\"r{i}\",\"before\":\"a\",\"after\":\"b\"}}\n")).collect();
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("pairs.jsonl");
        std::fs::write(&plain, &rows).unwrap();
        let gz = dir.path().join("pairs.jsonl.gz");
        let mut encoder = flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::fast());
        encoder.write_all(rows.as_bytes()).unwrap();
        encoder.finish().unwrap();
        let repos = |path: &Path| map_rows(path, |row| row.repo.clone()).unwrap();
        let from_plain = repos(&plain);
        assert_eq!(from_plain.len(), 5000);
        assert_eq!(from_plain[4321], "r4321");
        assert_eq!(repos(&gz), from_plain);
    }

    #[test]
    fn a_bad_row_is_reported_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairs.jsonl");
        std::fs::write(&path, "{\"before\":\"a\",\"after\":\"b\"}\n\n{\"before\":1}\n").unwrap();
        let err = map_rows(&path, |_| ()).unwrap_err();
        assert!(matches!(err, PairsError::Parse { line: 3, .. }), "{err}");
    }

    #[test]
    fn the_line_hunk_is_the_block_between_shared_lines() {
        let hunk = LineHunk::of("a\nb\nc\nd\n", "a\nB\nc\nd\n");
        assert_eq!(hunk, LineHunk { prefix: 1, removed: 1, added: 1 });
        let hunk = LineHunk::of("a\nb\n", "a\nx\nb\n");
        assert_eq!(hunk, LineHunk { prefix: 1, removed: 0, added: 1 });
        // A repeated line is not counted twice.
        let hunk = LineHunk::of("a\na\n", "a\n");
        assert_eq!(hunk, LineHunk { prefix: 1, removed: 1, added: 0 });
    }

    #[test]
    fn filters_skip_excluded_repositories_and_test_files() {
        let filter = RowFilter { exclude_repos: vec!["pylint-dev/".into()], exclude_test_paths: true };
        let row = |repo: &str, path: &str| PairRow { repo: repo.into(), path: path.into(), ..PairRow::default() };
        assert!(filter.keeps(&row("psf/requests", "src/requests/models.py")));
        assert!(!filter.keeps(&row("pylint-dev/astroid", "astroid/nodes.py")));
        assert!(!filter.keeps(&row("psf/requests", "tests/test_models.py")));
    }
}
