//! Patches as plain data: sorted, non-overlapping byte-range edits of one file, and unified diffs.

use std::ops::Range;

/// Replace `range` (byte offsets) with `content`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Edit {
    pub range: Range<usize>,
    pub content: String,
}

impl Edit {
    #[must_use]
    pub fn replacement(range: Range<usize>, content: impl Into<String>) -> Edit {
        Edit { range, content: content.into() }
    }

    #[must_use]
    pub fn insertion(at: usize, content: impl Into<String>) -> Edit {
        Edit { range: at..at, content: content.into() }
    }

    #[must_use]
    pub fn deletion(range: Range<usize>) -> Edit {
        Edit { range, content: String::new() }
    }
}

/// Edits that overlap cannot be combined into one patch.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("edits at bytes {first:?} and {second:?} overlap")]
pub struct OverlapError {
    pub first: Range<usize>,
    pub second: Range<usize>,
}

/// A set of edits to one file, kept sorted and non-overlapping.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Patch {
    /// Path relative to the project root, with `/` separators.
    pub file: String,
    edits: Vec<Edit>,
}

impl Patch {
    /// # Errors
    /// When two edits overlap (two insertions at the same point also count).
    pub fn new(file: impl Into<String>, mut edits: Vec<Edit>) -> Result<Patch, OverlapError> {
        edits.sort_by_key(|e| (e.range.start, e.range.end));
        for pair in edits.windows(2) {
            if pair[1].range.start < pair[0].range.end || (pair[0].range == pair[1].range && pair[0].range.is_empty()) {
                return Err(OverlapError { first: pair[0].range.clone(), second: pair[1].range.clone() });
            }
        }
        Ok(Patch { file: file.into(), edits })
    }

    /// One edit.
    #[must_use]
    pub fn single(file: impl Into<String>, edit: Edit) -> Patch {
        Patch { file: file.into(), edits: vec![edit] }
    }

    #[must_use]
    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// Apply the edits to `text`. Pure; ranges must lie on char boundaries of `text`.
    #[must_use]
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 64);
        let mut last = 0;
        for edit in &self.edits {
            out.push_str(&text[last..edit.range.start]);
            out.push_str(&edit.content);
            last = edit.range.end;
        }
        out.push_str(&text[last..]);
        out
    }

    /// Combine two patches of the same file.
    ///
    /// # Errors
    /// When their edits overlap.
    pub fn merge(&self, other: &Patch) -> Result<Patch, OverlapError> {
        let mut edits = self.edits.clone();
        edits.extend(other.edits.iter().cloned());
        Patch::new(self.file.clone(), edits)
    }
}

/// A unified diff of one file that `git apply` (and `patch -p1`) accept.
#[must_use]
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let body = diff.unified_diff().context_radius(3).header(&format!("a/{path}"), &format!("b/{path}")).to_string();
    if body.is_empty() {
        return body;
    }
    format!("diff --git a/{path} b/{path}\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_regardless_of_how_they_were_given() {
        let text = "a < b and c + d";
        let patch = Patch::new("x.py", vec![Edit::replacement(12..13, "-"), Edit::replacement(2..3, "<=")]).unwrap();
        assert_eq!(patch.apply(text), "a <= b and c - d");
    }

    #[test]
    fn overlapping_edits_are_rejected() {
        let err = Patch::new("x.py", vec![Edit::replacement(0..4, "x"), Edit::deletion(2..6)]);
        assert!(err.is_err());
        let err = Patch::new("x.py", vec![Edit::insertion(3, "a"), Edit::insertion(3, "b")]);
        assert!(err.is_err());
    }

    #[test]
    fn unified_diff_has_git_headers_and_hunks() {
        let diff = unified_diff("pkg/m.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n");
        assert!(diff.starts_with("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n"), "{diff}");
        assert!(diff.contains("-y = 2\n+y = 3\n"), "{diff}");
        assert_eq!(unified_diff("m.py", "same\n", "same\n"), "");
    }
}
