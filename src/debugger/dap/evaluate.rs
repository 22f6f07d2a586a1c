//! Expressions evaluated against a recorded state (values known by their reprs), in a Python helper.

use super::timeline::Variable;
use serde::Deserialize;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const EVALUATOR: &str = include_str!("evaluate.py");

/// What an expression came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Its repr and type name.
    Ok { value: String, type_name: String },
    /// The error it raised (or why it could not be evaluated).
    Error(String),
}

#[derive(Deserialize)]
struct Reply {
    ok: bool,
    #[serde(default)]
    value: String,
    #[serde(default, rename = "type")]
    type_name: String,
    #[serde(default)]
    error: String,
}

/// A persistent Python process that evaluates expressions (started on first use).
pub struct Evaluator {
    python: PathBuf,
    process: Option<(Child, ChildStdin, BufReader<ChildStdout>)>,
}

impl Evaluator {
    #[must_use]
    pub fn new(python: &Path) -> Evaluator {
        Evaluator { python: python.to_path_buf(), process: None }
    }

    /// Evaluate `expression` with `locals` as its names: literals are rebuilt from their
    /// reprs, other values stand for themselves by their repr.
    pub fn evaluate(&mut self, expression: &str, locals: &[Variable]) -> Value {
        let request = serde_json::json!({
            "expression": expression,
            "locals": locals.iter().map(|v| (v.name.clone(), serde_json::Value::from(v.value.clone()))).collect::<serde_json::Map<_, _>>(),
        });
        match self.ask(&request.to_string()) {
            Ok(reply) if reply.ok => Value::Ok { value: reply.value, type_name: reply.type_name },
            Ok(reply) => Value::Error(reply.error),
            Err(err) => {
                self.process = None;
                Value::Error(format!("the evaluator failed: {err}"))
            }
        }
    }

    /// Whether a breakpoint condition holds; an expression that fails counts as true (as in
    /// pdb), with the error returned so it can be shown.
    pub fn condition(&mut self, expression: &str, locals: &[Variable]) -> (bool, Option<String>) {
        match self.evaluate(&format!("bool({expression})"), locals) {
            Value::Ok { value, .. } => (value == "True", None),
            Value::Error(error) => (true, Some(error)),
        }
    }

    fn ask(&mut self, line: &str) -> std::io::Result<Reply> {
        if self.process.is_none() {
            let mut child = Command::new(&self.python)
                .args(["-c", EVALUATOR])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            let stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
            let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
            self.process = Some((child, stdin, BufReader::new(stdout)));
        }
        let Some((_, stdin, stdout)) = self.process.as_mut() else {
            return Err(std::io::Error::other("not started"));
        };
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        let mut reply = String::new();
        if stdout.read_line(&mut reply)? == 0 {
            return Err(std::io::Error::other("the evaluator exited"));
        }
        serde_json::from_str(&reply).map_err(std::io::Error::other)
    }
}

impl Drop for Evaluator {
    fn drop(&mut self) {
        if let Some((mut child, ..)) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, value: &str) -> Variable {
        Variable { name: name.into(), value: value.into(), type_name: String::new(), children: Vec::new() }
    }

    #[test]
    fn literals_are_rebuilt_and_other_values_shown_by_their_repr() {
        let mut e = Evaluator::new(Path::new("python3"));
        let locals = [var("xs", "[1, 2, 3]"), var("total", "6"), var("obj", "<Point object>")];
        assert_eq!(e.evaluate("sum(xs) * total", &locals), Value::Ok { value: "36".into(), type_name: "int".into() });
        assert_eq!(
            e.evaluate("obj", &locals),
            Value::Ok { value: "<Point object>".into(), type_name: "Recorded".into() }
        );
        assert!(matches!(e.evaluate("missing + 1", &locals), Value::Error(m) if m.contains("NameError")));
        assert_eq!(e.condition("total > 5", &locals), (true, None));
        assert_eq!(e.condition("len(xs) == 2", &locals), (false, None));
        assert!(e.condition("nope", &locals).1.is_some());
    }
}
