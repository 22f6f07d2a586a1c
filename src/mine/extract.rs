//! Edited functions between two versions of one Python file, filtered by normalized code.

use crate::python::{functions, normalize_range, Parsed, SkeletonContext};
use std::collections::HashMap;

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
#[must_use]
pub fn edited_functions(before: &str, after: &str, context_bytes: usize) -> (Vec<FunctionEdit>, FileEditStats) {
    let mut stats = FileEditStats::default();
    let before_parsed = Parsed::new(before);
    let after_parsed = before_parsed.reparse(after);
    let before_fns = functions(&before_parsed);
    let after_fns = functions(&after_parsed);

    // Overloads and conditional definitions repeat a name: match the k-th with the k-th.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in before_fns.iter().enumerate() {
        by_name.entry(f.qualname.as_str()).or_default().push(i);
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut skeleton: Option<SkeletonContext> = None;
    let mut edits = Vec::new();
    for after_fn in &after_fns {
        let occurrence = seen.entry(after_fn.qualname.as_str()).or_insert(0);
        let k = *occurrence;
        *occurrence += 1;
        let Some(&bi) = by_name.get(after_fn.qualname.as_str()).and_then(|v| v.get(k)) else {
            continue;
        };
        let before_fn = &before_fns[bi];
        let before_text = &before[before_fn.byte_range.clone()];
        let after_text = &after[after_fn.byte_range.clone()];
        if before_text == after_text {
            continue;
        }
        stats.functions_edited += 1;
        let before_norm = normalize_range(&before_parsed, before_fn.byte_range.clone());
        let after_norm = normalize_range(&after_parsed, after_fn.byte_range.clone());
        if before_norm == after_norm {
            stats.trivial_edits += 1;
            continue;
        }
        let skeleton = skeleton.get_or_insert_with(|| SkeletonContext::new(&before_parsed, &before_fns));
        edits.push(FunctionEdit {
            function: after_fn.qualname.clone(),
            class: after_fn.class.clone(),
            before_line: before_fn.start_line,
            after_line: after_fn.start_line,
            before: before_text.to_string(),
            after: after_text.to_string(),
            context: skeleton.render(bi, before_fn.class.as_deref(), context_bytes),
            pair_hash: pair_hash(&before_norm, &after_norm),
        });
    }
    (edits, stats)
}

/// FNV-1a 64 over `before`, a separator and `after`: stable across runs and platforms,
/// so checkpoints can restore the deduplication set from written rows.
#[must_use]
pub fn pair_hash(before: &str, after: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in before.bytes().chain([0xff]).chain(after.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
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
}
