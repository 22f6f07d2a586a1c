//! The trace note of a prompt (DeepDebug's "traces"): the failing test's error and the locals of its innermost project frame, as a few clipped comment lines.

use crate::text::clip;
use std::collections::BTreeMap;

/// Lines of the error message kept.
const MESSAGE_LINES: usize = 3;
/// Characters kept of one message line, and of one local's value.
const LINE_CHARS: usize = 160;
const VALUE_CHARS: usize = 60;
/// Locals shown (in name order).
const MAX_LOCALS: usize = 8;

/// What a note is made of: the failing test and its error, and the innermost project frame.
#[derive(Debug, Clone, Default)]
pub struct Trace<'a> {
    /// The failing test's node id.
    pub test: Option<&'a str>,
    /// The exception's type name (`AssertionError`).
    pub error_type: &'a str,
    pub message: &'a str,
    /// The innermost frame in the project's code (not the test's): its function and locals,
    /// as pytest's `--showlocals` prints them.
    pub frame: Option<(&'a str, &'a BTreeMap<String, String>)>,
}

impl Trace<'_> {
    /// The note: comment lines, each ending in a newline; empty when there is nothing to say.
    ///
    /// ```text
    /// # Failing test: tests/test_stack.py::test_pop
    /// # AssertionError: assert 3 == 2
    /// # Locals of pop when it failed: items = [1, 2, 3], n = 3
    /// ```
    #[must_use]
    pub fn note(&self) -> String {
        let mut out = String::new();
        if let Some(test) = self.test {
            out.push_str(&format!("# Failing test: {}\n", clip(test, LINE_CHARS)));
        }
        let message: Vec<&str> = self.message.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
        match (self.error_type.is_empty(), message.first()) {
            (true, None) => {}
            (false, None) => out.push_str(&format!("# {}\n", self.error_type)),
            (empty, Some(_)) => {
                for (i, line) in message.iter().take(MESSAGE_LINES).enumerate() {
                    let kind = if i == 0 && !empty { format!("{}: ", self.error_type) } else { String::new() };
                    out.push_str(&format!("# {}\n", clip(&format!("{kind}{line}"), LINE_CHARS)));
                }
            }
        }
        if let Some((function, locals)) = self.frame {
            let shown: Vec<String> = locals
                .iter()
                .filter(|(name, _)| !name.starts_with("__") && !name.starts_with('@'))
                .take(MAX_LOCALS)
                .map(|(name, value)| format!("{name} = {}", clip(&value.replace('\n', " "), VALUE_CHARS)))
                .collect();
            if !shown.is_empty() {
                let line = format!("# Locals of {function} when it failed: {}", shown.join(", "));
                out.push_str(&clip(&line, 2 * LINE_CHARS));
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_has_the_test_the_error_and_clipped_locals() {
        let locals: BTreeMap<String, String> = [
            ("items".to_string(), "[1, 2, 3]".to_string()),
            ("n".to_string(), "3".to_string()),
            ("__class__".to_string(), "<class>".to_string()),
            ("big".to_string(), "x".repeat(200)),
        ]
        .into();
        let trace = Trace {
            test: Some("tests/test_stack.py::test_pop"),
            error_type: "AssertionError",
            message: "assert 3 == 2\n +  where 3 = pop()\n\n more\n and more",
            frame: Some(("pop", &locals)),
        };
        let note = trace.note();
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines[0], "# Failing test: tests/test_stack.py::test_pop");
        assert_eq!(lines[1], "# AssertionError: assert 3 == 2");
        assert_eq!(lines[2], "#  +  where 3 = pop()");
        assert_eq!(lines[3], "#  more", "three message lines, blank ones skipped");
        assert!(lines[4].starts_with("# Locals of pop when it failed: big = xxx"), "{note}");
        assert!(lines[4].contains("…, items = [1, 2, 3], n = 3"), "{note}");
        assert!(!note.contains("__class__"));
        assert_eq!(lines.len(), 5);
        assert!(note.lines().all(|l| l.starts_with('#')), "comments only: the prompt stays Python");
    }

    #[test]
    fn an_empty_trace_says_nothing_and_a_bare_error_says_its_type() {
        assert_eq!(Trace::default().note(), "");
        let trace = Trace { error_type: "Timeout", ..Trace::default() };
        assert_eq!(trace.note(), "# Timeout\n");
    }
}
