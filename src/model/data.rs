//! Training examples: JSONL rows (`{source, target}`, mined `{before, after, context}`, or
//! `trace-dataset` trajectories `{text}`) turned into (encoder input, decoder target) pairs.

use super::config::Task;
use super::ModelError;
use serde::Deserialize;
use std::path::Path;

/// Comment lines that book-end the focal function in a skeleton (DeepDebug §4.5).
pub const TARGET_EDIT: &str = "# target edit";
pub const TARGET_END: &str = "# end";

/// One (input, output) text pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub source: String,
    pub target: String,
}

#[derive(Deserialize)]
struct Row {
    source: Option<String>,
    target: Option<String>,
    before: Option<String>,
    after: Option<String>,
    context: Option<String>,
    /// A serialized debugger trajectory (`deepdebug trace-dataset` rows).
    text: Option<String>,
}

/// The encoder input for a focal function: the context (a skeleton, or nothing) with the
/// function book-ended by `# target edit` / `# end`. A context that already holds the marker
/// is taken as a complete skeleton.
#[must_use]
pub fn focal_source(function: &str, context: Option<&str>) -> String {
    match context {
        Some(ctx) if ctx.contains(TARGET_EDIT) => ctx.to_string(),
        Some(ctx) if !ctx.trim().is_empty() => {
            format!("{}\n{TARGET_EDIT}\n{}\n{TARGET_END}\n", ctx.trim_end(), function.trim_end())
        }
        _ => format!("{TARGET_EDIT}\n{}\n{TARGET_END}\n", function.trim_end()),
    }
}

/// `example` with its skeleton's context dropped: the focal function alone, still book-ended
/// (the "without skeleton" rows of DeepDebug's Table 2).
#[must_use]
pub fn without_context(example: &Example) -> Example {
    let source = match example.source.find(TARGET_EDIT) {
        Some(at) => example.source[at..].to_string(),
        None => example.source.clone(),
    };
    Example { source, target: example.target.clone() }
}

/// Why a JSONL row gives no examples.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("row has neither source/target nor before/after")]
    NoPair,
    #[error("a next-state row needs source/target or a trajectory text")]
    NoTrajectory,
    /// The trajectory text does not parse (the debugger's grammar error).
    #[error(transparent)]
    Trajectory(Box<dyn std::error::Error + Send + Sync>),
}

/// Parse one JSONL line. `{source, target}` rows are used as they are; mined rows become
/// buggy→fixed pairs for [`Task::Patch`] and fixed→buggy pairs for [`Task::BugCreate`].
///
/// # Errors
/// On malformed JSON or rows with neither form.
pub fn parse_row(line: &str, task: Task) -> Result<Example, RowError> {
    let row: Row = serde_json::from_str(line)?;
    if let (Some(source), Some(target)) = (row.source, row.target) {
        return Ok(Example { source, target });
    }
    let (Some(before), Some(after)) = (row.before, row.after) else {
        return Err(RowError::NoPair);
    };
    let (input, output) = match task {
        Task::Patch => (before, after),
        Task::BugCreate => (after, before),
        Task::NextState => return Err(RowError::NoTrajectory),
    };
    Ok(Example { source: focal_source(&input, row.context.as_deref()), target: output.trim_end().to_string() + "\n" })
}

/// Turns a `trace-dataset` trajectory (a row's `text`) into [`Task::NextState`] examples. The
/// model does not know the trajectory grammar: callers pass the debugger's
/// (`debugger::neural::trajectory_examples`).
pub type Trajectories = fn(&str) -> Result<Vec<Example>, RowError>;

/// Parse one JSONL line into its examples: one for a pair row, and for [`Task::NextState`]
/// one per step of a `trace-dataset` trajectory (expanded by `trajectories`).
///
/// # Errors
/// On malformed JSON, rows of no known form, or a trajectory that does not parse.
pub fn parse_rows(line: &str, task: Task, trajectories: Trajectories) -> Result<Vec<Example>, RowError> {
    if task == Task::NextState {
        let row: Row = serde_json::from_str(line)?;
        if let (None, Some(text)) = (&row.target, &row.text) {
            return trajectories(text);
        }
    }
    parse_row(line, task).map(|e| vec![e])
}

/// Read every row of a JSONL file.
///
/// # Errors
/// On I/O errors or a malformed row (with its line number).
pub fn read_jsonl(path: &Path, task: Task, trajectories: Trajectories) -> Result<Vec<Example>, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io(path.display().to_string(), e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        out.extend(
            parse_rows(line, task, trajectories)
                .map_err(|e| ModelError::Data(format!("{}:{}: {e}", path.display(), i + 1)))?,
        );
    }
    Ok(out)
}

/// Every row of every file, in order.
///
/// # Errors
/// As [`read_jsonl`].
pub fn read_jsonl_all(
    paths: &[impl AsRef<Path>],
    task: Task,
    trajectories: Trajectories,
) -> Result<Vec<Example>, ModelError> {
    let mut out = Vec::new();
    for path in paths {
        out.extend(read_jsonl(path.as_ref(), task, trajectories)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_pairs_for_each_task() {
        let plain = parse_row(r#"{"source": "a", "target": "b"}"#, Task::BugCreate).unwrap();
        assert_eq!(plain, Example { source: "a".into(), target: "b".into() });
        let mined = r#"{"repo": "r", "before": "def f():\n    return 1\n", "after": "def f():\n    return 2\n", "context": "import os\n"}"#;
        let patch = parse_row(mined, Task::Patch).unwrap();
        assert_eq!(patch.source, "import os\n# target edit\ndef f():\n    return 1\n# end\n");
        assert_eq!(patch.target, "def f():\n    return 2\n");
        let bug = parse_row(mined, Task::BugCreate).unwrap();
        assert!(bug.source.contains("return 2") && bug.target.contains("return 1"));
        let skeleton = r##"{"before": "x", "after": "y", "context": "# target edit\nx\n# end\n"}"##;
        assert_eq!(parse_row(skeleton, Task::Patch).unwrap().source, "# target edit\nx\n# end\n");
        assert!(parse_row(r#"{"before": "x"}"#, Task::Patch).is_err());
        assert_eq!(without_context(&patch).source, "# target edit\ndef f():\n    return 1\n# end\n");
        assert_eq!(without_context(&plain), plain);
    }
}
