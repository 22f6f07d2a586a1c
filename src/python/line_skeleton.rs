//! A file skeleton from a line scan, without parsing: imports, classes, signatures, globals.
//!
//! A cheaper approximation of [`super::SkeletonContext`] for bulk mining: same priorities
//! and output format, but multi-line signatures keep only their first line and lines inside
//! triple-quoted strings are skipped by a simple quote count.

use super::skeleton_context::{Priority, MAX_LINE_CHARS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Import,
    Class,
    Signature,
    Assignment,
}

struct Entry<'t> {
    line: usize,
    kind: Kind,
    /// For a class header its own name, otherwise the class it sits in directly.
    class: Option<&'t str>,
    text: String,
}

enum Scope<'t> {
    Class(&'t str),
    Def,
}

/// The skeleton lines of one file, found once and rendered per focal function.
pub struct LineSkeleton<'t> {
    entries: Vec<Entry<'t>>,
}

impl<'t> LineSkeleton<'t> {
    #[must_use]
    pub fn new(text: &'t str) -> LineSkeleton<'t> {
        LineSkeleton { entries: scan(text) }
    }

    /// The skeleton around the function whose definition (decorators included) starts
    /// on 1-based line `focal_line`, marked with `# target edit` / `# end`, cut to
    /// `max_bytes` by priority and printed in file order.
    #[must_use]
    pub fn render(&self, focal_line: usize, focal_class: Option<&str>, max_bytes: usize) -> String {
        let entries = &self.entries;
        let focal = entries.iter().position(|e| e.kind == Kind::Signature && e.line >= focal_line);
        let priority = |i: usize, e: &Entry<'_>| {
            let in_focal_class = focal_class.is_some() && e.class == focal_class;
            if Some(i) == focal {
                Priority::Focal
            } else {
                match e.kind {
                    Kind::Class if in_focal_class => Priority::FocalClass,
                    Kind::Import => Priority::Import,
                    _ if in_focal_class => Priority::FocalClassMember,
                    Kind::Class | Kind::Signature => Priority::Signature,
                    Kind::Assignment => Priority::Global,
                }
            }
        };
        let mut ranked: Vec<(Priority, usize)> = entries.iter().enumerate().map(|(i, e)| (priority(i, e), i)).collect();
        ranked.sort_unstable();
        let mut keep = vec![false; entries.len()];
        let mut used = 0;
        for (_, i) in ranked {
            let len = entries[i].text.len() + 1;
            if used + len <= max_bytes {
                used += len;
                keep[i] = true;
            }
        }
        let mut out = String::with_capacity(used + 32);
        for (i, entry) in entries.iter().enumerate().filter(|(i, _)| keep[*i]) {
            if Some(i) == focal {
                let indent = &entry.text[..entry.text.len() - entry.text.trim_start().len()];
                out.push_str(indent);
                out.push_str("# target edit\n");
                out.push_str(&entry.text);
                out.push('\n');
                out.push_str(indent);
                out.push_str("# end\n");
            } else {
                out.push_str(&entry.text);
                out.push('\n');
            }
        }
        out
    }
}

/// True when `line` holds an odd number of `delim`, i.e. opens or closes a string.
fn toggles(line: &str, delim: &str) -> bool {
    line.as_bytes().contains(&delim.as_bytes()[0]) && line.matches(delim).count() % 2 == 1
}

fn scan(text: &str) -> Vec<Entry<'_>> {
    let mut entries = Vec::new();
    let mut scopes: Vec<(usize, Scope<'_>)> = Vec::new();
    let mut in_string: Option<&str> = None;
    for (i, raw) in text.lines().enumerate() {
        if let Some(delim) = in_string {
            if toggles(raw, delim) {
                in_string = None;
            }
            continue;
        }
        let content = raw.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        in_string = ["\"\"\"", "'''"].into_iter().find(|d| toggles(content, d));
        let indent = raw.len() - content.len();
        while scopes.last().is_some_and(|(level, _)| *level >= indent) {
            scopes.pop();
        }
        let in_def = scopes.iter().any(|(_, s)| matches!(s, Scope::Def));
        let class = match scopes.last() {
            Some((_, Scope::Class(name))) => Some(*name),
            _ => None,
        };
        let line = i + 1;
        let code = raw.trim_end();
        if let Some(rest) = content.strip_prefix("class ") {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let name = &rest[..end];
            if !in_def {
                entries.push(Entry { line, kind: Kind::Class, class: Some(name), text: code.to_string() });
            }
            scopes.push((indent, Scope::Class(name)));
        } else if content.starts_with("def ") || content.starts_with("async def ") {
            if !in_def {
                entries.push(Entry { line, kind: Kind::Signature, class, text: format!("{code} ...") });
            }
            scopes.push((indent, Scope::Def));
        } else if in_def {
            // Function bodies contribute nothing.
        } else if content.starts_with("import ") || content.starts_with("from ") {
            entries.push(Entry { line, kind: Kind::Import, class, text: code.to_string() });
        } else if is_assignment(content) {
            let mut text: String = code.chars().take(indent + MAX_LINE_CHARS).collect();
            if text.len() < code.len() {
                text.push_str(" ...");
            }
            entries.push(Entry { line, kind: Kind::Assignment, class, text });
        }
    }
    entries
}

/// `name = ...`, `name: T = ...` or `a, b = ...` at the start of a statement.
fn is_assignment(content: &str) -> bool {
    let target_end = content
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ',' | ' ' | ':' | '[' | ']')))
        .unwrap_or(content.len());
    content.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && content[target_end..].starts_with('=')
        && !content[target_end..].starts_with("==")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "import os\nfrom x import y\n\nLIMIT = 10\n\nclass Shape(Base):\n    \"\"\"Doc.\n\ndef not_a_function():\n    \"\"\"\n    sides = 4\n\n    def area(self):\n        local = 1\n        return 1\n\n    @property\n    def name(self) -> str:\n        return 'shape'\n\ndef helper(a, b=2):\n    return a\n";

    #[test]
    fn line_skeleton_marks_the_focal_method_and_skips_bodies_and_strings() {
        let text = LineSkeleton::new(SRC).render(13, Some("Shape"), 10_000);
        assert_eq!(
            text,
            "import os\nfrom x import y\nLIMIT = 10\nclass Shape(Base):\n    sides = 4\n    # target edit\n    def area(self): ...\n    # end\n    def name(self) -> str: ...\ndef helper(a, b=2): ...\n"
        );
    }

    #[test]
    fn decorated_focal_function_is_found_from_its_decorator_line() {
        let text = LineSkeleton::new(SRC).render(17, Some("Shape"), 10_000);
        assert!(text.contains("# target edit\n    def name(self) -> str: ...\n    # end"), "{text}");
    }

    #[test]
    fn small_budget_keeps_the_focal_function_and_imports_first() {
        let text = LineSkeleton::new(SRC).render(21, None, 60);
        assert!(text.contains("def helper(a, b=2): ..."), "{text}");
        assert!(text.contains("import os"), "{text}");
        assert!(!text.contains("LIMIT"), "{text}");
    }
}
