//! Training examples: JSONL rows (`{source, target}` or mined `{before, after, context}`)
//! turned into (encoder input, decoder target) text pairs for a task.

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

/// Parse one JSONL line. `{source, target}` rows are used as they are; mined rows become
/// buggy→fixed pairs for [`Task::Patch`] and fixed→buggy pairs for [`Task::BugCreate`].
///
/// # Errors
/// On malformed JSON or rows with neither form.
pub fn parse_row(line: &str, task: Task) -> Result<Example, String> {
    let row: Row = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if let (Some(source), Some(target)) = (row.source, row.target) {
        return Ok(Example { source, target });
    }
    let (Some(before), Some(after)) = (row.before, row.after) else {
        return Err("row has neither source/target nor before/after".into());
    };
    let (input, output) = match task {
        Task::Patch => (before, after),
        Task::BugCreate => (after, before),
    };
    Ok(Example { source: focal_source(&input, row.context.as_deref()), target: output.trim_end().to_string() + "\n" })
}

/// Read every row of a JSONL file.
///
/// # Errors
/// On I/O errors or a malformed row (with its line number).
pub fn read_jsonl(path: &Path, task: Task) -> Result<Vec<Example>, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io(path.display().to_string(), e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_row(l, task).map_err(|e| ModelError::Data(format!("{}:{}: {e}", path.display(), i + 1))))
        .collect()
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
    }
}
