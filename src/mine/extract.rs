//! Edited functions between two versions of one Python file, filtered by normalized code.

use crate::python::{functions, normalize_range, FunctionDef, LineSkeleton, Parsed};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// One function whose normalized code changed between the two file versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionEdit {
    /// Qualified name, e.g. `Shape.area`.
    pub function: String,
    pub class: Option<String>,
    /// 1-based first line of the function (decorators included) before and after.
    pub before_line: usize,
    pub after_line: usize,
    pub before: String,
    pub after: String,
    /// Skeleton of the file before the edit with the function marked.
    pub context: String,
    /// Hash of the normalized (before, after) pair, used for deduplication.
    pub pair_hash: u64,
}

/// Counts from comparing one file's two versions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileEditStats {
    /// Functions present in both versions whose source text differs.
    pub functions_edited: u64,
    /// Of those, edits that vanish after normalization (comments, literals, whitespace).
    pub trivial_edits: u64,
}

/// Functions present in both versions (matched by qualified name and occurrence) whose
/// normalized code differs. `context_bytes` bounds each skeleton.
///
/// Only the top-level statements and class members whose text changed are parsed (see
/// [`units`]); if one of them does not parse on its own, both whole files are parsed.
#[must_use]
pub fn edited_functions(before: &str, after: &str, context_bytes: usize) -> (Vec<FunctionEdit>, FileEditStats) {
    let mut stats = FileEditStats::default();
    let (before_chunks, after_chunks) = changed_chunks(before, after);
    // A function can only be matched if a function of the same name changed on the other
    // side too: units without such a `def` need no parse.
    let before_names = def_names_in(before, &before_chunks);
    let after_names = def_names_in(after, &after_chunks);
    let before_side = Side::chunked(before, &before_chunks, &after_names);
    let after_side = Side::chunked(after, &after_chunks, &before_names);
    let (before_side, after_side) = match (before_side, after_side) {
        (Some(b), Some(a)) => (b, a),
        _ => {
            let before_parsed = Parsed::new(before);
            let after_parsed = before_parsed.reparse(after);
            (Side::whole(before_parsed), Side::whole(after_parsed))
        }
    };

    // Overloads and conditional definitions repeat a name: match the k-th with the k-th.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in before_side.functions.iter().enumerate() {
        by_name.entry(f.def.qualname.as_str()).or_default().push(i);
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut skeleton: Option<LineSkeleton<'_>> = None;
    let mut edits = Vec::new();
    for after_fn in &after_side.functions {
        let qualname = after_fn.def.qualname.as_str();
        let occurrence = seen.entry(qualname).or_insert(0);
        let k = *occurrence;
        *occurrence += 1;
        let Some(&bi) = by_name.get(qualname).and_then(|v| v.get(k)) else {
            continue;
        };
        let before_fn = &before_side.functions[bi];
        let before_text = &before[before_fn.def.byte_range.clone()];
        let after_text = &after[after_fn.def.byte_range.clone()];
        if before_text == after_text {
            continue;
        }
        stats.functions_edited += 1;
        let before_norm = before_side.normalize(before_fn);
        let after_norm = after_side.normalize(after_fn);
        if before_norm == after_norm {
            stats.trivial_edits += 1;
            continue;
        }
        let skeleton = skeleton.get_or_insert_with(|| LineSkeleton::new(before));
        let context = skeleton.render(before_fn.def.start_line, before_fn.def.class.as_deref(), context_bytes);
        edits.push(FunctionEdit {
            function: after_fn.def.qualname.clone(),
            class: after_fn.def.class.clone(),
            before_line: before_fn.def.start_line,
            after_line: after_fn.def.start_line,
            before: before_text.to_string(),
            after: after_text.to_string(),
            context,
            pair_hash: pair_hash(&before_norm, &after_norm),
        });
    }
    (edits, stats)
}

/// A function found in one parsed piece of a file.
struct Located {
    /// Byte range and lines relative to the whole file.
    def: FunctionDef,
    piece: usize,
    /// Byte range inside the piece.
    local: Range<usize>,
}

/// The parsed parts of one version of a file and the functions in them.
struct Side {
    pieces: Vec<Parsed>,
    functions: Vec<Located>,
}

impl Side {
    fn whole(parsed: Parsed) -> Side {
        let functions = functions(&parsed)
            .into_iter()
            .map(|def| Located { local: def.byte_range.clone(), def, piece: 0 })
            .collect();
        Side { pieces: vec![parsed], functions }
    }

    /// Parse each unit on its own; `None` if one has a syntax error (a bad split, such
    /// as a column-0 line inside a string, or a real error).
    /// Units none of whose `def` names is in `other_names` are skipped.
    fn chunked(text: &str, units: &[Unit], other_names: &HashSet<&str>) -> Option<Side> {
        let mut side = Side { pieces: Vec::with_capacity(units.len()), functions: Vec::new() };
        for unit in units {
            let body = &text[unit.chunk.bytes.clone()];
            if !def_names(body).any(|name| other_names.contains(name)) {
                continue;
            }
            // A class member is parsed inside a stand-in class, keeping its indentation.
            let (parsed, prefix_len, prefix_lines) = match &unit.class {
                None => (Parsed::new(body), 0, 0),
                Some(_) => (Parsed::new(format!("{MEMBER_PREFIX}{body}")), MEMBER_PREFIX.len(), 1),
            };
            if !parsed.is_valid() {
                return None;
            }
            for mut def in functions(&parsed) {
                let local = def.byte_range.clone();
                let start = unit.chunk.bytes.start + local.start - prefix_len;
                def.byte_range = start..start + local.len();
                def.start_line = def.start_line + unit.chunk.first_line - prefix_lines;
                def.end_line = def.end_line + unit.chunk.first_line - prefix_lines;
                if let Some(class) = &unit.class {
                    if let Some(rest) = def.qualname.strip_prefix("_.") {
                        def.qualname = format!("{class}.{rest}");
                    }
                    if def.class.as_deref() == Some("_") {
                        def.class = Some(class.clone());
                    }
                }
                side.functions.push(Located { def, piece: side.pieces.len(), local });
            }
            side.pieces.push(parsed);
        }
        Some(side)
    }

    fn normalize(&self, function: &Located) -> String {
        normalize_range(&self.pieces[function.piece], function.local.clone())
    }
}

/// A top-level statement, with the comments and blank lines after it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    bytes: Range<usize>,
    /// 0-based line of its first byte.
    first_line: usize,
}

/// Names following the `def` keyword in `text` (a superset of the functions defined: it
/// also picks up `def` inside strings and comments, which only costs a parse).
fn def_names(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("def ").filter_map(move |(i, _)| {
        let boundary = text[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let rest = text[i + 4..].trim_start_matches([' ', '\t']);
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        (boundary && end > 0).then(|| &rest[..end])
    })
}

fn def_names_in<'t>(text: &'t str, units: &[Unit]) -> HashSet<&'t str> {
    units.iter().flat_map(|u| def_names(&text[u.chunk.bytes.clone()])).collect()
}

/// Stand-in class header that makes an indented class member parse on its own.
const MEMBER_PREFIX: &str = "class _:\n";

/// A piece of a file parsed on its own: a top-level statement, or one member of a
/// top-level class (then `class` names the class).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    chunk: Chunk,
    class: Option<String>,
}

/// Split a file into units: top-level statements, with classes split into members.
/// The class header (decorators, `class` line, up to the first member) is not a unit:
/// it holds no function definitions.
fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    for chunk in split_lines(text, 0, "", 0) {
        let Some((name, body_start, body_line, indent)) = class_body(text, &chunk) else {
            out.push(Unit { chunk, class: None });
            continue;
        };
        for member in split_lines(&text[..chunk.bytes.end], body_start, indent, body_line) {
            out.push(Unit { chunk: member, class: Some(name.to_string()) });
        }
    }
    out
}

/// For a chunk that is a class with an indented body: its name, the byte and line where
/// the body starts, and the body's indentation.
fn class_body<'t>(text: &'t str, chunk: &Chunk) -> Option<(&'t str, usize, usize, &'t str)> {
    let chunk_text = &text[chunk.bytes.clone()];
    let mut offset = chunk.bytes.start;
    let mut lines = chunk_text.split_inclusive('\n').enumerate();
    let name = loop {
        let (_, line) = lines.next()?;
        offset += line.len();
        if let Some(rest) = line.strip_prefix("class ") {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if !line.trim_end().ends_with(':') || end == 0 {
                return None;
            }
            break &rest[..end];
        }
        if !line.starts_with('@') {
            return None;
        }
    };
    for (i, line) in lines {
        let content = line.trim_start_matches([' ', '\t']);
        if content.trim().is_empty() || content.starts_with('#') {
            offset += line.len();
            continue;
        }
        let indent = &line[..line.len() - content.len()];
        let first_line = chunk.first_line + i;
        return (!indent.is_empty()).then_some((name, offset, first_line, indent));
    }
    None
}

/// Split `text[start..]` at lines that begin a statement at exactly `indent`: not a
/// closing bracket, a continuation clause (`else`, `elif`, `except`, `finally`) or the
/// definition under a decorator. `first_line` is the line number of `start`.
fn split_lines(text: &str, start: usize, indent: &str, first_line: usize) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut offset = start;
    let mut in_decorators = false;
    let mut in_string: Option<&str> = None;
    let mut depth: i64 = 0;
    for (i, line) in text[start..].split_inclusive('\n').enumerate() {
        // Lines inside triple-quoted strings (docstrings) never start a statement; an odd
        // count of a delimiter opens or closes one.
        let odd =
            |delim: &&str| line.as_bytes().contains(&delim.as_bytes()[0]) && line.matches(*delim).count() % 2 == 1;
        if let Some(delim) = in_string {
            if odd(&delim) {
                in_string = None;
            }
            offset += line.len();
            continue;
        }
        in_string = ["\"\"\"", "'''"].into_iter().find(odd);
        // Lines inside brackets continue the statement that opened them.
        let inside_brackets = depth > 0;
        if in_string.is_none() {
            depth = (depth + bracket_change(line)).max(0);
        }
        let starts = !inside_brackets
            && line.strip_prefix(indent).is_some_and(|code| match code.as_bytes().first() {
                None | Some(b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'#' | b')' | b']' | b'}') => false,
                Some(_) => !["else", "elif", "except", "finally"].iter().any(|kw| {
                    code.strip_prefix(kw)
                        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
                }),
            });
        if starts && !in_decorators && offset > start {
            if let Some(last) = chunks.last_mut() {
                last.bytes.end = offset;
            }
            chunks.push(Chunk { bytes: offset..offset, first_line: first_line + i });
        } else if chunks.is_empty() {
            chunks.push(Chunk { bytes: start..start, first_line });
        }
        if starts {
            in_decorators = line[indent.len()..].starts_with('@');
        }
        offset += line.len();
    }
    if let Some(last) = chunks.last_mut() {
        last.bytes.end = text.len();
    }
    chunks
}

/// Net count of opening minus closing brackets on `line`, outside of single-line string
/// literals and comments (triple-quoted strings are handled by the caller).
fn bracket_change(line: &str) -> i64 {
    let bytes = line.as_bytes();
    if !bytes.iter().any(|b| matches!(b, b'(' | b'[' | b'{' | b')' | b']' | b'}')) {
        return 0;
    }
    let mut change = 0;
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'#' => break,
                b'\'' | b'"' => quote = Some(b),
                b'(' | b'[' | b'{' => change += 1,
                b')' | b']' | b'}' => change -= 1,
                _ => {}
            },
        }
        i += 1;
    }
    change
}

/// Top-level statements of `text` (see [`split_lines`]).
#[cfg(test)]
fn top_level_chunks(text: &str) -> Vec<Chunk> {
    split_lines(text, 0, "", 0)
}

/// The units of each version whose text (and class) does not occur in the other version.
fn changed_chunks(before: &str, after: &str) -> (Vec<Unit>, Vec<Unit>) {
    let before_units = units(before);
    let after_units = units(after);
    let only_in = |text: &str, units: &[Unit], other: &str, other_units: &[Unit]| -> Vec<Unit> {
        let mut available: HashMap<(Option<&str>, &str), usize> = HashMap::new();
        for u in other_units {
            *available.entry((u.class.as_deref(), &other[u.chunk.bytes.clone()])).or_default() += 1;
        }
        units
            .iter()
            .filter(|u| match available.get_mut(&(u.class.as_deref(), &text[u.chunk.bytes.clone()])) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .cloned()
            .collect()
    };
    (only_in(before, &before_units, after, &after_units), only_in(after, &after_units, before, &before_units))
}

/// FNV-1a 64 over `before`, a separator and `after`: stable across runs and platforms,
/// so checkpoints can restore the deduplication set from written rows.
#[must_use]
pub fn pair_hash(before: &str, after: &str) -> u64 {
    crate::hash::fnv1a(before.bytes().chain([0xff]).chain(after.bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "import os\n\nclass A:\n    def f(self):\n        return 1  # one\n\n    def g(self, x):\n        return x + 1\n\ndef h():\n    pass\n\ndef gone():\n    pass\n";

    #[test]
    fn only_functions_whose_normalized_code_changed_are_kept() {
        // f: comment and literal change only (trivial); g: real fix; h unchanged; gone deleted.
        let after = "import os\n\nclass A:\n    def f(self):\n        return 2\n\n    def g(self, x):\n        return x - 1\n\ndef h():\n    pass\n\ndef new():\n    pass\n";
        let (edits, stats) = edited_functions(BEFORE, after, 4096);
        assert_eq!(stats, FileEditStats { functions_edited: 2, trivial_edits: 1 });
        assert_eq!(edits.len(), 1);
        let g = &edits[0];
        assert_eq!(g.function, "A.g");
        assert_eq!(g.class.as_deref(), Some("A"));
        assert_eq!(g.before, "def g(self, x):\n        return x + 1");
        assert_eq!(g.after, "def g(self, x):\n        return x - 1");
        assert_eq!((g.before_line, g.after_line), (7, 7));
        assert!(g.context.contains("# target edit\n    def g(self, x): ...\n    # end"), "{}", g.context);
        assert!(g.context.starts_with("import os\n"), "{}", g.context);
    }

    #[test]
    fn moved_functions_match_by_name_and_same_fix_hashes_equal() {
        let after = "def h():\n    pass\n\nclass A:\n    def g(self, x):\n        return x - 1\n";
        let (edits, _) = edited_functions(BEFORE, after, 4096);
        assert_eq!(edits.len(), 1);
        assert_eq!((edits[0].before_line, edits[0].after_line), (7, 5));
        let spaced = "class A:\n    def g(self, x):\n        return x   -   1  # fixed\n";
        let (again, _) = edited_functions(BEFORE, spaced, 4096);
        assert_eq!(again[0].pair_hash, edits[0].pair_hash);
        assert_ne!(pair_hash("a", "b"), pair_hash("ab", ""));
    }

    #[test]
    fn top_level_chunks_keep_decorators_and_continuation_clauses_together() {
        let src = "import os\n# c\n@dec\n@dec2(1)\ndef f():\n    pass\n\ntry:\n    x = 1\nexcept E:\n    pass\nelse_value = 2\nfoo(\n1\n)\nclass A:\n    pass";
        let chunks = top_level_chunks(src);
        let texts: Vec<&str> = chunks.iter().map(|c| &src[c.bytes.clone()]).collect();
        assert_eq!(
            texts,
            [
                "import os\n# c\n",
                "@dec\n@dec2(1)\ndef f():\n    pass\n\n",
                "try:\n    x = 1\nexcept E:\n    pass\n",
                "else_value = 2\n",
                "foo(\n1\n)\n",
                "class A:\n    pass"
            ]
        );
        assert_eq!(chunks.iter().map(|c| c.first_line).collect::<Vec<_>>(), [0, 2, 7, 11, 12, 15]);
        assert_eq!(bracket_change("x = f(a, ')', [1,  # (\n"), 2);
        assert_eq!(bracket_change(r#"  "\"(" ]"#), -1);
    }

    #[test]
    fn edit_in_a_column_0_continuation_line_is_found() {
        let before = "def f():\n    x = [\na, b]\n    return x\n\ndef g():\n    pass\n";
        let after = "def f():\n    x = [\na, c]\n    return x\n\ndef g():\n    pass\n";
        let (edits, _) = edited_functions(before, after, 4096);
        assert_eq!(edits.iter().map(|e| e.function.as_str()).collect::<Vec<_>>(), ["f"]);
    }

    #[test]
    fn def_names_finds_definitions_but_not_identifiers_ending_in_def() {
        let names: Vec<&str> = def_names("def a():\n    async def  b_2(x): undef c\n    x = 'def d'\n").collect();
        assert_eq!(names, ["a", "b_2", "d"]);
    }

    #[test]
    fn lines_inside_docstrings_do_not_split_chunks() {
        let src = "'''Module.\nUsage: x\n'''\nclass A:\n    \"\"\"Doc.\n\n    Example::\n    \"\"\"\n    def f(self):\n        pass\n";
        let texts: Vec<&str> = top_level_chunks(src).iter().map(|c| &src[c.bytes.clone()]).collect();
        assert_eq!(texts, ["'''Module.\nUsage: x\n'''\n", &src[src.find("class").unwrap()..]]);
        let members: Vec<&str> =
            units(src).iter().filter(|u| u.class.is_some()).map(|u| &src[u.chunk.bytes.clone()]).collect();
        assert_eq!(members, ["    \"\"\"Doc.\n\n    Example::\n    \"\"\"\n", "    def f(self):\n        pass\n"]);
    }

    #[test]
    fn chunked_and_whole_file_extraction_agree_even_when_a_chunk_does_not_parse_alone() {
        // The changed Python 2 `print` chunk has a syntax error, so both whole files are
        // parsed instead, with the same result as parsing only the changed chunks.
        let before =
            "import os\nprint 'a'\n\ndef a():\n    return 1\n\nclass K:\n    def m(self):\n        return os.sep\n";
        let after = "import os\nprint 'b'\n\ndef a():\n    return 2 + a\n\nclass K:\n    def m(self):\n        return os.pathsep\n";
        let (edits, stats) = edited_functions(before, after, 4096);
        assert_eq!(stats, FileEditStats { functions_edited: 2, trivial_edits: 0 });
        let got: Vec<_> = edits.iter().map(|e| (e.function.as_str(), e.before_line, e.after_line)).collect();
        assert_eq!(got, [("a", 4, 4), ("K.m", 8, 8)]);
        assert!(edits[1].context.contains("# target edit\n    def m(self): ..."), "{}", edits[1].context);
        // Without the `print` change only the two changed chunks are parsed.
        let (chunked, _) = edited_functions(before, &after.replace("print 'b'", "print 'a'"), 4096);
        assert_eq!(chunked, edits);
    }
}
