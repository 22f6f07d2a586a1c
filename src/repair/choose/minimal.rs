//! Minimal plausible patches: a patch whose change contains another plausible patch's change, token by token, is not chosen over it.

use crate::project::Project;
use crate::repair::candidate::{Candidate, CandidateId};
use std::collections::HashSet;
use std::ops::Range;

/// Byte ranges of the tokens of Python code (names and numbers, string literals,
/// operators of up to three characters, other characters one by one); whitespace skipped.
pub fn tokens(line: &str) -> Vec<Range<usize>> {
    const OPERATORS: [&str; 24] = [
        "**=", "//=", ">>=", "<<=", "...", "==", "!=", "<=", ">=", "->", "**", "//", "+=", "-=", "*=", "/=", "%=",
        "&=", "|=", "^=", ":=", "<<", ">>", "@=",
    ];
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c == b'"' || c == b'\'' {
            i = string_end(bytes, i);
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80) {
                i += 1;
            }
        } else {
            let op = OPERATORS.iter().find(|op| line[i..].starts_with(*op));
            i += op.map_or(1, |op| op.len());
            while !line.is_char_boundary(i) {
                i += 1;
            }
        }
        out.push(start..i);
    }
    out
}

/// The end of the string literal opening at `start` (the line's end when it is not closed).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Token edit distance (insertions and deletions) between two token lists.
fn distance(a: &[&str], b: &[&str]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diagonal + 1 } else { up.max(row[j]) };
            diagonal = up;
        }
    }
    a.len() + b.len() - 2 * row[b.len()]
}

/// The parts of three versions of a file that differ: each text without the lines all three
/// share at the start and at the end.
fn middles(texts: [&str; 3]) -> [&str; 3] {
    let common_prefix = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let common_suffix = |a: &str, b: &str| a.bytes().rev().zip(b.bytes().rev()).take_while(|(x, y)| x == y).count();
    let [o, a, b] = texts;
    let prefix = common_prefix(o, a).min(common_prefix(o, b));
    let prefix = o.as_bytes()[..prefix].iter().rposition(|&c| c == b'\n').map_or(0, |at| at + 1);
    let shortest = o.len().min(a.len()).min(b.len()) - prefix;
    let suffix = common_suffix(o, a).min(common_suffix(o, b)).min(shortest);
    let suffix = o.as_bytes()[o.len() - suffix..].iter().position(|&c| c == b'\n').map_or(0, |at| suffix - at);
    texts.map(|t| &t[prefix..t.len() - suffix])
}

fn words(text: &str) -> Vec<&str> {
    tokens(text).into_iter().map(|r| &text[r]).collect()
}

/// Whether `a` lies strictly between `original` and `b`: it makes part of `b`'s change and
/// nothing else (token distances add up, and `a` is neither end).
#[must_use]
pub fn between(original: &str, a: &str, b: &str) -> bool {
    let [o, a, b] = middles([original, a, b]);
    let (o, a, b) = (words(o), words(a), words(b));
    let (oa, ab, ob) = (distance(&o, &a), distance(&a, &b), distance(&o, &b));
    oa > 0 && ab > 0 && oa + ab == ob
}

/// The plausible candidates whose change contains another one's: the tests justify only
/// the smaller change, the rest is likelier to fit the tests than to fix the bug (a model's
/// `round(x * 100.0, 2)` where `round(x * 100, 1)` passes as well).
#[must_use]
pub fn superseded(project: &Project, plausible: &[&Candidate]) -> HashSet<CandidateId> {
    (plausible.iter()).filter(|b| plausible.iter().any(|a| contains(project, b, a))).map(|b| b.id).collect()
}

/// Whether `bigger`'s change contains `smaller`'s (both plausible patches of one file).
#[must_use]
pub fn contains(project: &Project, bigger: &Candidate, smaller: &Candidate) -> bool {
    let file = &bigger.patch.file;
    bigger.id != smaller.id
        && &smaller.patch.file == file
        && project.file(file).is_some_and(|f| between(f.parsed.text(), &smaller.patched_text, &bigger.patched_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<&str> {
        tokens(line).into_iter().map(|r| &line[r]).collect()
    }

    #[test]
    fn tokens_keep_strings_and_operators_whole() {
        assert_eq!(texts("x = f(a, 'b c') ** 2"), ["x", "=", "f", "(", "a", ",", "'b c'", ")", "**", "2"]);
        assert_eq!(
            texts("if n >= 0.5 and s != \"\\\"\":"),
            ["if", "n", ">=", "0", ".", "5", "and", "s", "!=", "\"\\\"\"", ":"]
        );
        assert_eq!(texts("    return"), ["return"]);
    }

    #[test]
    fn a_patch_between_the_original_and_another_makes_part_of_its_change() {
        let file = |line: &str| format!("def p(d, t):\n    d = min(d, t)\n{line}\n\n\ndef q():\n    pass\n");
        let original = file("    return round(d / t * 10, 1)");
        let small = file("    return round(d / t * 100, 1)");
        let more = file("    return round(d / t * 100.0, 2)");
        let other = file("    return round(d / t * 10, 1) * 10");
        assert!(between(&original, &small, &more));
        assert!(!between(&original, &more, &small));
        assert!(!between(&original, &other, &more) && !between(&original, &small, &other));
        assert!(!between(&original, &original, &more) && !between(&original, &more, &more), "neither end");
        let shipping = |line: &str| format!("def s():\n{line}\n    return total\n");
        assert!(between(
            &shipping("    total = round(sub + tax, 2)"),
            &shipping("    total = round(sub + tax + ship, 2)"),
            &shipping("    total = subtotal(items) + tax + ship")
        ));
    }

    #[test]
    fn a_plausible_candidate_is_superseded_only_by_one_inside_its_change() {
        use crate::patch::{Edit, Patch};
        use crate::repair::candidate::Provenance;
        let dir = tempfile::tempdir().unwrap();
        let text = "def p(d, t):\n    return round(d / t * 10, 1)\n";
        std::fs::write(dir.path().join("m.py"), text).unwrap();
        let project = Project::load(dir.path()).unwrap();
        let candidate = |id: usize, to: &str| {
            let at = text.find("round").unwrap();
            let patch = Patch::single("m.py", Edit::replacement(at..text.len() - 1, to));
            let patched_text = patch.apply(text);
            Candidate {
                id: CandidateId(id),
                patch,
                patched_text,
                source: Provenance::LanguageModel,
                line: 2,
                description: String::new(),
                score: 0.5,
                edit_size: 1,
                deleted_calls: 0,
                focus: None,
            }
        };
        let small = candidate(0, "round(d / t * 100, 1)");
        let more = candidate(1, "round(d / t * 100.0, 2)");
        let other = candidate(2, "round(d / t * 10, 1) * 10");
        let got = superseded(&project, &[&more, &small, &other]);
        assert_eq!(got, HashSet::from([CandidateId(1)]));
        assert!(superseded(&project, &[&more, &other]).is_empty());
        // A bigger change inherits the smaller one's anti-pattern; others keep theirs.
        use crate::repair::choose::overfit::{inherit, AntiPattern};
        let mut patterns = std::collections::HashMap::from([(CandidateId(0), vec![AntiPattern::Unnatural])]);
        inherit(&project, &[&more, &small, &other], &mut patterns);
        assert_eq!(patterns.get(&CandidateId(1)), Some(&vec![AntiPattern::ContainsFlagged]));
        assert_eq!(patterns.get(&CandidateId(0)), Some(&vec![AntiPattern::Unnatural]));
        assert!(patterns.get(&CandidateId(2)).is_none_or(Vec::is_empty));
    }
}
