//! The smallest source a hot swap compiles: each edited function's lines under stand-in headers of its blocks.

use crate::python::{FunctionDef, Parsed};

/// One function's lines and the headers that nest them as in the file: `class Name:` for each
/// class around it (name mangling and `super()` need it), `if 1:` for any other block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The header lines, outermost first, each with its line end.
    pub headers: String,
    pub header_count: usize,
    /// 1-based inclusive lines of the function (its decorators included).
    pub lines: (usize, usize),
}

/// The chunks of `defs` (definitions in `patched`), in line order; `None` when a function does
/// not start its own line or its headers do not fit in the lines above it.
#[must_use]
pub fn chunks(patched: &Parsed, defs: &[&FunctionDef]) -> Option<Vec<Chunk>> {
    let mut defs = defs.to_vec();
    defs.sort_by_key(|d| d.start_line);
    let mut out: Vec<Chunk> = Vec::new();
    for def in defs {
        let (headers, header_count) = headers(patched, def)?;
        let previous_end = out.last().map_or(0, |c: &Chunk| c.lines.1);
        if def.start_line <= previous_end + header_count {
            return None;
        }
        out.push(Chunk { headers, header_count, lines: (def.start_line, def.end_line) });
    }
    Some(out)
}

/// The stand-in headers of the blocks around `def`, and how many lines they take.
fn headers(patched: &Parsed, def: &FunctionDef) -> Option<(String, usize)> {
    let root = patched.root();
    let mut node = root.descendant_for_byte_range(def.byte_range.start, def.byte_range.end)?;
    while node.byte_range() != def.byte_range {
        node = node.parent()?;
    }
    if !starts_its_line(patched, node.start_byte()) {
        return None;
    }
    // (column, header with its line's own indentation) from the innermost block out.
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut parent = node.parent();
    while let Some(p) = parent.filter(|p| p.id() != root.id()) {
        parent = p.parent();
        if matches!(p.kind(), "block" | "decorated_definition") {
            continue;
        }
        let column = p.start_position().column;
        if !starts_its_line(patched, p.start_byte()) {
            return None;
        }
        if found.last().is_some_and(|(inner, _)| *inner <= column) {
            continue; // an `else:` and its `if` share one header
        }
        let indent = &patched.text()[p.start_byte() - column..p.start_byte()];
        let header = match p.kind() {
            "class_definition" => format!("{indent}class {}:", patched.node_text(p.child_by_field_name("name")?)),
            _ => format!("{indent}if 1:"),
        };
        found.push((column, header));
    }
    let count = found.len();
    let text = found.iter().rev().map(|(_, header)| format!("{header}\n")).collect();
    Some((text, count))
}

/// Only whitespace precedes byte `at` on its line.
fn starts_its_line(parsed: &Parsed, at: usize) -> bool {
    let text = parsed.text().as_bytes();
    text[..at].iter().rev().take_while(|&&b| b != b'\n').all(|&b| b == b' ' || b == b'\t')
}

/// The source to compile for `chunks` of `patched_text`: each chunk's headers on the lines
/// right above its function, blank lines elsewhere, as (1-based first line, text).
#[must_use]
pub fn source(chunks: &[Chunk], patched_text: &str) -> (usize, String) {
    let lines: Vec<&str> = patched_text.split_inclusive('\n').collect();
    let first = chunks.first().map_or(1, |c| c.lines.0 - c.header_count);
    let mut text = String::new();
    let mut next = first;
    for chunk in chunks {
        let start = chunk.lines.0 - chunk.header_count;
        text.extend(std::iter::repeat_n("\n", start - next));
        text.push_str(&chunk.headers);
        for line in lines.iter().take(chunk.lines.1).skip(chunk.lines.0 - 1) {
            text.push_str(line);
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        next = chunk.lines.1 + 1;
    }
    (first, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::functions;

    fn compiled(text: &str, names: &[&str]) -> (usize, String) {
        let parsed = Parsed::new(text);
        let all = functions(&parsed);
        let defs: Vec<&FunctionDef> = names.iter().map(|n| all.iter().find(|d| d.qualname == *n).unwrap()).collect();
        source(&chunks(&parsed, &defs).expect("chunks"), text)
    }

    #[test]
    fn a_method_compiles_under_its_classes_at_its_own_lines() {
        let text = "import os\n\nclass Outer:\n    x = 1\n\n    class Inner:\n        @staticmethod\n        def f(y):\n            return y\n\n    def g(self):\n        return 2\n";
        let (first, source) = compiled(text, &["Outer.Inner.f"]);
        assert_eq!(first, 5);
        assert_eq!(
            source,
            "class Outer:\n    class Inner:\n        @staticmethod\n        def f(y):\n            return y\n"
        );
        // Two methods: blank lines between the chunks keep every line where it was.
        let (first, source) = compiled(text, &["Outer.g", "Outer.Inner.f"]);
        assert_eq!(first, 5);
        assert_eq!(source.lines().count(), 12 - 5 + 1);
        assert_eq!(source.lines().nth(11 - 5), Some("    def g(self):"));
        assert_eq!(source.lines().nth(10 - 5), Some("class Outer:"));
    }

    #[test]
    fn other_blocks_become_one_stand_in_header_per_level() {
        let text = "import sys\nif sys.version_info > (3,):\n    pass\nelse:\n    try:\n        import x\n    except ImportError:\n        def h():\n            return 1\n";
        let (first, source) = compiled(text, &["h"]);
        assert_eq!(first, 6);
        assert_eq!(source, "if 1:\n    if 1:\n        def h():\n            return 1\n");
    }

    #[test]
    fn headers_keep_the_files_tabs() {
        let text = "class A:\n\tif True:\n\t\tdef f(self):\n\t\t\treturn 1\n";
        let (first, source) = compiled(text, &["A.f"]);
        assert_eq!((first, source.as_str()), (1, "class A:\n\tif 1:\n\t\tdef f(self):\n\t\t\treturn 1\n"));
    }

    #[test]
    fn functions_without_room_for_their_headers_have_no_chunks() {
        let text = "class A:\n    def f(self):\n        return 1\n    def g(self):\n        return 2\n";
        let parsed = Parsed::new(text);
        let all = functions(&parsed);
        let refs: Vec<&FunctionDef> = all.iter().collect();
        assert!(chunks(&parsed, &refs).is_none(), "g's class header would overwrite f's last line");
        assert!(chunks(&parsed, &refs[1..]).is_some());
    }
}
