//! Incremental re-parsing: parse an edited version of a file reusing the unchanged subtrees.

use super::Parsed;
use similar::{Algorithm, DiffTag, TextDiff};
use std::time::{Duration, Instant};
use tree_sitter::{InputEdit, Parser, Point};

/// Line diffs slower than this fall back to coarser (still correct) edits.
const DIFF_DEADLINE: Duration = Duration::from_millis(20);

impl Parsed {
    /// Parse `new_text`, an edited version of this file. Gives the same tree as
    /// [`Parsed::new`] but reuses the subtrees the line diff leaves untouched, which is
    /// several times faster for small edits.
    #[must_use]
    pub fn reparse(&self, new_text: impl Into<String>) -> Parsed {
        let new_text = new_text.into();
        let edits = line_edits(&self.text, &new_text);
        // Cheap insurance against diff quirks: wrong edits would give a wrong tree.
        if splice(&self.text, &edits, &new_text) != new_text {
            return Parsed::new(new_text);
        }
        let mut old_tree = self.tree.clone();
        for edit in &edits {
            old_tree.edit(edit);
        }
        let tree = parse_reusing(&new_text, &old_tree);
        Parsed { text: new_text, tree }
    }
}

impl Parsed {
    /// Parse the result of replacing each `(range, content)` of this file (ranges sorted and
    /// disjoint, in this file's bytes), reusing the unchanged subtrees: unlike
    /// [`Parsed::reparse`] no diff is needed, so the cost follows the size of the edits, not
    /// of the file. `new_text` must be that result.
    #[must_use]
    pub fn with_edits(&self, edits: &[(std::ops::Range<usize>, &str)], new_text: String) -> Parsed {
        let mut tree = self.tree.clone();
        // Last edit first: the coordinates of the earlier ones stay those of this file.
        for (range, content) in edits.iter().rev() {
            let start_position = point_at(&self.text, range.start);
            tree.edit(&InputEdit {
                start_byte: range.start,
                old_end_byte: range.end,
                new_end_byte: range.start + content.len(),
                start_position,
                old_end_position: advance(start_position, &self.text[range.clone()]),
                new_end_position: advance(start_position, content),
            });
        }
        let tree = parse_reusing(&new_text, &tree);
        Parsed { text: new_text, tree }
    }
}

/// Parse `text` reusing the unchanged subtrees of `old`, already edited to match it.
fn parse_reusing(text: &str, old: &tree_sitter::Tree) -> tree_sitter::Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python grammar is compatible with the linked tree-sitter");
    parser.parse(text, Some(old)).expect("parser has a language and no timeout, so it always returns a tree")
}

/// Row and byte column of byte `at` of `text`.
fn point_at(text: &str, at: usize) -> Point {
    let before = &text.as_bytes()[..at];
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    Point { row: memchr::memchr_iter(b'\n', before).count(), column: at - line_start }
}

/// `old` with each edit's range replaced by the matching bytes of `new`, in order.
fn splice(old: &str, edits: &[InputEdit], new: &str) -> String {
    let mut text = old.to_string();
    for e in edits {
        let (Some(replacement), true) = (new.get(e.start_byte..e.new_end_byte), e.old_end_byte <= text.len()) else {
            return String::new();
        };
        if !text.is_char_boundary(e.start_byte) || !text.is_char_boundary(e.old_end_byte) {
            return String::new();
        }
        text.replace_range(e.start_byte..e.old_end_byte, replacement);
    }
    text
}

fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()));
    starts.push(text.len());
    starts
}

/// The point reached from `start` after the text `segment`.
fn advance(start: Point, segment: &str) -> Point {
    match segment.rfind('\n') {
        None => Point { row: start.row, column: start.column + segment.len() },
        Some(last) => Point { row: start.row + segment.matches('\n').count(), column: segment.len() - last - 1 },
    }
}

/// Edits turning `old` into `new`, one per changed hunk of a line diff, expressed in the
/// coordinates of the tree after the previous edits (so they apply in order).
fn line_edits(old: &str, new: &str) -> Vec<InputEdit> {
    let diff =
        TextDiff::configure().algorithm(Algorithm::Myers).deadline(Instant::now() + DIFF_DEADLINE).diff_lines(old, new);
    let (old_starts, new_starts) = (line_starts(old), line_starts(new));
    let byte = |starts: &[usize], line: usize| starts[line.min(starts.len() - 1)];
    let mut edits = Vec::new();
    // The new-side line of the next op. Tracked here because similar 2.7 can report a
    // wrong `new_index` for deletions; lengths and old-side ranges are reliable.
    let mut new_line = 0;
    for op in diff.ops() {
        let (tag, old_lines, new_lines) = op.as_tag_tuple();
        let new_range = new_line..new_line + new_lines.len();
        new_line = new_range.end;
        if tag == DiffTag::Equal {
            continue;
        }
        let start_byte = byte(&new_starts, new_range.start);
        let old_segment = &old[byte(&old_starts, old_lines.start)..byte(&old_starts, old_lines.end)];
        let new_segment = &new[start_byte..byte(&new_starts, new_range.end)];
        let start_position = advance(Point { row: 0, column: 0 }, &new[..start_byte]);
        edits.push(InputEdit {
            start_byte,
            old_end_byte: start_byte + old_segment.len(),
            new_end_byte: start_byte + new_segment.len(),
            start_position,
            old_end_position: advance(start_position, old_segment),
            new_end_position: advance(start_position, new_segment),
        });
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(old: &str, new: &str) {
        assert_eq!(splice(old, &line_edits(old, new), new), new);
        let reparsed = Parsed::new(old).reparse(new);
        assert_eq!(reparsed.text(), new);
        assert_eq!(reparsed.root().to_sexp(), Parsed::new(new).root().to_sexp(), "old:\n{old}\nnew:\n{new}");
        assert_eq!(reparsed.root().end_position(), Parsed::new(new).root().end_position());
    }

    #[test]
    fn exact_edits_give_the_tree_of_a_fresh_parse() {
        let base =
            "import os\n\nclass A:\n    def f(self):\n        return 1\n\n    def g(self, x):\n        return x + 1\n";
        let cases: [&[(&str, &str)]; 4] = [
            &[("x + 1", "x - 1")],
            &[("return 1", "if x:\n            return 2\n        return 1"), ("x + 1", "(x + 1)")],
            &[("import os\n", ""), ("class A:", "class A(object):  # é")],
            &[("def f(self):", "def f(self:")],
        ];
        for case in cases {
            let mut edits: Vec<(std::ops::Range<usize>, &str)> = case
                .iter()
                .map(|(from, to)| (base.find(from).unwrap()..base.find(from).unwrap() + from.len(), *to))
                .collect();
            edits.sort_by_key(|(r, _)| r.start);
            let mut new = base.to_string();
            for (range, to) in edits.iter().rev() {
                new.replace_range(range.clone(), to);
            }
            let edited = Parsed::new(base).with_edits(&edits, new.clone());
            let fresh = Parsed::new(new.as_str());
            assert_eq!(edited.root().to_sexp(), fresh.root().to_sexp(), "{new}");
            assert_eq!(edited.is_valid(), fresh.is_valid());
            assert_eq!(edited.root().end_position(), fresh.root().end_position());
        }
    }

    #[test]
    fn reparse_matches_a_fresh_parse_for_inserts_deletes_and_replacements() {
        let base = "import os\n\nclass A:\n    def f(self):\n        return 1\n\n    def g(self, x):\n        return x + 1\n\ndef h():\n    pass\n";
        check(base, &base.replace("return x + 1", "if x:\n            return x - 1\n        return 0"));
        check(base, &base.replace("    def f(self):\n        return 1\n\n", ""));
        check(base, &format!("#!/usr/bin/env python\n{base}def tail():\n    return 'é'"));
        check(base, "");
        check("", base);
        check(base, &base.replace("class A:", "class A(object):").replace("pass", "pass  # done"));
        check("def f(:\n  pass\n", "def f():\n  pass\n");
    }

    #[test]
    fn line_edits_rebuild_the_new_text_when_a_deletion_precedes_an_equal_blank_line() {
        // From urllib3's connection.py in requests 2.6: similar 2.7 reports this deletion
        // with a new-side index past the following insertion.
        let old = "                and self.assert_hostname is not False:\n            cert = self.sock.getpeercert()\n            if not cert.get('subjectAltName', ()):\n                warnings.warn((\n                    'Certificate for {0} has no `subjectAltName`, falling back to check for a '\n                    '`commonName` for now. This feature is being removed by major browsers and '\n                    'deprecated by RFC 2818. (See https://github.com/shazow/urllib3/issues/497 '\n                    'for details.)'.format(hostname)),\n                    SubjectAltNameWarning\n                )\n            match_hostname(cert, self.assert_hostname or hostname)\n\n        self.is_verified = (resolved_cert_reqs == ssl.CERT_REQUIRED or\n                            self.assert_fingerprint is not None)\n\n\nif ssl:\n    # Make a copy for testing.\n    UnverifiedHTTPSConnection = HTTPSConnection\n    HTTPSConnection = VerifiedHTTPSConnection\nelse:\n    HTTPSConnection = DummyConnection\n";
        let new = "                and self.assert_hostname is not False:\n            cert = self.sock.getpeercert()\n            if not cert.get('subjectAltName', ()):\n                warnings.warn((\n                    'Certificate for {0} has no `subjectAltName`, falling back to check for a '\n                    '`commonName` for now. This feature is being removed by major browsers and '\n                    'deprecated by RFC 2818. (See https://github.com/shazow/urllib3/issues/497 '\n                    'for details.)'.format(hostname)),\n                    SubjectAltNameWarning\n                )\n\n            # In case the hostname is an IPv6 address, strip the square\n            # brackets from it before using it to validate. This is because\n            # a certificate with an IPv6 address in it won't have square\n            # brackets around that address. Sadly, match_hostname won't do this\n            # for us: it expects the plain host part without any extra work\n            # that might have been done to make it palatable to httplib.\n            asserted_hostname = self.assert_hostname or hostname\n            asserted_hostname = asserted_hostname.strip('[]')\n            match_hostname(cert, asserted_hostname)\n\n        self.is_verified = (resolved_cert_reqs == ssl.CERT_REQUIRED or\n                            self.assert_fingerprint is not None)\n\n\nif ssl:\n    # Make a copy for testing.\n    UnverifiedHTTPSConnection = HTTPSConnection\n    HTTPSConnection = VerifiedHTTPSConnection\nelse:\n    HTTPSConnection = DummyConnection\n";
        let edits = line_edits(old, new);
        assert_eq!(splice(old, &edits, new), new, "{edits:?}");
        check(old, new);
    }
}
