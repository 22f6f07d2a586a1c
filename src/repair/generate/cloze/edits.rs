//! Smaller edits inside a language-model line: each change of a rewrite on its own, and its additions without its deletions.

use crate::repair::choose::minimal::tokens;
use std::ops::Range;

/// At most this many smaller rewrites per sampled line.
const MAX_PARTS: usize = 6;

/// One change between two lines: the tokens it replaces in the old line and those it puts
/// there, as byte positions: `old`/`new` run from the end of the last common token before it
/// to the start of the first common token after it; `added_end` is where the new tokens end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    old: Range<usize>,
    new: Range<usize>,
    added_end: usize,
    deletes: bool,
    adds: bool,
}

/// The changes from `old` to `new`, by a longest common subsequence of their tokens.
fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let (a, b) = (tokens(old), tokens(new));
    let same = |i: usize, j: usize| old[a[i].clone()] == new[b[j].clone()];
    // lcs[i][j]: common tokens of a[i..] and b[j..].
    let mut lcs = vec![vec![0u16; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if same(i, j) { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut old_at, mut new_at) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && same(i, j) {
            (old_at, new_at) = (a[i].end, b[j].end);
            (i, j) = (i + 1, j + 1);
            continue;
        }
        let (i0, j0) = (i, j);
        while (i < a.len() || j < b.len()) && !(i < a.len() && j < b.len() && same(i, j)) {
            if j == b.len() || (i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1]) {
                i += 1;
            } else {
                j += 1;
            }
        }
        let old_end = a.get(i).map_or(old.len(), |t| t.start);
        let new_end = b.get(j).map_or(new.len(), |t| t.start);
        let added_end = if j > j0 { b[j - 1].end } else { new_at };
        out.push(Hunk { old: old_at..old_end, new: new_at..new_end, added_end, deletes: i > i0, adds: j > j0 });
    }
    out
}

/// Smaller rewrites of `old` found in the model's rewrite `new`: when the rewrite makes
/// several changes, each change alone; and each change that both deletes and adds tokens,
/// with its additions only (the rewrite `total = sub + tax + ship` of
/// `total = round(sub + tax, 2)` contains `total = round(sub + tax + ship, 2)`). The model often
/// rewrites more of a line than the bug needs; a smaller edit keeps what the code meant.
pub(super) fn partial_rewrites(old: &str, new: &str) -> Vec<String> {
    let hunks = hunks(old, new);
    let mut out: Vec<String> = Vec::new();
    let mut push = |line: String| {
        if line != old && line != new && !out.contains(&line) && out.len() < MAX_PARTS {
            out.push(line);
        }
    };
    for h in &hunks {
        if hunks.len() > 1 {
            push(format!("{}{}{}", &old[..h.old.start], &new[h.new.clone()], &old[h.old.end..]));
        }
        if h.deletes && h.adds && appends(&new[h.new.start..h.added_end]) {
            let added = &new[h.new.start..h.added_end];
            let glue =
                if old[h.old.start..].starts_with(char::is_whitespace) || added.ends_with(' ') { "" } else { " " };
            let glue = if old[h.old.start..].trim_start().starts_with([',', ')', ']', '}', ':']) { "" } else { glue };
            push(format!("{}{added}{glue}{}", &old[..h.old.start], &old[h.old.start..]));
        }
    }
    out
}

/// Whether added text starts with a binary operator, a comma or a dot: it extends what stands
/// before it (an operand, an argument, an attribute) rather than replacing it.
fn appends(added: &str) -> bool {
    const JOINERS: [&str; 16] = ["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "and", "or", ",", ".", "if"];
    tokens(added).first().is_some_and(|t| JOINERS.contains(&&added[t.clone()]))
}

/// Whether a statement ends its block: whatever follows it at its indentation never runs.
pub(super) fn is_terminal(code: &str) -> bool {
    ["return", "raise", "continue", "break"].iter().any(|keyword| {
        code.strip_prefix(keyword)
            .is_some_and(|rest| rest.is_empty() || !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    })
}

/// Whether a line holds a whole simple statement (no block header, no continuation).
pub(super) fn is_simple_statement(code: &str) -> bool {
    let code = code.trim_end();
    !code.is_empty()
        && !code.starts_with(['@', '#'])
        && !code.ends_with([':', '\\', '(', '[', '{', ','])
        && tokens(code).iter().fold(0i32, |depth, t| match &code[t.clone()] {
            "(" | "[" | "{" => depth + 1,
            ")" | "]" | "}" => depth - 1,
            _ => depth,
        }) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_gives_each_change_alone_and_additions_without_deletions() {
        let old = "    total = round(sub + tax, 2)";
        let parts = partial_rewrites(old, "    total = sub + tax + ship");
        assert!(parts.contains(&"    total = round(sub + tax + ship, 2)".to_string()), "{parts:?}");
        let parts = partial_rewrites("    return a * 10 + b", "    return a * 100 + c");
        assert_eq!(parts, ["    return a * 100 + b", "    return a * 10 + c"]);
        assert!(partial_rewrites("    return x", "    return y").is_empty(), "one change is the rewrite itself");
        let parts = partial_rewrites("    s = xs[i]", "    s = xs[i].strip()");
        assert!(parts.is_empty(), "an insertion alone is the rewrite itself: {parts:?}");
    }

    #[test]
    fn terminal_statements_and_simple_lines_are_recognized() {
        assert!(is_terminal("return round(x, 1)") && is_terminal("raise") && is_terminal("break"));
        assert!(!is_terminal("returned = 1") && !is_terminal("print(x)"));
        assert!(is_simple_statement("return round(done / total * 10, 1)"));
        assert!(
            !is_simple_statement("if x:") && !is_simple_statement("return f(a,") && !is_simple_statement("@property")
        );
    }
}
