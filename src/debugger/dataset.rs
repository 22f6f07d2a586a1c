//! JSONL input rows, parallel trace recording, and trajectory dataset generation.

use super::record::{record_call, RecordError, RecordLimits};
use super::sampler::{sample_rows, FunctionRow, SampleRow, SamplerConfig};
use super::trace::Trace;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Errors reading datasets.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("failed to read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}:{line}: invalid row: {source}")]
    Row { path: String, line: usize, source: serde_json::Error },
}

/// Read a JSONL file (blank lines are skipped).
///
/// # Errors
/// Fails if the file cannot be read or a row does not parse.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, DatasetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| DatasetError::Read { path: path.display().to_string(), source })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| DatasetError::Row {
                path: path.display().to_string(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Id of a row: its `id` field, or `row-N`.
#[must_use]
pub fn row_id(row: &FunctionRow, index: usize) -> String {
    row.id.clone().unwrap_or_else(|| format!("row-{index}"))
}

/// Record every row's call (in parallel), keeping input order.
#[must_use]
pub fn record_rows(rows: &[FunctionRow], limits: &RecordLimits) -> Vec<Result<Trace, RecordError>> {
    rows.par_iter().map(|row| record_call(&row.code, &row.call(), limits)).collect()
}

/// Summary of a dataset generation run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetStats {
    pub format_version: u32,
    pub rows: usize,
    /// Rows whose trace could not be recorded.
    pub failed: Vec<String>,
    pub samples: usize,
    pub forward: usize,
    pub inverse: usize,
    pub exits: std::collections::BTreeMap<String, usize>,
}

/// Trace every row and sample `per_trace` trajectories from each, seeded.
#[must_use]
pub fn generate(
    rows: &[FunctionRow],
    limits: &RecordLimits,
    per_trace: usize,
    seed: u64,
    config: &SamplerConfig,
) -> (Vec<SampleRow>, DatasetStats) {
    let traces = record_rows(rows, limits);
    let mut stats = DatasetStats { format_version: 1, rows: rows.len(), ..DatasetStats::default() };
    let mut out = Vec::new();
    for (i, (row, trace)) in rows.iter().zip(traces).enumerate() {
        let id = row_id(row, i);
        match trace {
            // A truncated trace cannot show its last states or the exits of its cut scopes.
            Ok(trace) if trace.is_truncated() => *stats.exits.entry("truncated".into()).or_default() += 1,
            Ok(trace) => {
                *stats.exits.entry(trace.exit.as_str().to_string()).or_default() += 1;
                out.extend(sample_rows(&trace, &id, i, per_trace, seed, config));
            }
            Err(e) => stats.failed.push(format!("{id}: {e}")),
        }
    }
    stats.samples = out.len();
    stats.inverse = out.iter().filter(|r| r.direction == super::tree::Direction::Inverse).count();
    stats.forward = stats.samples - stats.inverse;
    (out, stats)
}
