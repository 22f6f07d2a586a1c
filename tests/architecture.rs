//! The crate's module graph has no cycles, and every module says what it is in one `//!` line.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file (`src/repair/lab.rs` → `repair::validate`, `mod.rs` → its folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// Paths written `crate::a::b`, `super::c` or `self::d` in the code before its tests.
fn paths_in(text: &str) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':') {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |i| at + i);
            out.push(code[at..end].split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
        }
    }
    out
}

/// The module a path names: the longest prefix that is a module of the crate.
fn resolve(modules: &BTreeSet<Vec<String>>, current: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut base, mut rest): (Vec<String>, &[String]) = (current.to_vec(), path);
    match rest.first().map(String::as_str) {
        Some("crate") => (base, rest) = (Vec::new(), &rest[1..]),
        Some("self") => rest = &rest[1..],
        _ => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
    }
    (1..=rest.len()).rev().map(|n| [base.clone(), rest[..n].to_vec()].concat()).find(|m| modules.contains(m))
}

/// The crate's module graph: an edge from each module to every module it names, except its
/// ancestors (a child may use its parent's items).
fn module_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let targets: BTreeSet<Vec<String>> = paths_in(&text)
            .iter()
            .filter_map(|p| resolve(&modules, &module, p))
            .filter(|t| !t.is_empty() && *t != module && !module.starts_with(t))
            .collect();
        graph.insert(module, targets);
    }
    graph
}

/// A cycle through `start`, if any (depth-first).
fn cycle_from(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>, start: &Vec<String>) -> Option<Vec<String>> {
    let mut stack = vec![(start.clone(), vec![start.join("::")])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                return Some([path.clone(), vec![start.join("::")]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [path.clone(), vec![next.join("::")]].concat()));
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = module_graph();
    assert!(graph.contains_key(&vec!["repair".to_string(), "search".to_string()]), "the graph sees the crate");
    let cycles: Vec<String> = graph.keys().filter_map(|m| cycle_from(&graph, m)).map(|c| c.join(" → ")).collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle_through_super_and_crate_paths() {
    let modules: BTreeSet<Vec<String>> =
        [vec!["a".to_string()], vec!["a".to_string(), "x".to_string()], vec!["a".to_string(), "y".to_string()]]
            .into_iter()
            .collect();
    let x = vec!["a".to_string(), "x".to_string()];
    let y = vec!["a".to_string(), "y".to_string()];
    let from_x = paths_in("use super::y::Thing;\nfn f() { crate::a::y::g(); }\n#[cfg(test)]\nuse crate::z;");
    assert_eq!(from_x.len(), 2, "test code is left out: {from_x:?}");
    assert_eq!(resolve(&modules, &x, &from_x[0]), Some(y.clone()));
    let graph = BTreeMap::from([(x.clone(), BTreeSet::from([y.clone()])), (y.clone(), BTreeSet::from([x.clone()]))]);
    assert_eq!(cycle_from(&graph, &x), Some(vec!["a::x".into(), "a::y".into(), "a::x".into()]));
}

#[test]
fn every_module_opens_with_one_line_that_says_what_it_is() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let missing: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//! "))
        .map(|f| f.display().to_string())
        .collect();
    assert!(missing.is_empty(), "modules without a `//!` line: {missing:?}");
}
