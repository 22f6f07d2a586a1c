//! Test helpers, and the snapshot of every candidate each family proposes on its fixture (`tests/fixtures/operators/`).

use super::{mutations_at_line, mutations_at_line_in, FileScope, Operator, FAMILIES};
use crate::patch::Patch;
use crate::python::Parsed;
use std::fmt::Write as _;

/// The patched line of each mutation `op` proposes at `line` (trimmed, sorted).
pub(super) fn variants(src: &str, line: usize, op: Operator) -> Vec<String> {
    let parsed = Parsed::new(src);
    let mut out: Vec<String> = mutations_at_line(&parsed, line)
        .into_iter()
        .filter(|m| m.operator == op)
        .map(|m| {
            let patched = Patch::single("m.py", m.edit).apply(src);
            patched.lines().nth(line - 1).unwrap().trim().to_string()
        })
        .collect();
    out.sort();
    out
}

/// The whole patched source of each mutation `op` proposes at `line` (sorted, deduplicated).
pub(super) fn patched(src: &str, line: usize, op: Operator) -> Vec<String> {
    let parsed = Parsed::new(src);
    let mut out: Vec<String> = mutations_at_line(&parsed, line)
        .into_iter()
        .filter(|m| m.operator == op)
        .map(|m| Patch::single("m.py", m.edit).apply(src))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every candidate the family's operators propose on its fixture, line by line: `line N:
/// operator: description`, then the patched lines the edit spans (none for a deleted line).
fn render(family: &str) -> String {
    let family = FAMILIES.iter().find(|f| f.name == family).unwrap();
    let path = format!("{}/tests/fixtures/operators/{}.py", env!("CARGO_MANIFEST_DIR"), family.name);
    let src = std::fs::read_to_string(&path).unwrap();
    let parsed = Parsed::new(src.as_str());
    assert!(parsed.is_valid(), "{path} does not parse");
    let scope = FileScope::of(&parsed);
    let mut out = String::new();
    for line in 1..=src.lines().count() {
        for m in mutations_at_line_in(&parsed, &scope, line) {
            if !family.operators.contains(&m.operator) {
                continue;
            }
            writeln!(out, "line {line}: {}: {}", m.operator.name(), m.description).unwrap();
            let deletes_lines = m.edit.content.is_empty() && src[m.edit.range.clone()].ends_with('\n');
            let (start, end) = (m.edit.range.start, m.edit.range.start + m.edit.content.len());
            let patched = Patch::single("m.py", m.edit).apply(&src);
            if !deletes_lines {
                for text in lines_around(&patched, start, end).lines() {
                    writeln!(out, "    | {text}").unwrap();
                }
            }
        }
    }
    out
}

/// The whole lines of `text` that bytes `start..end` touch (the line of `start` when empty).
fn lines_around(text: &str, start: usize, end: usize) -> &str {
    let first = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let last_char = text[..end].char_indices().next_back().map_or(start, |(i, _)| i).max(start);
    let last = text[last_char..].find('\n').map_or(text.len(), |i| last_char + i);
    &text[first..last]
}

/// One snapshot test per family (a failure names the family), and the list they cover.
macro_rules! snapshot_tests {
    ($($family:ident),* $(,)?) => {
        const SNAPSHOTTED: &[&str] = &[$(stringify!($family)),*];
        $(
            #[test]
            fn $family() {
                let candidates = render(stringify!($family));
                insta::assert_snapshot!(stringify!($family), candidates);
            }
        )*
    };
}

snapshot_tests!(
    comparison, arithmetic, negation, off_by_one, arguments, names, literal, conditions, wrap, statements, returns,
    exceptions, yields, elements,
);

#[test]
fn every_family_has_a_snapshot() {
    let families: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    assert_eq!(families, SNAPSHOTTED);
}
