//! Candidate patches: generated from localized lines, re-parsed, deduplicated and ranked.

use crate::patch::{Edit, Patch};
use crate::python::Parsed;
use crate::repair::generate::operators::{mutations_at_line_in, shorten, FileScope, Operator};
use crate::repair::learn::priors::Priors;
use std::collections::HashSet;

pub mod chunk;

/// A candidate's stable identity within one search: its admission order, never renumbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CandidateId(pub usize);

impl std::fmt::Display for CandidateId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// A repair operator.
    Operator(Operator),
    /// A fix template learned from real commits.
    Template,
    /// A line proposed cloze-style by a pretrained language model.
    LanguageModel,
    /// Two or three edits combined, at different lines of one file; `seed_fixed`: how many
    /// originally failing tests the seed (the partial fix it extends) already fixed.
    Combined { edits: usize, seed_fixed: usize },
    /// A function rewritten by the seq2seq patcher (`fix --model`).
    Neural,
}

impl Provenance {
    /// How many originally failing tests a candidate from this source must fix to be
    /// progress: one, or one more than the seed a combination extends.
    #[must_use]
    pub fn progress_threshold(self) -> usize {
        match self {
            Provenance::Combined { seed_fixed, .. } => seed_fixed + 1,
            _ => 1,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Provenance::Operator(op) => op.name(),
            Provenance::Template => "template",
            Provenance::LanguageModel => "language-model",
            Provenance::Combined { .. } => "combined",
            Provenance::Neural => "neural",
        }
    }

    /// A single edit (not a combination).
    #[must_use]
    pub fn is_single(self) -> bool {
        !matches!(self, Provenance::Combined { .. })
    }
}

/// A patch to validate, with its provenance and rank.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Stable id (admission order in a search; rank order from [`generate`]).
    pub id: CandidateId,
    pub patch: Patch,
    /// The whole patched file text (already checked to parse).
    pub patched_text: String,
    pub source: Provenance,
    /// 1-based line the edit starts on.
    pub line: usize,
    pub description: String,
    /// Localization score × operator prior.
    pub score: f64,
    /// Bytes removed plus bytes inserted: smaller edits are preferred among equals.
    pub edit_size: usize,
    /// Calls (`f(`, `.m(`) the patch removes from the code it replaces ([`deleted_calls`]).
    pub deleted_calls: usize,
    /// The functions this patch edits, when every edit lies inside a function body
    /// (enables hot-swapping and regression-test selection); `None` otherwise.
    pub focus: Option<Focus>,
}

/// The outermost functions whose bodies hold a patch's edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    /// Qualified name and 1-based `def` line (decorators included) in the patched text.
    pub functions: Vec<(String, usize)>,
    /// 1-based inclusive line ranges of those bodies in the original text.
    pub original_body_lines: Vec<(usize, usize)>,
    /// 1-based inclusive line range, in the patched text, of the module-level statements that
    /// hold those functions: compiling these lines alone gives their code.
    pub statement_lines: (usize, usize),
    /// The functions' own lines under stand-in headers of their blocks ([`chunk`]): a much
    /// smaller source than the statements (a method of a 1,500-line class compiles in 0.2 ms
    /// instead of 9). `None` where they do not fit.
    pub chunks: Option<Vec<chunk::Chunk>>,
}

impl Focus {
    /// What a hot swap compiles to get the functions' code, as (1-based first line, text): their
    /// chunks when they fit, else the module-level statements that hold them.
    #[must_use]
    pub fn swap_source(&self, patched_text: &str) -> (usize, String) {
        match &self.chunks {
            Some(chunks) => chunk::source(chunks, patched_text),
            None => (self.statement_lines.0, self.statements(patched_text).to_string()),
        }
    }

    /// The lines of `patched_text` named by [`Focus::statement_lines`] (line ends kept).
    #[must_use]
    pub fn statements<'t>(&self, patched_text: &'t str) -> &'t str {
        let (first, last) = self.statement_lines;
        let start = line_start(patched_text, first);
        let end = line_start(patched_text, last + 1);
        &patched_text[start..end.max(start)]
    }
}

/// Byte offset where 1-based `line` starts (the text's length past its last line).
fn line_start(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n').nth(line - 2).map_or(text.len(), |(i, _)| i + 1)
}

/// The byte range of `content` (placed at `start..end`) without its leading and trailing
/// whitespace; an empty range at `start` when it is all whitespace.
fn trimmed(content: &str, start: usize, end: usize) -> (usize, usize) {
    let code = content.trim();
    if code.is_empty() {
        return (start, start);
    }
    let lead = content.len() - content.trim_start().len();
    debug_assert!(start + lead + code.len() <= end);
    (start + lead, start + lead + code.len())
}

/// The last byte before `at` that is not whitespace.
fn last_code_byte(parsed: &Parsed, at: usize) -> Option<usize> {
    let text = parsed.text().as_bytes();
    text[..at.min(text.len())].iter().rposition(|b| !b.is_ascii_whitespace())
}

/// The [`Focus`] of `patch`, given the original file and the patched text.
#[must_use]
pub fn focus(patch: &Patch, original: &Parsed, patched: &Parsed) -> Option<Focus> {
    let mut focus = Focus {
        functions: Vec::new(),
        original_body_lines: Vec::new(),
        statement_lines: (usize::MAX, 0),
        chunks: None,
    };
    let mut defs = Vec::new();
    let mut shift: isize = 0;
    for edit in patch.edits() {
        // Position of the edit in the patched text.
        let start = edit.range.start.checked_add_signed(shift)?;
        let end = start + edit.content.len();
        shift += edit.content.len() as isize - edit.range.len() as isize;
        // The new code without the line breaks and indentation around it; a deletion at the end
        // of a body leaves an empty range just past it in the patched text.
        let (start, end) = trimmed(&edit.content, start, end);
        let new = crate::python::outermost_enclosing(patched, start, end).or_else(|| {
            (start == end)
                .then(|| last_code_byte(patched, start))
                .flatten()
                .and_then(|at| crate::python::outermost_enclosing(patched, at, at))
        })?;
        // A line inserted after a body's last line starts past that body in the original: the
        // patched tree says whose body it joined.
        let old = crate::python::outermost_enclosing(original, edit.range.start, edit.range.end).or_else(|| {
            (edit.range.is_empty())
                .then(|| last_code_byte(original, edit.range.start))
                .flatten()
                .and_then(|at| crate::python::outermost_enclosing(original, at, at))
                .filter(|old| old.qualname == new.qualname)
        })?;
        let entry = (new.qualname.clone(), new.start_line);
        if !focus.functions.contains(&entry) {
            focus.functions.push(entry);
            let body_start =
                memchr::memchr_iter(b'\n', &original.text().as_bytes()[..old.body_byte_range.start]).count() + 1;
            focus.original_body_lines.push((body_start, old.end_line));
            let (first, last) = module_statement_lines(patched, new.byte_range.start)?;
            focus.statement_lines = (focus.statement_lines.0.min(first), focus.statement_lines.1.max(last));
            defs.push(new);
        }
    }
    focus.chunks = chunk::chunks(patched, &defs.iter().collect::<Vec<_>>());
    Some(focus)
}

/// 1-based inclusive lines of the module-level statement holding byte `at`.
fn module_statement_lines(parsed: &Parsed, at: usize) -> Option<(usize, usize)> {
    let root = parsed.root();
    let mut cursor = root.walk();
    let statement = root.named_children(&mut cursor).find(|n| n.start_byte() <= at && at < n.end_byte())?;
    let lines = crate::python::skeleton::span(statement);
    Some((lines.first + 1, lines.last + 1))
}

/// Limits on candidate generation.
#[derive(Debug, Clone, Copy)]
pub struct GenerateLimits {
    /// How many of the most suspicious lines to mutate.
    pub max_lines: usize,
    /// Upper bound on the candidates returned.
    pub max_candidates: usize,
}

impl Default for GenerateLimits {
    fn default() -> Self {
        GenerateLimits { max_lines: 200, max_candidates: 5000 }
    }
}

/// The repair operators' proposals at one suspicious line, scored by suspiciousness × prior.
#[must_use]
pub fn operator_proposals(
    file: &crate::project::SourceFile,
    scope: &FileScope,
    susp: &crate::localize::SuspiciousLine,
    priors: &Priors,
) -> Vec<Proposal> {
    let mut mutations = mutations_at_line_in(&file.parsed, scope, susp.line);
    mutations.extend(call_argument_fixes(file, susp));
    let mut proposals: Vec<Proposal> = mutations
        .into_iter()
        .map(|mutation| {
            let steer = susp.crash.as_ref().map_or(1.0, |crash| crash_steer(crash, &mutation, file.parsed.text()));
            Proposal {
                score: susp.score * priors.weight(mutation.operator) * steer,
                patch: Patch::single(file.rel.clone(), mutation.edit),
                source: Provenance::Operator(mutation.operator),
                line: susp.line,
                description: mutation.description,
            }
        })
        .collect();
    let lookups = lookup_default_fixes(file, susp).into_iter().map(|m| (susp.line, m));
    proposals.extend(missing_key_fixes(file, susp).into_iter().chain(lookups).map(|(line, mutation)| Proposal {
        score: susp.score * priors.weight(mutation.operator) * CRASH_STEER,
        patch: Patch::single(file.rel.clone(), mutation.edit),
        source: Provenance::Operator(mutation.operator),
        line,
        description: mutation.description,
    }));
    proposals
}

/// A `KeyError` raised at this line for a key that a dictionary literal of the file nearly
/// has (`'WARN'` for `'WARNING'`: one is a prefix of the other, they differ in case only, or
/// by at most two edits): that key renamed to the missing one. The edit lies at the literal's
/// line, which comes with it.
fn missing_key_fixes(
    file: &crate::project::SourceFile,
    susp: &crate::localize::SuspiciousLine,
) -> Vec<(usize, crate::repair::generate::operators::Mutation)> {
    use crate::localize::CrashKind;
    let Some(crash) = susp.crash.as_ref().filter(|c| c.kind == CrashKind::KeyError && c.raised_here) else {
        return Vec::new();
    };
    let Some(missing) = quoted(&crash.message) else { return Vec::new() };
    let near = |key: &str| {
        key != missing
            && ((missing.starts_with(key) || key.starts_with(missing)) && key.len().min(missing.len()) >= 3
                || key.eq_ignore_ascii_case(missing)
                || crate::repair::generate::operators::edit_distance(key, missing) <= 2)
    };
    let mut out = Vec::new();
    let mut stack = vec![file.parsed.root()];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
        if node.kind() != "pair" {
            continue;
        }
        let Some(key) = node.child_by_field_name("key").filter(|k| k.kind() == "string") else { continue };
        let text = file.parsed.node_text(key);
        let Some(replacement) = renamed_key(text, missing).filter(|_| quoted(text).is_some_and(near)) else { continue };
        let mutation = crate::repair::generate::operators::Mutation {
            operator: Operator::Literal,
            edit: Edit::replacement(key.byte_range(), replacement.clone()),
            description: format!("`{text}` → `{replacement}` (the missing key)"),
        };
        out.push((key.start_position().row + 1, mutation));
    }
    out
}

/// A `KeyError` raised at this line: its lookups given a default, `d.pop(k)` → `d.pop(k, None)`
/// and a read `d[k]` → `d.get(k)` (the missing key then means "none", as it often should).
fn lookup_default_fixes(
    file: &crate::project::SourceFile,
    susp: &crate::localize::SuspiciousLine,
) -> Vec<crate::repair::generate::operators::Mutation> {
    use crate::localize::CrashKind;
    if !susp.crash.as_ref().is_some_and(|c| c.kind == CrashKind::KeyError && c.raised_here) {
        return Vec::new();
    }
    let parsed = &file.parsed;
    let mut out = Vec::new();
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        let (start, end) = (node.start_position().row + 1, node.end_position().row + 1);
        if end < susp.line || start > susp.line {
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
        if start != susp.line {
            continue;
        }
        // `content` replaces `range`, a part of `node` (or all of it).
        let mutation = |range: std::ops::Range<usize>, content: String| {
            let old = parsed.node_text(node);
            let at = range.start - node.start_byte();
            let new = format!("{}{content}{}", &old[..at], &old[at + range.len()..]);
            crate::repair::generate::operators::Mutation {
                operator: Operator::CallArguments,
                description: format!("`{}` → `{}` (a default for the missing key)", shorten(old), shorten(&new)),
                edit: Edit::replacement(range, content),
            }
        };
        match node.kind() {
            "call" => {
                let method = node.child_by_field_name("function").filter(|f| f.kind() == "attribute");
                let pops = method
                    .and_then(|f| f.child_by_field_name("attribute"))
                    .is_some_and(|a| parsed.node_text(a) == "pop");
                let Some(args) = node.child_by_field_name("arguments").filter(|_| pops) else { continue };
                let mut c = args.walk();
                let positional: Vec<_> = args.named_children(&mut c).filter(|a| a.kind() != "comment").collect();
                if let [key] = positional.as_slice() {
                    let text = format!("({}, None)", parsed.node_text(*key));
                    out.push(mutation(args.byte_range(), text));
                }
            }
            "subscript" if is_read(node) => {
                let (Some(value), Some(key)) =
                    (node.child_by_field_name("value"), node.child_by_field_name("subscript"))
                else {
                    continue;
                };
                if key.kind() == "slice" || node.named_child_count() != 2 {
                    continue;
                }
                let text = format!("{}.get({})", parsed.node_text(value), parsed.node_text(key));
                out.push(mutation(node.byte_range(), text));
            }
            _ => {}
        }
    }
    out
}

/// A subscript that reads (not the target of an assignment or `del`).
fn is_read(node: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = node.parent() else { return true };
    let target = matches!(parent.kind(), "assignment" | "augmented_assignment" | "for_statement")
        && parent.child_by_field_name("left").is_some_and(|l| l.id() == node.id());
    !target && !matches!(parent.kind(), "delete_statement" | "pattern_list" | "tuple_pattern")
}

/// A plain string literal (`'k'`, `"k"`, `b'k'`: one quote character each side, no escapes)
/// with its contents replaced by `key`.
fn renamed_key(literal: &str, key: &str) -> Option<String> {
    let open = literal.find(['\'', '"'])?;
    let quote = literal[open..].chars().next()?;
    let inner = literal.get(open + 1..literal.len().checked_sub(1)?)?;
    let plain = literal.ends_with(quote) && !inner.contains(['\\', quote]) && !inner.is_empty();
    let fits = !key.contains(['\\', '\'', '"', '\n']);
    (plain && fits).then(|| format!("{}{key}{quote}", &literal[..=open]))
}

/// The text between the first pair of matching single or double quotes.
fn quoted(text: &str) -> Option<&str> {
    let start = text.find(['\'', '"'])?;
    let quote = text[start..].chars().next()?;
    let rest = &text[start + 1..];
    rest.find(quote).map(|end| &rest[..end])
}

/// Edits of the arguments of the call that raised a signature `TypeError` at this line.
fn call_argument_fixes(
    file: &crate::project::SourceFile,
    susp: &crate::localize::SuspiciousLine,
) -> Vec<crate::repair::generate::operators::Mutation> {
    use crate::localize::CrashKind;
    let Some(crash) = susp.crash.as_ref().filter(|c| c.kind == CrashKind::TypeError && c.raised_here) else {
        return Vec::new();
    };
    crate::repair::generate::signature::CallError::parse(&crash.message)
        .map(|error| crate::repair::generate::signature::call_fixes(&file.parsed, susp.line, &error))
        .unwrap_or_default()
}

/// Boost for an operator that answers the exception a failing test raised at this line: a
/// missing name or attribute replaced, bounds and guards for lookups, arguments for calls.
fn crash_steer(
    crash: &crate::localize::Crash,
    mutation: &crate::repair::generate::operators::Mutation,
    text: &str,
) -> f64 {
    use crate::localize::CrashKind as K;
    let replaced = text.get(mutation.edit.range.clone()).unwrap_or_default();
    let names_missing = || crash.missing_name().is_some_and(|name| replaced == name);
    // An element of a display that reads the missing name, dropped (`self.family, `).
    let drops_missing = || {
        let dropped = replaced.trim().trim_matches(',').trim();
        mutation.operator == Operator::DropElement
            && crash.missing_name().is_some_and(|name| dropped == name || dropped.ends_with(&format!(".{name}")))
    };
    let answers = match crash.kind {
        K::NameError | K::UnboundLocalError => {
            (mutation.operator == Operator::VariableMisuse && names_missing()) || drops_missing()
        }
        // An attribute the class does assign, read before it was: the call made too early
        // (at a call site, not where it raised) is the bug.
        K::AttributeError
            if !crash.raised_here && crash.missing_name().is_some_and(|name| assigns_attribute(text, name)) =>
        {
            mutation.operator == Operator::DeleteStatement
        }
        K::AttributeError => (mutation.operator == Operator::AttributeMisuse && names_missing()) || drops_missing(),
        K::KeyError | K::IndexError => {
            matches!(
                mutation.operator,
                Operator::IndexOffByOne | Operator::Negation | Operator::ExceptionType | Operator::ConditionChange
            )
        }
        K::TypeError => matches!(
            mutation.operator,
            Operator::ArgumentSwap
                | Operator::WrapExpression
                | Operator::UnwrapCall
                | Operator::ReturnValue
                | Operator::CallArguments
                | Operator::GuardClause
        ),
        K::ZeroDivisionError => matches!(mutation.operator, Operator::ConditionChange | Operator::ExpressionOffByOne),
        K::ValueError | K::Other => false,
    };
    if answers {
        CRASH_STEER
    } else {
        1.0
    }
}

/// `text` assigns `.name` somewhere (`self.name = ...`, `self.name: T = ...`).
fn assigns_attribute(text: &str, name: &str) -> bool {
    let needle = format!(".{name}");
    text.match_indices(&needle).any(|(at, _)| {
        let rest = &text[at + needle.len()..];
        let rest = rest.trim_start_matches([' ', '\t']);
        (rest.starts_with('=') && !rest.starts_with("=="))
            || rest.starts_with(':') && rest.lines().next().is_some_and(|l| l.contains('='))
    })
}

/// How much an operator answering the raised exception is preferred at the raising lines.
const CRASH_STEER: f64 = 2.0;

/// The candidate made of `proposal` once [`check_patch`] accepted it.
#[must_use]
pub fn admitted(id: CandidateId, proposal: Proposal, checked: Checked) -> Candidate {
    let edit_size = checked.patch.edits().iter().map(|e| e.range.len() + e.content.len()).sum();
    Candidate {
        id,
        focus: checked.focus,
        patch: checked.patch,
        patched_text: checked.patched_text,
        source: proposal.source,
        line: proposal.line,
        description: if checked.removed_stores.is_empty() {
            proposal.description
        } else {
            format!(
                "{} (and the assignment to `{}` it leaves unused)",
                proposal.description,
                checked.removed_stores.join("`, `")
            )
        },
        score: proposal.score,
        edit_size,
        deleted_calls: checked.deleted_calls,
    }
}

/// Limits on neural candidate generation.
#[derive(Debug, Clone)]
pub struct NeuralLimits {
    /// How many of the most suspicious functions the patcher rewrites.
    pub max_functions: usize,
    /// Samples per function (before deduplication).
    pub samples: usize,
    /// Skeleton budget in tokens.
    pub budget: usize,
    pub temperature: f64,
    pub top_p: f64,
    pub seed: u64,
    /// Put the failing test's message and locals above the skeleton (see `skeleton::trace`).
    pub traces: bool,
}

impl NeuralLimits {
    /// `fix`'s bundled patcher beside the language-model lines: 2 functions × 8 samples.
    #[must_use]
    pub fn bundled() -> NeuralLimits {
        NeuralLimits { max_functions: 2, samples: 8, ..NeuralLimits::default() }
    }
}

impl Default for NeuralLimits {
    fn default() -> Self {
        NeuralLimits {
            max_functions: 3,
            samples: 16,
            budget: crate::skeleton::DEFAULT_BUDGET,
            temperature: 0.8,
            top_p: 0.95,
            seed: 0,
            traces: true,
        }
    }
}

/// `new` re-indented so its first line has the indentation of `old`'s first line. A method
/// written as mined functions are (its header at column 0, its body where it was in the file,
/// deeper than `old`'s header) has only the lines left of `old`'s indentation moved.
pub(crate) fn reindent(new: &str, old: &str) -> String {
    let indent_of = |l: &str| l[..l.len() - l.trim_start().len()].to_string();
    let first_line = |s: &str| s.lines().find(|l| !l.trim().is_empty()).map(indent_of).unwrap_or_default();
    let (want, have) = (first_line(old), first_line(new));
    let body =
        new.lines().skip_while(|l| !l.trim_end().ends_with(':')).skip(1).find(|l| !l.trim().is_empty()).map(indent_of);
    let absolute = have.len() < want.len() && body.is_some_and(|b| b.len() > want.len() && b.starts_with(&want));
    let mut out = String::with_capacity(new.len() + 16);
    let mut in_header = true;
    for line in new.trim_end_matches('\n').lines() {
        if line.trim().is_empty() {
            out.push('\n');
            continue;
        }
        let header_line = in_header;
        in_header &= !line.trim_end().ends_with(':');
        if absolute && !header_line && line.starts_with(&want) {
            out.push_str(line);
        } else {
            out.push_str(&want);
            out.push_str(line.strip_prefix(have.as_str()).unwrap_or(line.trim_start()));
        }
        out.push('\n');
    }
    out
}

/// The smallest replacement turning `old` (at `offset` in the file) into `new`.
pub(crate) fn minimal_edit(old: &str, new: &str, offset: usize) -> Edit {
    let prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    let prefix = (0..=prefix).rev().find(|&p| old.is_char_boundary(p) && new.is_char_boundary(p)).unwrap_or(0);
    let max_suffix = (old.len() - prefix).min(new.len() - prefix);
    let suffix = old.bytes().rev().zip(new.bytes().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    let suffix = (0..=suffix)
        .rev()
        .find(|&s| old.is_char_boundary(old.len() - s) && new.is_char_boundary(new.len() - s))
        .unwrap_or(0);
    Edit::replacement(offset + prefix..offset + old.len() - suffix, &new[prefix..new.len() - suffix])
}

/// Penalty on each extra edit of a combined candidate: each is a chance to overfit the tests.
const COMBINATION_PENALTY: f64 = 0.5;

/// `seed` and `partner` combined into one patch (at different lines of one file), scored by
/// the product of their scores; `None` when they cannot combine.
#[must_use]
pub fn combine(seed: &Candidate, seed_fixed: usize, partner: &Partner<'_>) -> Option<Proposal> {
    if seed.patch.file != partner.patch.file || seed.line == partner.line {
        return None;
    }
    let patch = seed.patch.merge(partner.patch).ok()?;
    let edits = patch.edits().len();
    Some(Proposal {
        patch,
        source: Provenance::Combined { edits, seed_fixed },
        line: seed.line.min(partner.line),
        description: format!("{}; {}", seed.description, partner.description),
        score: seed.score * partner.score * COMBINATION_PENALTY,
    })
}

/// A patch a source proposes; the search re-parses, deduplicates and admits it.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub patch: Patch,
    pub source: Provenance,
    /// 1-based line the (first) edit starts on.
    pub line: usize,
    pub description: String,
    /// Estimated chance of success, comparable across sources (localization × prior).
    pub score: f64,
}

/// A single edit that may be combined with a seed: an admitted candidate or a proposal.
#[derive(Debug, Clone, Copy)]
pub struct Partner<'a> {
    pub patch: &'a Patch,
    pub line: usize,
    pub description: &'a str,
    pub score: f64,
}

/// A patch that survived [`check_patch`].
pub struct Checked {
    /// Calls the patch removes ([`deleted_calls`]).
    pub deleted_calls: usize,
    pub patch: Patch,
    pub patched_text: String,
    pub focus: Option<Focus>,
    /// Names whose assignments the patch left dead and [`crate::repair::cleanup`] removed with it.
    pub removed_stores: Vec<String>,
}

/// Why [`check_patch`] dropped a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The patched file does not parse.
    Unparseable,
    /// Another candidate already gives the same code (up to spacing).
    Duplicate,
}

/// Apply `patch` to `file`; reject it when the result does not parse or duplicates an
/// earlier candidate (recorded in `seen`), else compute its [`Focus`].
///
/// # Errors
/// The reason the patch was dropped.
pub fn check_patch(
    file: &crate::project::SourceFile,
    patch: Patch,
    seen: &mut HashSet<(String, String)>,
) -> Result<Checked, Rejected> {
    let original = file.parsed.text();
    let patched_text = patch.apply(original);
    let edits: Vec<(std::ops::Range<usize>, &str)> =
        patch.edits().iter().map(|e| (e.range.clone(), e.content.as_str())).collect();
    let reparsed = file.parsed.with_edits(&edits, patched_text.clone());
    if !reparsed.is_valid() || misplaced_statement(&reparsed, &patch) {
        return Err(Rejected::Unparseable);
    }
    let (patch, patched_text, reparsed, removed_stores) =
        match crate::repair::cleanup::without_dead_stores(&file.parsed, &reparsed, &patch) {
            Some((clean, names)) => {
                let text = clean.apply(original);
                let edits: Vec<(std::ops::Range<usize>, &str)> =
                    clean.edits().iter().map(|e| (e.range.clone(), e.content.as_str())).collect();
                let parsed = file.parsed.with_edits(&edits, text.clone());
                if !parsed.is_valid() {
                    return Err(Rejected::Unparseable);
                }
                (clean, text, parsed, names)
            }
            None => (patch, patched_text, reparsed, Vec::new()),
        };
    if !seen.insert((file.rel.clone(), dedupe_key(original, &patched_text, &patch))) {
        return Err(Rejected::Duplicate);
    }
    let focus = focus(&patch, &file.parsed, &reparsed);
    Ok(Checked { deleted_calls: deleted_calls(original, &patch), patch, patched_text, focus, removed_stores })
}

/// A statement the patch puts where tree-sitter accepts it and CPython does not: `return`,
/// `yield`, `await` or `nonlocal` outside a function, `break` or `continue` outside a loop
/// (a `return` inserted after a method's last line, at the class body's indentation).
fn misplaced_statement(patched: &Parsed, patch: &Patch) -> bool {
    let mut shift: isize = 0;
    patch.edits().iter().any(|edit| {
        let Some(start) = edit.range.start.checked_add_signed(shift) else { return false };
        shift += edit.content.len() as isize - edit.range.len() as isize;
        let range = start..start + edit.content.len();
        let Some(node) = patched.root().descendant_for_byte_range(range.start, range.end) else { return false };
        let mut found = false;
        visit_overlapping(node, &range, &mut |n| found |= misplaced(n));
        found
    })
}

fn visit_overlapping(
    node: tree_sitter::Node<'_>,
    range: &std::ops::Range<usize>,
    f: &mut dyn FnMut(tree_sitter::Node<'_>),
) {
    f(node);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.start_byte() < range.end && range.start < child.end_byte() {
            visit_overlapping(child, range, f);
        }
    }
}

fn misplaced(node: tree_sitter::Node<'_>) -> bool {
    let needs_loop = matches!(node.kind(), "break_statement" | "continue_statement");
    let needs_function = matches!(node.kind(), "return_statement" | "yield" | "await" | "nonlocal_statement");
    if !needs_loop && !needs_function {
        return false;
    }
    let mut parent = node.parent();
    while let Some(p) = parent {
        match p.kind() {
            "function_definition" | "lambda" => return needs_loop,
            "class_definition" => return true,
            "for_statement" | "while_statement" if needs_loop => return false,
            _ => {}
        }
        parent = p.parent();
    }
    true
}

/// How many calls (a name followed by `(`: `f(`, `.strip(`) the code `patch` replaces has
/// beyond those its replacement has. A plausible patch that drops a call often passes the
/// tests by losing behaviour they do not check (`text.strip()` → `text`); one that calls
/// another function or method in its place (`.upper()` → `.lower()`) drops none.
#[must_use]
pub fn deleted_calls(original: &str, patch: &Patch) -> usize {
    let (removed, added) = patch.edits().iter().fold((0, 0), |(removed, added), edit| {
        let old = called_names(original.get(edit.range.clone()).unwrap_or_default()).len();
        (removed + old, added + called_names(&edit.content).len())
    });
    removed.saturating_sub(added)
}

/// Names directly followed by `(` (spaces allowed), in order; string contents are not skipped.
fn called_names(code: &str) -> Vec<&str> {
    let bytes = code.as_bytes();
    let is_name = |b: u8| b == b'_' || b.is_ascii_alphanumeric();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if is_name(bytes[i]) && (i == 0 || !is_name(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && is_name(bytes[i]) {
                i += 1;
            }
            let after = code[i..].trim_start();
            if after.starts_with('(') && !bytes[start].is_ascii_digit() {
                names.push(&code[start..i]);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// What identifies a patched file among the patches of one file, in time and space that
/// follow the edits, not the file: the lines the edits touch, less the leading and trailing
/// lines they leave as they were, located by their first line and normalized.
fn dedupe_key(original: &str, patched: &str, patch: &Patch) -> String {
    let (Some(first), Some(last)) = (patch.edits().first(), patch.edits().last()) else { return String::new() };
    let start = original[..first.range.start].rfind('\n').map_or(0, |i| i + 1);
    let end = original[last.range.end..].find('\n').map_or(original.len(), |i| last.range.end + i + 1);
    let tail = original.len() - end;
    let (old, new) = (&original[start..end], &patched[start..patched.len() - tail]);
    let (mut old_lines, mut new_lines) =
        (old.split_inclusive('\n').collect::<Vec<_>>(), new.split_inclusive('\n').collect::<Vec<_>>());
    let mut first_line = memchr::memchr_iter(b'\n', &original.as_bytes()[..start]).count();
    while !old_lines.is_empty() && !new_lines.is_empty() && old_lines[0] == new_lines[0] {
        old_lines.remove(0);
        new_lines.remove(0);
        first_line += 1;
    }
    while old_lines.last().is_some() && old_lines.last() == new_lines.last() {
        old_lines.pop();
        new_lines.pop();
    }
    format!("{first_line}:{}:{}", old_lines.len(), normalize(&new_lines.concat()))
}

/// Code with whitespace runs collapsed, so formatting-only differences dedupe.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        out.push_str(&line[..indent]);
        let mut prev_space = false;
        for ch in line.trim().chars() {
            if ch == ' ' || ch == '\t' {
                prev_space = true;
                continue;
            }
            if prev_space
                && (ch.is_alphanumeric() || ch == '_')
                && out.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                out.push(' ');
            }
            prev_space = false;
            out.push(ch);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{deleted_calls, focus, minimal_edit, normalize, reindent};
    use crate::patch::{Edit, Patch};
    use crate::python::Parsed;
    use std::collections::HashSet;

    #[test]
    fn a_key_error_renames_the_near_key_of_a_dictionary_literal() {
        use crate::localize::{Crash, CrashKind, SuspiciousLine};
        let text = "LEVELS = {\"DEBUG\": 10, \"WARN\": 30, 'ERR': 40, \"X\": 1}\n\ndef at_least(name=\"WARNING\"):\n    return LEVELS[name]\n";
        let file = crate::project::SourceFile { rel: "m.py".into(), parsed: Parsed::new(text), is_test: false };
        let crash = |message: &str, raised_here| Crash {
            kind: CrashKind::KeyError,
            type_name: "KeyError".into(),
            message: message.into(),
            raised_here,
        };
        let susp = |crash| SuspiciousLine {
            file: "m.py".into(),
            line: 4,
            score: 1.0,
            ochiai: 1.0,
            dstar: 1.0,
            stack: 1.0,
            flow: 1.0,
            crash: Some(crash),
        };
        let fixes = super::missing_key_fixes(&file, &susp(crash("'WARNING'", true)));
        assert_eq!(fixes.len(), 1, "{fixes:?}");
        let (line, mutation) = &fixes[0];
        assert_eq!(*line, 1);
        let patched = Patch::single("m.py", mutation.edit.clone()).apply(text);
        assert!(patched.starts_with("LEVELS = {\"DEBUG\": 10, \"WARNING\": 30,"), "{patched}");
        // Case and a typo count as near; a short prefix and far keys do not.
        let fixes = super::missing_key_fixes(&file, &susp(crash("'error'", true)));
        assert!(fixes.is_empty(), "{fixes:?}");
        let fixes = super::missing_key_fixes(&file, &susp(crash("'debug'", true)));
        assert_eq!(fixes.len(), 1);
        assert!(Patch::single("m.py", fixes[0].1.edit.clone()).apply(text).contains("{\"debug\": 10"));
        let fixes = super::missing_key_fixes(&file, &susp(crash("'ERRR'", true)));
        assert!(Patch::single("m.py", fixes[0].1.edit.clone()).apply(text).contains("'ERRR': 40"));
        // Only where the KeyError was raised.
        assert!(super::missing_key_fixes(&file, &susp(crash("'WARNING'", false))).is_empty());
    }

    #[test]
    fn a_key_error_gives_the_lookups_of_its_line_a_default() {
        use crate::localize::{Crash, CrashKind, SuspiciousLine};
        let text = "def forget(cache, counts, key):\n    cache.pop(key)\n    counts[key] = counts[key] + 1\n    del cache[key]\n";
        let file = crate::project::SourceFile { rel: "m.py".into(), parsed: Parsed::new(text), is_test: false };
        let susp = |line, raised_here| SuspiciousLine {
            file: "m.py".into(),
            line,
            score: 1.0,
            ochiai: 1.0,
            dstar: 1.0,
            stack: 1.0,
            flow: 1.0,
            crash: Some(Crash {
                kind: CrashKind::KeyError,
                type_name: "KeyError".into(),
                message: "(0,)".into(),
                raised_here,
            }),
        };
        let patched = |line, raised_here| -> Vec<String> {
            let fixes = super::lookup_default_fixes(&file, &susp(line, raised_here));
            fixes
                .into_iter()
                .map(|m| Patch::single("m.py", m.edit).apply(text).lines().nth(line - 1).unwrap().to_string())
                .collect()
        };
        assert_eq!(patched(2, true), ["    cache.pop(key, None)"]);
        let described = super::lookup_default_fixes(&file, &susp(2, true))[0].description.clone();
        assert_eq!(described, "`cache.pop(key)` → `cache.pop(key, None)` (a default for the missing key)");
        // The read is given a default, not the assignment's target; `del` is left alone.
        assert_eq!(patched(3, true), ["    counts[key] = counts.get(key) + 1"]);
        assert!(patched(4, true).is_empty());
        assert!(patched(2, false).is_empty(), "only where the KeyError was raised");
    }

    #[test]
    fn deleted_calls_count_the_calls_a_patch_drops_not_those_it_renames() {
        let text = "    return datetime.strptime(text.strip(), \"%Y-%d-%m\").date()\n";
        let line = 0..text.len() - 1;
        let rewrite = |to: &str| deleted_calls(text, &Patch::single("m.py", Edit::replacement(line.clone(), to)));
        assert_eq!(rewrite("    return datetime.strptime(text, \"%Y-%m-%d\").date()"), 1);
        assert_eq!(rewrite("    return datetime.strptime(text.strip(), \"%Y-%m-%d\").date()"), 0);
        assert_eq!(rewrite("    return text"), 3);
        // Adding calls or renaming a variable deletes none; `1(` is no call.
        assert_eq!(rewrite("    return datetime.strptime(str(text.strip()), fmt).date()"), 0);
        let at = text.find("%Y").unwrap();
        assert_eq!(deleted_calls(text, &Patch::single("m.py", Edit::replacement(at..at + 8, "%Y-%m-%d"))), 0);
        assert_eq!(deleted_calls("x = f (1) + g(2)", &Patch::single("m.py", Edit::replacement(0..16, "x = 1(2)"))), 2);
        // Another method in the place of one: no call dropped.
        assert_eq!(rewrite("    return datetime.strptime(text.lower(), \"%Y-%d-%m\").date()"), 0);
    }

    #[test]
    fn statements_only_cpython_rejects_where_they_are_put_are_unparseable() {
        use super::{check_patch, Rejected};
        let text = "class Box:\n    def area(self):\n        for x in self.xs:\n            pass\n        y = 1\n\n    size = 1\n";
        let file = crate::project::SourceFile { rel: "m.py".into(), parsed: Parsed::new(text), is_test: false };
        let after_body = text.find("\n\n    size").unwrap() + 1;
        let check = |at: usize, content: &str| {
            check_patch(&file, Patch::single("m.py", Edit::insertion(at, content)), &mut HashSet::new()).map(|_| ())
        };
        assert_eq!(check(after_body, "    return y\n"), Err(Rejected::Unparseable), "return in a class body");
        assert_eq!(check(after_body, "        return y\n"), Ok(()), "return as the method's last line");
        let in_loop = text.find("            pass").unwrap();
        assert_eq!(check(in_loop, "            break\n"), Ok(()));
        let after_loop = text.find("        y = 1").unwrap();
        assert_eq!(check(after_loop, "        break\n"), Err(Rejected::Unparseable), "break outside a loop");
        assert_eq!(check(0, "yield 1\n"), Err(Rejected::Unparseable), "yield at module level");
    }

    #[test]
    fn lines_inserted_after_a_body_and_deleted_at_its_end_keep_the_functions_focus() {
        let text = "class Box:\n    def area(self):\n        x = self.w\n        self.log(x)\n\n    size = 1\n";
        let original = Parsed::new(text);
        let after_body = text.find("\n\n    size").unwrap() + 1;
        let check = |edit: Edit| {
            let patch = Patch::single("m.py", edit);
            let patched_text = patch.apply(text);
            focus(&patch, &original, &Parsed::new(patched_text.as_str())).map(|f| f.functions)
        };
        let area = Some(vec![("Box.area".to_string(), 2)]);
        // A `return x` inserted as the body's new last line, at the start of the next line.
        assert_eq!(check(Edit::insertion(after_body, "        return x\n")), area);
        // The body's last call deleted up to its end.
        let call = text.find("\n        self.log(x)").unwrap();
        assert_eq!(check(Edit::replacement(call..call + "\n        self.log(x)".len(), "")), area);
        // A class attribute inserted at the same place is no edit of the method.
        assert_eq!(check(Edit::insertion(after_body, "    count = 0\n")), None);
    }

    #[test]
    fn a_focus_names_the_module_level_statements_that_hold_its_functions() {
        let text = "import os\n\nclass Box:\n    size = 1\n\n    @property\n    def area(self):\n        return 1\n# between\n\nif os.name:\n    def h(y):\n        return y\n\ndef last():\n    return 0";
        let original = Parsed::new(text);
        let at = |needle: &str, with: &str| {
            let start = text.find(needle).unwrap();
            Edit { range: start..start + needle.len(), content: with.into() }
        };
        // An edit in a method: the whole class; two edits: everything from the first
        // statement to the last, whose text may end without a newline.
        for (edits, lines, first_function) in [
            (vec![at("return 1", "return 2")], (3, 8), ("Box.area", 6)),
            (vec![at("return y", "return -y"), at("return 0", "return 10")], (11, 16), ("h", 12)),
        ] {
            let patch = Patch::new("m.py", edits).unwrap();
            let patched_text = patch.apply(text);
            let got = focus(&patch, &original, &Parsed::new(patched_text.as_str())).unwrap();
            assert_eq!(got.statement_lines, lines);
            assert_eq!(got.functions[0], (first_function.0.to_string(), first_function.1));
            let statements = got.statements(&patched_text);
            let expected: Vec<&str> =
                patched_text.split_inclusive('\n').skip(lines.0 - 1).take(lines.1 - lines.0 + 1).collect();
            assert_eq!(statements, expected.concat());
        }
    }

    #[test]
    fn operators_answering_the_raised_exception_are_preferred_at_the_raising_line() {
        use super::{crash_steer, CRASH_STEER};
        use crate::localize::{Crash, CrashKind};
        use crate::repair::generate::operators::{Mutation, Operator};
        let text = "def f(count):\n    return cuont + 1\n";
        let at = text.find("cuont").unwrap();
        let mutation = |operator, from: usize, to: usize| Mutation {
            operator,
            edit: Edit::replacement(from..to, "count"),
            description: String::new(),
        };
        let crash = Crash {
            kind: CrashKind::NameError,
            type_name: "NameError".into(),
            message: "name 'cuont' is not defined".into(),
            raised_here: true,
        };
        assert_eq!(crash_steer(&crash, &mutation(Operator::VariableMisuse, at, at + 5), text), CRASH_STEER);
        // Another name replaced, or another operator: no preference.
        assert_eq!(crash_steer(&crash, &mutation(Operator::VariableMisuse, 6, 11), text), 1.0);
        assert_eq!(crash_steer(&crash, &mutation(Operator::ConstantOffByOne, at, at + 5), text), 1.0);
        let key = Crash { kind: CrashKind::KeyError, message: "'x'".into(), ..crash };
        assert_eq!(crash_steer(&key, &mutation(Operator::ConditionChange, at, at + 5), text), CRASH_STEER);
        // An attribute the class assigns but that was read too early: at the call site (not the
        // raising line), deleting the premature call answers it.
        let text = "class P:\n    def __init__(self):\n        self.build()\n        self.fields = []\n        self.build()\n\n    def build(self):\n        return len(self.fields)\n";
        let early = Crash {
            kind: CrashKind::AttributeError,
            message: "'P' object has no attribute 'fields'".into(),
            raised_here: false,
            ..key
        };
        let at = text.find("        self.build()").unwrap();
        let delete = Mutation {
            operator: Operator::DeleteStatement,
            edit: Edit::deletion(at..at + 21),
            description: String::new(),
        };
        assert_eq!(crash_steer(&early, &delete, text), CRASH_STEER);
        assert_eq!(crash_steer(&Crash { raised_here: true, ..early.clone() }, &delete, text), 1.0);
        let typo = Crash { message: "'P' object has no attribute 'feilds'".into(), ..early };
        assert_eq!(crash_steer(&typo, &delete, text), 1.0);
        // An element of a display that reads the attribute the object lacks, dropped.
        let text = "class U:\n    def __hash__(self):\n        return hash((self.host, self.family, self.port))\n";
        let gone = Crash { message: "'U' object has no attribute 'family'".into(), raised_here: true, ..typo };
        let at = text.find("self.family").unwrap();
        let drop = Mutation {
            operator: Operator::DropElement,
            edit: Edit::deletion(at..at + "self.family, ".len()),
            description: String::new(),
        };
        assert_eq!(crash_steer(&gone, &drop, text), CRASH_STEER);
        let at = text.find("self.port").unwrap();
        let other = Mutation { edit: Edit::deletion(at - 2..at + "self.port".len()), ..drop };
        assert_eq!(crash_steer(&gone, &other, text), 1.0);
    }

    #[test]
    fn normalization_ignores_spacing_but_not_tokens() {
        assert_eq!(normalize("x = a+1\n"), normalize("x = a + 1\n"));
        assert_ne!(normalize("x = a+1\n"), normalize("x = a-1\n"));
        assert_ne!(normalize("return not x\n"), normalize("return notx\n"));
        assert_ne!(normalize("if x:\n    y\n"), normalize("if x:\ny\n"));
    }

    #[test]
    fn the_dedupe_key_tells_patched_files_apart_by_their_edited_lines_alone() {
        let text = "def f(a, b):\n    x = a + 1\n    return x * b\n\ndef g():\n    return 2\n";
        let key = |edits: Vec<(&str, &str)>| {
            let edits = edits.into_iter().map(|(from, to)| {
                let at = text.find(from).unwrap();
                Edit { range: at..at + from.len(), content: to.to_string() }
            });
            let patch = Patch::new("m.py", edits.collect()).unwrap();
            super::dedupe_key(text, &patch.apply(text), &patch)
        };
        // The same file from a token edit, a whole-line edit and a two-line edit.
        let token = key(vec![("+ 1", "+ 2")]);
        assert_eq!(token, key(vec![("    x = a + 1\n", "    x = a+2\n")]));
        assert_eq!(token, key(vec![("x = a + 1\n    return x * b", "x = a + 2\n    return x * b")]));
        assert_ne!(token, key(vec![("+ 1", "- 2")]));
        // The same new text at another place is another file.
        assert_ne!(key(vec![("return 2", "return x * b")]), key(vec![("return x * b", "return x * b")]));
    }

    #[test]
    fn neural_rewrites_are_reindented_and_minimized() {
        let old = "    def f(self):\n        return 1\n";
        assert_eq!(reindent("def f(self):\n    return 2\n", old), "    def f(self):\n        return 2\n");
        // Mined style: the header at column 0, the body where it was in the file.
        let mined = "@cached\ndef f(self,\n      x):\n        if x:\n            return 2\n";
        assert_eq!(
            reindent(mined, "    @cached\n    def f(self,\n          x):\n        return 1\n"),
            "    @cached\n    def f(self,\n          x):\n        if x:\n            return 2\n"
        );
        let edit = minimal_edit(old, "    def f(self):\n        return 2\n", 100);
        assert_eq!((edit.range, edit.content.as_str()), (132..133, "2"));
    }
}
