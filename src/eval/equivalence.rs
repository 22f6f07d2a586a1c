//! Behaviour comparison of a patched program with the correct one, in sandboxed Python children.

use super::mutate;
use crate::process::{self, Exit, Limits};
use crate::text::clip;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The embedded child script (written to a temp dir at run time).
const SCRIPT: &str = include_str!("equivalence.py");

/// Settings of a comparison.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    pub python: PathBuf,
    /// Limit of one call of the program on one input.
    pub per_call_timeout: Duration,
    /// How many extra inputs to generate from the JSON test inputs.
    pub generated: usize,
    pub seed: u64,
}

/// What one call returned, as the child reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
    /// Returned a value (canonical text).
    Value(String),
    /// Raised an exception of this type.
    Raised(String),
    /// Ran past the per-call limit (or the child was killed before answering).
    Timeout,
}

impl CallResult {
    fn parse(text: &str) -> CallResult {
        if let Some(v) = text.strip_prefix("ok:") {
            CallResult::Value(v.to_string())
        } else if let Some(e) = text.strip_prefix("exc:") {
            CallResult::Raised(e.to_string())
        } else {
            CallResult::Timeout
        }
    }

    /// Short human-readable form for reports.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            CallResult::Value(v) => format!("returns {}", clip(v, 120)),
            CallResult::Raised(e) => format!("raises {e}"),
            CallResult::Timeout => "times out".to_string(),
        }
    }
}

/// The first input on which the two programs differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The arguments, as JSON.
    pub input: String,
    /// Whether the input came from the JSON test cases (else it was generated).
    pub from_tests: bool,
    pub patched: CallResult,
    pub correct: CallResult,
}

/// The result of comparing on inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Test inputs compared.
    pub test_inputs: usize,
    /// Generated inputs compared (after discarding those the correct program rejects).
    pub generated_inputs: usize,
    /// Generated inputs on which the correct program raised or timed out.
    pub discarded: usize,
    pub difference: Option<Difference>,
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("failed to prepare or start the comparison child: {0}")]
    Io(#[from] std::io::Error),
    #[error("the {side} program could not be imported: {message}")]
    Import { side: &'static str, message: String },
    #[error("the AST comparison child failed: {0}")]
    Ast(String),
}

/// Run `package.name` under `root` on every argument list of `inputs`, one result per input.
///
/// # Errors
/// When the child cannot start or the module cannot be imported.
pub fn run_program(
    python: &Path,
    root: &Path,
    package: &str,
    name: &str,
    inputs: &[Vec<Value>],
    per_call: Duration,
) -> Result<Vec<CallResult>, CompareError> {
    let dir = tempfile::Builder::new().prefix("deepdebug-equiv-").tempdir()?;
    let script = dir.path().join("equivalence.py");
    std::fs::write(&script, SCRIPT)?;
    let inputs_file = dir.path().join("inputs.jsonl");
    let lines: Vec<String> =
        inputs.iter().map(|args| serde_json::to_string(args).unwrap_or_else(|_| "[]".into())).collect();
    std::fs::write(&inputs_file, lines.join("\n") + "\n")?;
    let mut command = Command::new(python);
    command
        .arg(&script)
        .arg("run")
        .arg(root)
        .arg(package)
        .arg(name)
        .arg(&inputs_file)
        .arg(format!("{:.3}", per_call.as_secs_f64()))
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0");
    // Every call may use its whole budget; plus start-up.
    let budget = per_call.saturating_mul(u32::try_from(inputs.len()).unwrap_or(u32::MAX)) + Duration::from_secs(10);
    let limits =
        Limits { memory_bytes: Some(2 << 30), cpu_seconds: Some(budget.as_secs() + 5), file_bytes: Some(16 << 20) };
    let output = process::run(&mut command, budget, limits, dir.path())?;
    let mut results = vec![CallResult::Timeout; inputs.len()];
    let mut answered = 0;
    for line in output.stdout.lines() {
        let Ok(row) = serde_json::from_str::<Value>(line) else { continue };
        let index = row.get("i").and_then(Value::as_i64).unwrap_or(-2);
        let text = row.get("r").and_then(Value::as_str).unwrap_or("timeout");
        if index == -1 {
            let side = if package.starts_with("correct") { "correct" } else { "patched" };
            return Err(CompareError::Import { side, message: text.trim_start_matches("import:").to_string() });
        }
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| results.get_mut(i)) {
            *slot = CallResult::parse(text);
            answered += 1;
        }
    }
    // A child that died before answering anything (not by our timeout) could not run at all.
    if answered == 0 && !inputs.is_empty() && !matches!(output.exit, Exit::Success | Exit::Timeout) {
        let side = if package.starts_with("correct") { "correct" } else { "patched" };
        return Err(CompareError::Import { side, message: clip(output.stderr.trim(), 300) });
    }
    Ok(results)
}

/// Compare `python_programs/NAME` (patched) with `correct_python_programs/NAME`, both under `root`,
/// on the test inputs and on inputs generated from them. Generated inputs on which the correct
/// program raises or times out are discarded; results are equal when the values are equal, the
/// exception types are equal, or both time out.
///
/// # Errors
/// When a child cannot run or a program cannot be imported.
pub fn compare_on_inputs(
    root: &Path,
    name: &str,
    tests: &[Vec<Value>],
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    let generated = mutate::generate(tests, config.seed, config.generated);
    let mut all: Vec<Vec<Value>> = tests.to_vec();
    all.extend(generated);
    let correct = run_program(&config.python, root, "correct_python_programs", name, &all, config.per_call_timeout)?;
    // Keep the test inputs, and the generated ones the correct program accepts.
    let kept: Vec<usize> =
        (0..all.len()).filter(|&i| i < tests.len() || matches!(correct[i], CallResult::Value(_))).collect();
    let inputs: Vec<Vec<Value>> = kept.iter().map(|&i| all[i].clone()).collect();
    let patched = run_program(&config.python, root, "python_programs", name, &inputs, config.per_call_timeout)?;
    let difference = kept.iter().zip(&patched).find(|(&i, p)| correct[i] != **p).map(|(&i, p)| Difference {
        input: serde_json::to_string(&all[i]).unwrap_or_default(),
        from_tests: i < tests.len(),
        patched: p.clone(),
        correct: correct[i].clone(),
    });
    Ok(Comparison {
        test_inputs: tests.len(),
        generated_inputs: kept.len() - tests.len(),
        discarded: all.len() - kept.len(),
        difference,
    })
}

/// Whether two Python files have the same AST (via `ast.dump`, docstrings and bare strings dropped).
///
/// # Errors
/// When the child cannot run or a file does not parse.
pub fn ast_equal(python: &Path, a: &Path, b: &Path) -> Result<bool, CompareError> {
    let dir = tempfile::Builder::new().prefix("deepdebug-ast-").tempdir()?;
    let script = dir.path().join("equivalence.py");
    std::fs::write(&script, SCRIPT)?;
    let mut command = Command::new(python);
    command.arg(&script).arg("ast").arg(a).arg(b).env("PYTHONDONTWRITEBYTECODE", "1");
    let output = process::run(&mut command, Duration::from_secs(30), Limits::default(), dir.path())?;
    match output.stdout.trim() {
        "equal" => Ok(true),
        "different" => Ok(false),
        _ => Err(CompareError::Ast(clip(output.stderr.trim(), 300))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(patched: &str, correct: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (package, text) in [("python_programs", patched), ("correct_python_programs", correct)] {
            std::fs::create_dir_all(dir.path().join(package)).unwrap();
            std::fs::write(dir.path().join(package).join("f.py"), text).unwrap();
        }
        dir
    }

    fn config(generated: usize) -> CompareConfig {
        CompareConfig {
            python: PathBuf::from("python3"),
            per_call_timeout: Duration::from_millis(300),
            generated,
            seed: 5,
        }
    }

    #[test]
    fn a_difference_on_generated_inputs_is_found() {
        let dir = tree("def f(n):\n    return abs(n)\n", "def f(n):\n    return n\n");
        let cmp = compare_on_inputs(dir.path(), "f", &[vec![json!(4)], vec![json!(7)]], &config(30)).unwrap();
        assert_eq!(cmp.test_inputs, 2);
        let d = cmp.difference.expect("negative inputs differ");
        assert!(!d.from_tests);
        assert_ne!(d.patched, d.correct);
    }

    #[test]
    fn values_exceptions_and_double_timeouts_compare_equal() {
        let program = "def f(n):\n    if n < 0:\n        while True:\n            pass\n    if n == 0:\n        raise ValueError(n)\n    return {n, n + 1}\n";
        let dir = tree(program, program);
        let tests = [vec![json!(-1)], vec![json!(0)], vec![json!(3)]];
        let cmp = compare_on_inputs(dir.path(), "f", &tests, &config(0)).unwrap();
        assert_eq!(cmp.difference, None);
        let results =
            run_program(Path::new("python3"), dir.path(), "python_programs", "f", &tests, Duration::from_millis(300))
                .unwrap();
        assert_eq!(
            results,
            vec![CallResult::Timeout, CallResult::Raised("ValueError".into()), CallResult::Value("set{3, 4}".into())]
        );
    }

    #[test]
    fn generated_inputs_the_correct_program_rejects_are_discarded() {
        let dir = tree("def f(xs):\n    return xs[0]\n", "def f(xs):\n    return xs[0]\n");
        let cmp = compare_on_inputs(dir.path(), "f", &[vec![json!([1, 2, 3])]], &config(40)).unwrap();
        assert_eq!(cmp.difference, None);
        assert!(cmp.discarded > 0, "the empty list raises IndexError and must be discarded: {cmp:?}");
    }

    #[test]
    fn an_unimportable_program_is_an_error() {
        let dir = tree("def f(:\n", "def f(n):\n    return n\n");
        let err = compare_on_inputs(dir.path(), "f", &[vec![json!(1)]], &config(0)).unwrap_err();
        assert!(matches!(err, CompareError::Import { side: "patched", .. }), "{err}");
    }

    #[test]
    fn floats_agree_to_nine_significant_digits() {
        let dir = tree("def f(x):\n    return x / 3 + 1e-12\n", "def f(x):\n    return x / 3\n");
        let cmp = compare_on_inputs(dir.path(), "f", &[vec![json!(1.0)]], &config(0)).unwrap();
        assert_eq!(cmp.difference, None);
        let dir = tree("def f(x):\n    return x / 3 + 1e-6\n", "def f(x):\n    return x / 3\n");
        let cmp = compare_on_inputs(dir.path(), "f", &[vec![json!(1.0)]], &config(0)).unwrap();
        assert!(cmp.difference.is_some());
    }

    #[test]
    fn ast_equality_ignores_comments_and_docstrings() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.py");
        let b = dir.path().join("b.py");
        let c = dir.path().join("c.py");
        std::fs::write(&a, "def f(x):\n    \"\"\"Doc.\"\"\"\n    # note\n    return x + 1\n").unwrap();
        std::fs::write(&b, "def f(x):\n    return x+1\n").unwrap();
        std::fs::write(&c, "def f(x):\n    return x - 1\n").unwrap();
        let python = Path::new("python3");
        assert!(ast_equal(python, &a, &b).unwrap());
        assert!(!ast_equal(python, &a, &c).unwrap());
    }
}
