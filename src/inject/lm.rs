//! Neural line bugs: SmolLM2 writes a covered line of a function again from the code above it (masked-line mutation, as μBERT does with CodeBERT).

use crate::model::smollm::{LineSampling, SmolLm};
use crate::model::ModelError;
use crate::python::FunctionDef;
use crate::repair::choose::minimal::tokens;
use std::ops::Range;
use std::path::PathBuf;

/// Settings of the language-model bug planter (`inject --lm-bugs`).
#[derive(Debug, Clone)]
pub struct LmBugs {
    /// The SmolLM2 GGUF file.
    pub gguf: PathBuf,
    /// Covered functions per repository that get sampled lines (a seeded choice).
    pub functions: usize,
    /// Covered lines rewritten per function.
    pub lines: usize,
    /// Samples per prompt (the whole line, and the rest of the line after one cut).
    pub samples: usize,
}

impl LmBugs {
    #[must_use]
    pub fn new(gguf: PathBuf) -> LmBugs {
        LmBugs { gguf, functions: 40, lines: 2, samples: 8 }
    }
}

/// One sampled replacement of a line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineBug {
    /// 1-based line number.
    pub line: usize,
    /// Byte range of the line in the file, without its newline.
    pub range: Range<usize>,
    /// The new line, indentation included.
    pub content: String,
    /// Log-likelihood of the sampled tokens, in nats.
    pub nats: f64,
}

/// The loaded model and its settings.
pub struct LinePlanter {
    lm: SmolLm,
    pub options: LmBugs,
}

/// Sampling temperature (as `fix`'s line sampler: hotter samples read less like code people write).
const TEMPERATURE: f64 = 0.8;

impl LinePlanter {
    /// # Errors
    /// When the GGUF file cannot be read or is not a llama model.
    pub fn load(options: LmBugs) -> Result<LinePlanter, ModelError> {
        let lm = SmolLm::load_cpu(&options.gguf)?;
        Ok(LinePlanter { lm, options })
    }

    /// Replacements of the 1-based `lines` of `def` in `text`, each sampled from the file's
    /// imports (and class line) and the function up to that line (one prompt cache, extended
    /// line by line): the whole line after its indentation, and the rest of it after one cut
    /// (`return`, `=`, the last `(` or `.`). Samples that do not end their line, or change no
    /// token, are dropped. `stop` is asked before each step of the model: what was sampled
    /// by then is returned.
    ///
    /// # Errors
    /// On a tensor or tokenizer error.
    pub fn sample(
        &self,
        text: &str,
        def: &FunctionDef,
        lines: &[usize],
        seed: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<LineBug>, ModelError> {
        let starts = line_starts(text);
        let mut lines: Vec<usize> = lines.iter().copied().filter(|&l| l > def.start_line && l < starts.len()).collect();
        lines.sort_unstable();
        lines.dedup();
        let Some(&first_line) = lines.first() else { return Ok(Vec::new()) };
        let head = crate::repair::generate::cloze::header(text, def.class.as_deref(), def.start_line - 1);
        let (first, upto) = (starts[def.start_line - 1], starts[first_line - 1]);
        let Some(mut cursor) =
            self.lm.extend_until(&self.lm.empty_prefix()?, &format!("{head}{}", &text[first..upto]), stop)?
        else {
            return Ok(Vec::new());
        };
        let (mut at, mut out) = (upto, Vec::new());
        for line in lines {
            let (start, next) = (starts[line - 1], starts[line]);
            match self.lm.extend_until(&cursor, &text[at..start], stop)? {
                Some(extended) => (cursor, at) = (extended, start),
                None => return Ok(out),
            }
            let old = text[start..next].trim_end_matches(['\n', '\r']);
            let indent = old.len() - old.trim_start().len();
            let cuts =
                std::iter::once(indent).chain(crate::repair::generate::cloze::cuts(old).into_iter().rev().take(1));
            for (variant, cut) in cuts.enumerate() {
                let Some(prefix) = self.lm.extend_until(&cursor, &old[..cut], stop)? else { return Ok(out) };
                let sampling = LineSampling {
                    n: self.options.samples,
                    temperature: TEMPERATURE,
                    seed: seed.wrapping_add(line as u64 * 131 + variant as u64),
                    ..LineSampling::default()
                };
                for sampled in self.lm.sample_lines(&prefix, &sampling, stop)? {
                    let content = format!("{}{}", &old[..cut], sampled.text.trim_end());
                    if sampled.complete && changes_code(old, &content) {
                        out.push(LineBug { line, range: start..start + old.len(), content, nats: sampled.nats });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Byte offset of every line's start, and the text's length last.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    if starts.last() != Some(&text.len()) {
        starts.push(text.len());
    }
    starts
}

/// Whether `new` differs from `old` in a token of code (not only in spacing or a comment),
/// and keeps its indentation.
fn changes_code(old: &str, new: &str) -> bool {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let code = |l: &str| -> Vec<String> {
        let l = crate::repair::generate::cloze::comment_start(l).map_or(l, |at| &l[..at]);
        tokens(l).into_iter().map(|r| l[r].to_string()).collect()
    };
    let new_code = code(new);
    indent(old) == indent(new) && !new_code.is_empty() && code(old) != new_code
}

/// Covered lines of `def` worth rewriting: statements, not its header, decorators, comments,
/// docstrings or block openers such as `else:` and `try:`.
#[must_use]
pub fn rewritable(text: &str, def: &FunctionDef, covered: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let first_body = text[..def.body_byte_range.start].matches('\n').count() + 1;
    let lines: Vec<&str> = text.lines().collect();
    covered
        .into_iter()
        .filter(|&l| l >= first_body && l > def.start_line)
        .filter(|&l| {
            let code = lines.get(l - 1).map_or("", |s| s.trim());
            !(code.is_empty()
                || code.starts_with('#')
                || code.starts_with('@')
                || code.starts_with(['"', '\''])
                || matches!(code, "else:" | "try:" | "finally:" | "pass"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_changed_token_with_the_same_indentation_counts_as_a_change() {
        assert!(changes_code("    return a + b", "    return a - b"));
        assert!(!changes_code("    return a + b", "    return a+b  # sum"));
        assert!(!changes_code("    return a + b", "return a - b"));
        assert!(!changes_code("    x = 1", "    # nothing"));
    }

    #[test]
    fn headers_comments_docstrings_and_bare_block_openers_are_not_rewritten() {
        let text = "def f(x):\n    \"\"\"Doc.\"\"\"\n    # note\n    try:\n        y = x + 1\n    finally:\n        pass\n    return y\n";
        let parsed = crate::python::Parsed::new(text);
        let def = crate::python::functions(&parsed).remove(0);
        assert_eq!(rewritable(text, &def, 1..=8), vec![5, 8]);
    }

    #[test]
    fn sampled_lines_replace_whole_lines_of_the_function_and_change_their_code() {
        let Some(gguf) = crate::model::smollm::find_gguf() else {
            eprintln!("skipped: SmolLM2 not installed");
            return;
        };
        let planter = LinePlanter::load(LmBugs { samples: 6, ..LmBugs::new(gguf) }).unwrap();
        let text = "import math\n\n\ndef area(r):\n    scale = math.pi\n    return scale * r ** 2\n";
        let parsed = crate::python::Parsed::new(text);
        let def = crate::python::functions(&parsed).remove(0);
        let bugs = planter.sample(text, &def, &[6], 7, &|| false).unwrap();
        assert!(!bugs.is_empty(), "no sampled line changed the code");
        for bug in &bugs {
            assert_eq!(bug.line, 6);
            assert_eq!(&text[bug.range.clone()], "    return scale * r ** 2");
            assert!(bug.content.starts_with("    ") && changes_code("    return scale * r ** 2", &bug.content));
        }
        // Seeded: the same call samples the same lines.
        assert_eq!(planter.sample(text, &def, &[6], 7, &|| false).unwrap(), bugs);
        // A stop asked for before the first step samples nothing.
        assert!(planter.sample(text, &def, &[6], 7, &|| true).unwrap().is_empty());
    }
}
