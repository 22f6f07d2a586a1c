//! A compact file skeleton around a focal function: imports, classes, signatures, globals.
//!
//! Follows the priorities of DeepDebug §4.5: the focal function (marked with
//! `# target edit` / `# end`), its class, imports, class attributes, other signatures and
//! finally globals, kept in document order and cut to a byte budget.

use super::{FunctionDef, Parsed};
use tree_sitter::Node;

/// Longest line kept for a single global or class attribute.
pub(super) const MAX_LINE_CHARS: usize = 160;

/// What a skeleton line is, in the order lines are kept (shared with `line_skeleton`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Priority {
    Focal,
    FocalClass,
    Import,
    FocalClassMember,
    Signature,
    Global,
}

#[derive(Debug, Clone)]
struct Entry {
    start_byte: usize,
    /// Index into the function list when the entry is a function signature.
    function: Option<usize>,
    class: Option<String>,
    kind: EntryKind,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Import,
    Class,
    Signature,
    Assignment,
}

/// The skeleton lines of one file, rendered per focal function.
#[derive(Debug, Clone)]
pub struct SkeletonContext {
    entries: Vec<Entry>,
}

impl SkeletonContext {
    /// Collect skeleton lines; `functions` must come from [`super::functions`] on `parsed`.
    #[must_use]
    pub fn new(parsed: &Parsed, functions: &[FunctionDef]) -> SkeletonContext {
        let mut entries = Vec::new();
        collect(parsed, parsed.root(), None, &mut entries);
        for (index, function) in functions.iter().enumerate() {
            let Some(node) =
                parsed.root().descendant_for_byte_range(function.byte_range.start, function.byte_range.end)
            else {
                continue;
            };
            let def = if node.kind() == "decorated_definition" {
                node.child_by_field_name("definition").unwrap_or(node)
            } else {
                node
            };
            let header_end = def.child_by_field_name("body").map_or(def.end_byte(), |b| b.start_byte());
            let indent = " ".repeat(def.start_position().column);
            let header = parsed.text()[def.start_byte()..header_end].trim_end();
            entries.push(Entry {
                start_byte: function.byte_range.start,
                function: Some(index),
                class: function.class.clone(),
                kind: EntryKind::Signature,
                text: format!("{indent}{header} ..."),
            });
        }
        entries.sort_by_key(|e| e.start_byte);
        SkeletonContext { entries }
    }

    /// Render the skeleton around function `focal` (an index into the function list)
    /// within `max_bytes`, highest-priority lines first, output in document order.
    #[must_use]
    pub fn render(&self, focal: usize, focal_class: Option<&str>, max_bytes: usize) -> String {
        let mut ranked: Vec<(Priority, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (SkeletonContext::priority(e, focal, focal_class), i))
            .collect();
        ranked.sort();
        let mut keep = vec![false; self.entries.len()];
        let mut used = 0;
        for (_, i) in ranked {
            let len = self.entries[i].text.len() + 1;
            if used + len > max_bytes {
                continue;
            }
            used += len;
            keep[i] = true;
        }
        let mut out = String::with_capacity(used + 32);
        for (i, entry) in self.entries.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            if entry.function == Some(focal) {
                let indent: String = entry.text.chars().take_while(|c| *c == ' ').collect();
                out.push_str(&indent);
                out.push_str("# target edit\n");
                out.push_str(&entry.text);
                out.push('\n');
                out.push_str(&indent);
                out.push_str("# end\n");
            } else {
                out.push_str(&entry.text);
                out.push('\n');
            }
        }
        out
    }

    fn priority(entry: &Entry, focal: usize, focal_class: Option<&str>) -> Priority {
        if entry.function == Some(focal) {
            return Priority::Focal;
        }
        let in_focal_class = focal_class.is_some() && entry.class.as_deref() == focal_class;
        match entry.kind {
            EntryKind::Class if in_focal_class => Priority::FocalClass,
            EntryKind::Import => Priority::Import,
            _ if in_focal_class => Priority::FocalClassMember,
            EntryKind::Class | EntryKind::Signature => Priority::Signature,
            EntryKind::Assignment => Priority::Global,
        }
    }
}

fn one_line(parsed: &Parsed, node: Node<'_>) -> String {
    let indent = " ".repeat(node.start_position().column);
    let text = parsed.node_text(node);
    let first = text.lines().next().unwrap_or_default();
    let mut line: String = first.chars().take(MAX_LINE_CHARS).collect();
    if line.len() < first.len() || text.lines().nth(1).is_some() {
        line.push_str(" ...");
    }
    format!("{indent}{line}")
}

/// Imports, class headers and assignments at module and class level.
fn collect(parsed: &Parsed, node: Node<'_>, class: Option<&str>, out: &mut Vec<Entry>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let def = if child.kind() == "decorated_definition" {
            child.child_by_field_name("definition").unwrap_or(child)
        } else {
            child
        };
        match def.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                out.push(entry(parsed, def, class, EntryKind::Import));
            }
            "expression_statement" if def.named_child(0).is_some_and(|n| n.kind() == "assignment") => {
                out.push(entry(parsed, def, class, EntryKind::Assignment));
            }
            "class_definition" => {
                let header_end = def.child_by_field_name("body").map_or(def.end_byte(), |b| b.start_byte());
                let indent = " ".repeat(def.start_position().column);
                let header = parsed.text()[def.start_byte()..header_end].trim_end();
                let name = def.child_by_field_name("name").map(|n| parsed.node_text(n).to_string());
                out.push(Entry {
                    start_byte: child.start_byte(),
                    function: None,
                    class: name.clone(),
                    kind: EntryKind::Class,
                    text: format!("{indent}{header}"),
                });
                if let Some(body) = def.child_by_field_name("body") {
                    collect(parsed, body, name.as_deref(), out);
                }
            }
            "if_statement" | "try_statement" | "with_statement" | "block" | "else_clause" | "except_clause"
            | "finally_clause" | "elif_clause"
                if class.is_none() =>
            {
                collect(parsed, def, class, out);
            }
            _ => {}
        }
    }
}

fn entry(parsed: &Parsed, node: Node<'_>, class: Option<&str>, kind: EntryKind) -> Entry {
    Entry {
        start_byte: node.start_byte(),
        function: None,
        class: class.map(str::to_string),
        kind,
        text: one_line(parsed, node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::functions;

    const SRC: &str = "import os\nfrom x import y\n\nLIMIT = 10\n\nclass Shape(Base):\n    sides = 4\n\n    def area(self):\n        return 1\n\n    @property\n    def name(self) -> str:\n        return 'shape'\n\ndef helper(a, b=2):\n    return a\n";

    #[test]
    fn skeleton_marks_the_focal_method_and_keeps_signatures_in_order() {
        let parsed = Parsed::new(SRC);
        let fns = functions(&parsed);
        let skeleton = SkeletonContext::new(&parsed, &fns);
        let area = fns.iter().position(|f| f.qualname == "Shape.area").unwrap();
        let text = skeleton.render(area, Some("Shape"), 10_000);
        assert_eq!(
            text,
            "import os\nfrom x import y\nLIMIT = 10\nclass Shape(Base):\n    sides = 4\n    # target edit\n    def area(self): ...\n    # end\n    def name(self) -> str: ...\ndef helper(a, b=2): ...\n"
        );
    }

    #[test]
    fn small_budget_drops_globals_before_imports_and_the_focal_method() {
        let parsed = Parsed::new(SRC);
        let fns = functions(&parsed);
        let skeleton = SkeletonContext::new(&parsed, &fns);
        let helper = fns.iter().position(|f| f.qualname == "helper").unwrap();
        let text = skeleton.render(helper, None, 60);
        assert!(text.contains("def helper(a, b=2): ..."), "{text}");
        assert!(text.contains("import os"), "{text}");
        assert!(!text.contains("LIMIT"), "{text}");
    }
}
