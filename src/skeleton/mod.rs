//! Code skeletons (DeepDebug §4.5): the focal function book-ended by `# target edit`/`# end`,
//! then as much of the rest of the file as a token budget allows, in priority order.

use crate::model::data::{TARGET_EDIT, TARGET_END};
use crate::python::skeleton::{outline, Span};
use crate::python::{functions, FunctionDef, Parsed};
use std::collections::BTreeSet;

/// Default skeleton budget (tokens) and trace budget, as in the paper.
pub const DEFAULT_BUDGET: usize = 1024;
pub const DEFAULT_TRACE_BUDGET: usize = 896;

/// Errors building a skeleton.
#[derive(Debug, thiserror::Error)]
pub enum SkeletonError {
    #[error("no function named `{0}` in the file")]
    NoSuchFunction(String),
    #[error("`{name}` is ambiguous ({count} definitions); use the qualified name (e.g. Class.method)")]
    Ambiguous { name: String, count: usize },
}

/// The priority classes, highest first. Also what a skeleton reports it included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    Focal,
    FocalClass,
    Imports,
    ClassDocAndAttributes,
    Globals,
    Signatures,
    Docstrings,
    Bodies,
}

/// A rendered skeleton.
#[derive(Debug, Clone)]
pub struct Skeleton {
    pub text: String,
    /// Tokens of `text` by the counter used to build it.
    pub tokens: usize,
    /// The focal function alone exceeded the budget (it is always included whole).
    pub over_budget: bool,
    /// Pieces that were added, with their part, in the order they were added.
    pub added: Vec<Part>,
}

/// Find a function by qualified name (`Class.method`) or, if unique, bare name.
///
/// # Errors
/// When nothing or several functions match.
pub fn find_function(parsed: &Parsed, name: &str) -> Result<FunctionDef, SkeletonError> {
    let defs = functions(parsed);
    if let Some(def) = defs.iter().find(|d| d.qualname == name) {
        return Ok(def.clone());
    }
    let matches: Vec<&FunctionDef> = defs.iter().filter(|d| d.name == name).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(SkeletonError::NoSuchFunction(name.to_string())),
        many => Err(SkeletonError::Ambiguous { name: name.to_string(), count: many.len() }),
    }
}

/// Build the skeleton of `parsed` around `focal` within `budget` tokens as counted by `count`.
/// Pieces are whole lines, so the total is the sum of per-line counts (exact for tokenizers
/// that never merge across a newline, as [`crate::model::CodeTokenizer`]).
#[must_use]
pub fn build(parsed: &Parsed, focal: &FunctionDef, budget: usize, count: &dyn Fn(&str) -> usize) -> Skeleton {
    let text = parsed.text();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let line_text = |i: usize| -> String {
        let l = lines.get(i).copied().unwrap_or("");
        if l.ends_with('\n') {
            l.to_string()
        } else {
            format!("{l}\n")
        }
    };
    let cost: Vec<usize> = (0..lines.len()).map(|i| count(&line_text(i))).collect();
    let outline = outline(parsed);
    let focal_span =
        Span { first: focal.start_line - 1, last: (focal.end_line - 1).min(lines.len().saturating_sub(1)) };

    let mut selected: BTreeSet<usize> = BTreeSet::new();
    let mut added = Vec::new();
    let markers = count(&format!("{TARGET_EDIT}\n")) + count(&format!("{TARGET_END}\n"));
    let mut used = markers + focal_span.lines().map(|i| cost[i]).sum::<usize>();
    selected.extend(focal_span.lines());
    added.push(Part::Focal);
    let over_budget = used > budget;

    // Add a piece (a set of spans) when its not-yet-selected lines fit.
    let offer =
        |spans: &[Span], part: Part, selected: &mut BTreeSet<usize>, used: &mut usize, added: &mut Vec<Part>| {
            let new: BTreeSet<usize> =
                spans.iter().flat_map(|s| s.lines()).filter(|l| !selected.contains(l) && *l < lines.len()).collect();
            if new.is_empty() {
                return;
            }
            let c: usize = new.iter().map(|&l| cost[l]).sum();
            if *used + c <= budget {
                *used += c;
                selected.extend(new);
                added.push(part);
            }
        };

    // Enclosing classes of the focal function, innermost last.
    let focal_classes: Vec<usize> = (0..outline.classes.len())
        .filter(|&c| {
            outline.classes[c].whole.contains(focal_span.first) && !focal_span.contains(outline.classes[c].header.first)
        })
        .collect();
    let class_headers = |c: Option<usize>| -> Vec<Span> {
        // A class header plus the headers of the classes enclosing it.
        match c {
            None => Vec::new(),
            Some(c) => (0..outline.classes.len())
                .filter(|&o| outline.classes[o].whole.contains(outline.classes[c].header.first))
                .map(|o| outline.classes[o].header)
                .collect(),
        }
    };
    for &c in &focal_classes {
        offer(&[outline.classes[c].header], Part::FocalClass, &mut selected, &mut used, &mut added);
    }
    for &s in &outline.imports {
        offer(&[s], Part::Imports, &mut selected, &mut used, &mut added);
    }
    if let Some(&c) = focal_classes.last() {
        let class = &outline.classes[c];
        if let Some(doc) = class.docstring {
            offer(&[doc], Part::ClassDocAndAttributes, &mut selected, &mut used, &mut added);
        }
        for &a in &class.attributes {
            offer(&[a], Part::ClassDocAndAttributes, &mut selected, &mut used, &mut added);
        }
    }
    for &g in &outline.globals {
        offer(&[g], Part::Globals, &mut selected, &mut used, &mut added);
    }
    let focal_class = focal_classes.last().copied();
    let others: Vec<usize> = {
        let mut v: Vec<usize> = (0..outline.functions.len())
            .filter(|&f| {
                outline.functions[f].whole != focal_span && !focal_span.contains(outline.functions[f].header.first)
            })
            .collect();
        // Methods of the focal class first, then file order.
        v.sort_by_key(|&f| (focal_class.is_none() || outline.functions[f].class != focal_class, f));
        v
    };
    for &f in &others {
        let func = &outline.functions[f];
        let mut spans = class_headers(func.class);
        spans.push(func.header);
        offer(&spans, Part::Signatures, &mut selected, &mut used, &mut added);
    }
    for (c, class) in outline.classes.iter().enumerate() {
        if Some(c) != focal_class {
            if let Some(doc) = class.docstring {
                let mut spans = class_headers(Some(c));
                spans.push(doc);
                offer(&spans, Part::Docstrings, &mut selected, &mut used, &mut added);
            }
        }
    }
    for &f in &others {
        let func = &outline.functions[f];
        if let Some(doc) = func.docstring {
            let mut spans = class_headers(func.class);
            spans.extend([func.header, doc]);
            offer(&spans, Part::Docstrings, &mut selected, &mut used, &mut added);
        }
    }
    for &f in &others {
        let func = &outline.functions[f];
        if let Some(body) = func.body {
            let mut spans = class_headers(func.class);
            spans.extend([func.header, body]);
            spans.extend(func.docstring);
            offer(&spans, Part::Bodies, &mut selected, &mut used, &mut added);
        }
    }

    let mut out = String::new();
    for &l in &selected {
        if l == focal_span.first {
            out.push_str(TARGET_EDIT);
            out.push('\n');
        }
        out.push_str(&line_text(l));
        if l == focal_span.last {
            out.push_str(TARGET_END);
            out.push('\n');
        }
    }
    Skeleton { text: out, tokens: used, over_budget, added }
}

/// Append a trace (e.g. pytest's failure output) after `skeleton` within `budget` tokens,
/// keeping its last lines (the error is at the end).
#[must_use]
pub fn append_trace(skeleton: &str, trace: &str, budget: usize, count: &dyn Fn(&str) -> usize) -> String {
    let header = "# trace\n";
    let mut used = count(header);
    let mut kept: Vec<String> = Vec::new();
    for line in trace.lines().rev() {
        let l = format!("{line}\n");
        let c = count(&l);
        if used + c > budget {
            break;
        }
        used += c;
        kept.push(l);
    }
    if kept.is_empty() {
        return skeleton.to_string();
    }
    kept.reverse();
    format!("{skeleton}{header}{}", kept.concat())
}

/// Rough token count for when no tokenizer is at hand: about four bytes per token.
#[must_use]
pub fn approximate_count(text: &str) -> usize {
    text.len().div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "import os\nimport sys\n\nLIMIT = 10\n\nclass Cursor:\n    \"\"\"A cursor.\"\"\"\n    kind = 'db'\n\n    def execute(self, q):\n        \"\"\"Run q.\"\"\"\n        return self.run(q)\n\n    def fetchone(self):\n        return self.fetch(1)\n\ndef helper(x):\n    \"\"\"Help.\"\"\"\n    return x + LIMIT\n";

    fn words(s: &str) -> usize {
        s.split_whitespace().count() + 1
    }

    #[test]
    fn focal_function_is_marked_and_priorities_are_respected() {
        let parsed = Parsed::new(SRC);
        let focal = find_function(&parsed, "fetchone").unwrap();
        let big = build(&parsed, &focal, 10_000, &words);
        assert!(
            big.text.contains("# target edit\n    def fetchone(self):\n        return self.fetch(1)\n# end\n"),
            "{}",
            big.text
        );
        assert!(big.text.contains("return x + LIMIT"));
        assert_eq!(big.tokens, big.text.split_inclusive('\n').map(words).sum::<usize>());
        // A budget that fits the focal function, class header and imports only.
        let small_budget = [
            "# target edit\n",
            "    def fetchone(self):\n",
            "        return self.fetch(1)\n",
            "# end\n",
            "class Cursor:\n",
            "import os\n",
            "import sys\n",
        ]
        .iter()
        .map(|l| words(l))
        .sum();
        let small = build(&parsed, &focal, small_budget, &words);
        assert_eq!(small.text, "import os\nimport sys\nclass Cursor:\n# target edit\n    def fetchone(self):\n        return self.fetch(1)\n# end\n");
        assert_eq!(small.tokens, small_budget);
        assert!(!small.over_budget);
        let tiny = build(&parsed, &focal, 1, &words);
        assert!(tiny.over_budget);
        assert_eq!(tiny.added, [Part::Focal]);
    }

    #[test]
    fn signatures_come_before_bodies_and_traces_keep_the_tail() {
        let parsed = Parsed::new(SRC);
        let focal = find_function(&parsed, "Cursor.fetchone").unwrap();
        let full = build(&parsed, &focal, 10_000, &words);
        let sig_budget = full.tokens - words("        return x + LIMIT\n") - words("        return self.run(q)\n");
        let s = build(&parsed, &focal, sig_budget, &words);
        assert!(s.text.contains("def helper(x):") && s.text.contains("def execute(self, q):"), "{}", s.text);
        assert!(!s.text.contains("return x + LIMIT") && !s.text.contains("self.run(q)"), "{}", s.text);
        let with = append_trace(
            "S\n",
            "a b c\nd e\nE: boom\n",
            words("# trace\n") + words("d e\n") + words("E: boom\n"),
            &words,
        );
        assert_eq!(with, "S\n# trace\nd e\nE: boom\n");
        assert!(matches!(find_function(&parsed, "nope"), Err(SkeletonError::NoSuchFunction(_))));
    }
}
