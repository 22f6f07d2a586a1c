//! DeepDebug-style code normalization: no comments, literal placeholders, standard whitespace.
//!
//! The normalized form is only used to decide whether an edit is trivial and to
//! deduplicate edits; mined rows keep the original source.

use super::Parsed;
use std::ops::Range;
use tree_sitter::Node;

/// Placeholder for every string literal (f-strings and docstrings included).
pub const STR_LIT: &str = "STR_LIT";
/// Placeholder for every integer, float and imaginary literal.
pub const NUM_LIT: &str = "NUM_LIT";

/// Normalize the smallest syntax node covering `byte_range` of `parsed`.
///
/// Comments are dropped, string literals become `STR_LIT`, numeric literals become
/// `NUM_LIT`, tokens on one logical line are separated by a single space, and
/// indentation is rewritten as four spaces per block level. Two snippets that differ
/// only in those respects normalize to the same string.
#[must_use]
pub fn normalize_range(parsed: &Parsed, byte_range: Range<usize>) -> String {
    let root = parsed.root();
    let node = root.descendant_for_byte_range(byte_range.start, byte_range.end).unwrap_or(root);
    let mut out = Normalizer::default();
    out.visit(parsed, node);
    out.finish()
}

/// Normalize a whole source text (parses it first).
#[must_use]
pub fn normalize_source(text: &str) -> String {
    let parsed = Parsed::new(text);
    let mut out = Normalizer::default();
    out.visit(&parsed, parsed.root());
    out.finish()
}

#[derive(Default)]
struct Normalizer {
    text: String,
    /// Row where the previously emitted token ended, if any token was emitted.
    last_row: Option<usize>,
    /// Bracket nesting depth; newlines inside brackets are not logical line breaks.
    depth: usize,
    /// Columns of the enclosing indentation levels, innermost last.
    indents: Vec<usize>,
}

impl Normalizer {
    /// Emit the tokens under `node` in document order, walking with one cursor (a cursor
    /// per node would allocate for every internal node).
    fn visit(&mut self, parsed: &Parsed, node: Node<'_>) {
        let mut cursor = node.walk();
        loop {
            let current = cursor.node();
            let descend = match current.kind() {
                "comment" => false,
                "string" => {
                    self.token(current, STR_LIT);
                    false
                }
                "integer" | "float" => {
                    self.token(current, NUM_LIT);
                    false
                }
                _ if current.child_count() == 0 => {
                    let text = parsed.node_text(current);
                    // Zero-width tokens (`MISSING` nodes, dedents) carry no text.
                    if !text.trim().is_empty() {
                        self.token(current, text.trim());
                    }
                    false
                }
                _ => true,
            };
            if descend && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.node() == node {
                    return;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    fn token(&mut self, node: Node<'_>, text: &str) {
        let start = node.start_position();
        match self.last_row {
            None => {
                self.indents.push(start.column);
            }
            Some(row) if start.row > row && self.depth == 0 => {
                while self.indents.len() > 1 && self.indents.last().is_some_and(|&c| start.column < c) {
                    self.indents.pop();
                }
                if self.indents.last().is_some_and(|&c| start.column > c) {
                    self.indents.push(start.column);
                }
                self.text.push('\n');
                for _ in 1..self.indents.len() {
                    self.text.push_str("    ");
                }
            }
            Some(_) => self.text.push(' '),
        }
        self.text.push_str(text);
        match text {
            "(" | "[" | "{" => self.depth += 1,
            ")" | "]" | "}" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.last_row = Some(node.end_position().row);
    }

    fn finish(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str, expect: &str) {
        assert_eq!(normalize_source(src), expect, "source:\n{src}");
    }

    #[test]
    fn comments_and_literals_are_replaced_and_whitespace_standardized() {
        check(
            "def f(x):  # note\n  '''Doc.'''\n  if x  >  3.5:\n        return f\"a{x}\" + 'b'\n  return 0x1F\n",
            "def f ( x ) :\n    STR_LIT\n    if x > NUM_LIT :\n        return STR_LIT + STR_LIT\n    return NUM_LIT",
        );
    }

    #[test]
    fn newlines_inside_brackets_do_not_break_the_logical_line() {
        check("x = foo(1,\n        2)\ny = [\n  3]\n", "x = foo ( NUM_LIT , NUM_LIT )\ny = [ NUM_LIT ]");
    }

    #[test]
    fn dedent_returns_to_the_enclosing_level() {
        check(
            "class A:\n   def f(self):\n         return 1\n   x = 2\ny = 3\n",
            "class A :\n    def f ( self ) :\n        return NUM_LIT\n    x = NUM_LIT\ny = NUM_LIT",
        );
    }

    #[test]
    fn edits_to_literals_comments_and_spacing_normalize_identically() {
        let before = "def f(a):\n    # old comment\n    return a + 1  # x\n";
        let after = "def f(a):\n\n    return a+2\n";
        assert_eq!(normalize_source(before), normalize_source(after));
        let real_fix = "def f(a):\n    return a - 1\n";
        assert_ne!(normalize_source(before), normalize_source(real_fix));
    }

    #[test]
    fn normalize_range_covers_only_the_selected_method() {
        let src = "class A:\n    def f(self):\n        return 'x'  # c\n\n    def g(self):\n        return 2\n";
        let parsed = Parsed::new(src);
        let start = src.find("def g").unwrap();
        let got = normalize_range(&parsed, start..src.len() - 1);
        assert_eq!(got, "def g ( self ) :\n    return NUM_LIT");
    }
}
