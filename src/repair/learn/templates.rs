//! Fix templates learned from real commits (in the manner of Getafix), and their application at a line.
//!
//! A template is the minimal token edit of a mined fix, widened to the smallest syntax node
//! that holds it and abstracted: project identifiers become `$N` holes, string literals `$S`
//! holes, and (in a second, general form) subexpressions both sides share `$E` holes, while
//! library vocabulary stays as written: keywords, operators, numbers, Python builtins, names
//! after a dot and keyword-argument names. Identical templates are clustered and ranked by the
//! number of distinct commits they were seen in.
//!
//! The bundled `datasets/templates.json` was made from the fix-pair corpus
//! (`/work/shared/corpus/fix-pairs.jsonl.gz`, see its README) with
//!
//! ```text
//! deepdebug templates --data fix-pairs.jsonl.gz --out datasets/templates.json
//! ```
//!
//! i.e. the defaults: pylint-dev/pylint (GPL-2.0) and pylint-dev/astroid (LGPL-2.1) and test
//! files left out, commits with more than 30 rows left out, support of at least 3 commits,
//! the best 2000 templates.

mod apply;
mod extract;
mod learn;
mod pattern;
mod tokens;

pub use extract::extract;
pub use learn::{learn, learn_from_jsonl, LearnConfig};
pub use pattern::{render, Context, Piece, Template, TemplateKind};

use crate::patch::Edit;
use crate::python::Parsed;
use crate::repair::learn::pairs::PairsError;
use apply::{Index, LineView};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

/// Bumped when the file format changes.
pub const TEMPLATES_FORMAT_VERSION: u32 = 1;

/// The committed `datasets/templates.json`.
const BUNDLED: &str = include_str!("../../../datasets/templates.json");

/// The on-disk form of learned templates (`templates.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplatesFile {
    pub format_version: u32,
    /// Rows read.
    pub pairs_read: usize,
    /// Rows left after the repository, test-file and broad-commit filters.
    pub pairs_kept: usize,
    /// Kept rows whose fix is one small edit that gave a template.
    pub pairs_used: usize,
    /// Distinct templates found, before the support cut.
    pub templates_found: usize,
    pub min_support: u32,
    pub max_commit_rows: usize,
    pub excluded_repos: Vec<String>,
    /// Best supported first.
    pub templates: Vec<TemplateRecord>,
}

/// One template in `templates.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateRecord {
    /// Rank, from 1.
    pub id: u32,
    /// `expression`, `statement`, `insert-statement` or `delete-statement`.
    pub kind: String,
    /// Tokens of the buggy and the fixed code; `$N0`, `$S0`, `$E0` are holes.
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Distinct commits and repositories the template was seen in.
    pub commits: u32,
    pub repos: u32,
    /// The first commit it was seen in, `owner/name@commit12`.
    pub example: String,
    /// Expression templates: `condition` or `value`, where the rewritten expression stood
    /// (absent: anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

impl TemplatesFile {
    /// Pretty JSON with one template per line.
    ///
    /// # Panics
    /// Never: the file holds only strings and numbers.
    #[must_use]
    pub fn to_json(&self) -> String {
        let header = TemplatesFile { templates: Vec::new(), excluded_repos: self.excluded_repos.clone(), ..*self };
        let head = serde_json::to_string_pretty(&header).expect("templates serialize");
        if self.templates.is_empty() {
            return head;
        }
        let rows: Vec<String> =
            self.templates.iter().map(|t| serde_json::to_string(t).expect("templates serialize")).collect();
        head.replacen("\"templates\": []", &format!("\"templates\": [\n    {}\n  ]", rows.join(",\n    ")), 1)
    }
}

/// Errors reading, learning or checking templates.
#[derive(Debug, thiserror::Error)]
pub enum TemplatesError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("`{path}`: {message}")]
    Parse { path: String, message: String },
    #[error("`{path}`: format_version {found} is not supported (expected {TEMPLATES_FORMAT_VERSION})")]
    Version { path: String, found: u32 },
    #[error("template #{id}: unknown kind `{kind}`")]
    Kind { id: u32, kind: String },
    #[error(transparent)]
    Pairs(#[from] PairsError),
}

/// One edit a template proposes.
#[derive(Debug, Clone)]
pub struct TemplateMutation {
    pub edit: Edit,
    /// E.g. "template #12 (`$N0.keys` → `$N0.items`, 41 commits)".
    pub description: String,
    /// Distinct commits the template was seen in.
    pub support: u32,
    /// In 0..=1: log-scaled support relative to the best supported template.
    pub weight: f64,
}

#[derive(Debug, Clone)]
struct Entry {
    id: u32,
    template: Template,
    commits: u32,
}

/// Learned templates, ready to apply.
#[derive(Debug, Clone)]
pub struct Templates {
    /// Best supported first.
    entries: Vec<Entry>,
    index: Index,
}

impl Templates {
    /// # Errors
    /// When a record has an unknown kind.
    pub fn from_file(file: &TemplatesFile) -> Result<Templates, TemplatesError> {
        let mut entries = Vec::with_capacity(file.templates.len());
        for record in &file.templates {
            let kind = TemplateKind::from_name(&record.kind)
                .ok_or_else(|| TemplatesError::Kind { id: record.id, kind: record.kind.clone() })?;
            let pieces = |tokens: &[String]| tokens.iter().map(|t| Piece::parse(t)).collect();
            let context = match record.context.as_deref() {
                None => None,
                Some(name) => Some(
                    Context::from_name(name)
                        .ok_or_else(|| TemplatesError::Kind { id: record.id, kind: format!("context {name}") })?,
                ),
            };
            let template = Template { kind, before: pieces(&record.before), after: pieces(&record.after), context };
            entries.push(Entry { id: record.id, template, commits: record.commits });
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.commits));
        let index = Index::new(&entries.iter().map(|e| &e.template).collect::<Vec<_>>());
        Ok(Templates { entries, index })
    }

    /// Read a `templates.json` written by `deepdebug templates`.
    ///
    /// # Errors
    /// When the file cannot be read or parsed, or has another format version.
    pub fn load(path: &Path) -> Result<Templates, TemplatesError> {
        let name = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| TemplatesError::Read { path: name.clone(), source })?;
        Templates::parse(&text, &name)
    }

    /// The templates committed at `datasets/templates.json` (parsed once).
    ///
    /// # Panics
    /// Never for the committed file (a unit test reads it).
    #[must_use]
    pub fn bundled() -> &'static Templates {
        static BUNDLED_TEMPLATES: OnceLock<Templates> = OnceLock::new();
        BUNDLED_TEMPLATES.get_or_init(|| {
            Templates::parse(BUNDLED, "datasets/templates.json").expect("bundled templates.json is valid")
        })
    }

    fn parse(text: &str, name: &str) -> Result<Templates, TemplatesError> {
        let file: TemplatesFile = serde_json::from_str(text)
            .map_err(|e| TemplatesError::Parse { path: name.to_string(), message: e.to_string() })?;
        if file.format_version != TEMPLATES_FORMAT_VERSION {
            return Err(TemplatesError::Version { path: name.to_string(), found: file.format_version });
        }
        Templates::from_file(&file)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The templates with their support in commits, best supported first.
    pub fn iter(&self) -> impl Iterator<Item = (&Template, u32)> {
        self.entries.iter().map(|e| (&e.template, e.commits))
    }

    /// Up to `max` edits of the templates that match at 1-based `line`, best supported first.
    /// Holes of the fixed side that the match does not bind take names in scope (parameters and
    /// locals of the enclosing function).
    #[must_use]
    pub fn mutations_at_line(&self, parsed: &Parsed, line: usize, max: usize) -> Vec<TemplateMutation> {
        let Some(view) = line.checked_sub(1).and_then(|row| LineView::new(parsed, row)) else { return Vec::new() };
        let top = self.entries.first().map_or(1, |e| e.commits.max(1));
        let mut scope = None;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for i in self.index.candidates(&view.token_texts()) {
            let entry = &self.entries[i];
            for edit in view.edits(&entry.template, &mut scope) {
                if out.len() == max {
                    return out;
                }
                if seen.insert((edit.range.clone(), edit.content.clone())) {
                    out.push(TemplateMutation {
                        edit,
                        description: format!("template #{} ({}, {} commits)", entry.id, entry.template, entry.commits),
                        support: entry.commits,
                        weight: f64::from(entry.commits).ln_1p() / f64::from(top).ln_1p(),
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::Patch;
    use crate::repair::learn::pairs::{PairRow, RowFilter};

    fn func(body: &str) -> String {
        format!("def f(d, k, xs):\n    total = 0\n{body}    return total\n")
    }

    /// The templates of a pair of function bodies, as text.
    fn extracted(before: &str, after: &str) -> Vec<String> {
        extract(&func(before), &func(after)).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_method_swap_keeps_the_method_names_and_abstracts_the_receiver() {
        let got = extracted("    total = d.keys()\n", "    total = d.items()\n");
        assert_eq!(got, ["`$N0.keys` → `$N0.items`", "`$E0.keys` → `$E0.items`"]);
    }

    #[test]
    fn subscripts_become_get_calls_with_both_names_abstracted() {
        let got = extracted("    total = d[k]\n", "    total = d.get(k)\n");
        assert_eq!(got[0], "`$N0[$N1]` → `$N0.get($N1)`");
        let got = extracted("    total = d['size']\n", "    total = d.get('size')\n");
        assert_eq!(got[0], "`$N0[$S0]` → `$N0.get($S0)`");
    }

    #[test]
    fn builtins_and_operators_stay_concrete_and_shared_subexpressions_become_holes() {
        let got = extracted("    total = len(xs) - 1\n", "    total = len(xs)\n");
        assert_eq!(got, ["`len($N0) - 1` → `len($N0)`", "`$E0 - 1` → `$E0`"]);
        let got = extracted("    if d == None:\n        total = 1\n", "    if d is None:\n        total = 1\n");
        assert_eq!(got, ["`$N0 == None` → `$N0 is None`", "`$E0 == None` → `$E0 is None`"]);
        let got = extracted("    total = sum(xs, k)\n", "    total = list(sum(xs, k))\n");
        assert_eq!(got, ["`sum($N0, $N1)` → `list(sum($N0, $N1))`", "`$E0` → `list($E0)`"]);
    }

    #[test]
    fn inserted_and_deleted_statements_are_templates_of_their_own() {
        let got = extracted("    total += 1\n", "    total += 1\n    if not xs:\n        return\n");
        assert!(got.is_empty(), "two lines added: {got:?}");
        let got = extracted(
            "    for x in xs:\n        total += x\n",
            "    for x in xs:\n        total += x\n        break\n",
        );
        assert_eq!(got, ["insert `break`"]);
        let got = extracted("    d.clear()\n    total = 1\n", "    total = 1\n");
        assert_eq!(got, ["delete `$N0.clear()`"]);
    }

    #[test]
    fn renames_layout_and_larger_edits_give_no_template() {
        assert!(extracted("    total = d\n", "    total = k\n").is_empty(), "variable renamed");
        assert!(extracted("    total = d  # x\n", "    total  =  d\n").is_empty(), "layout only");
        assert!(extracted("    total = d\n    k = 1\n", "    total = xs\n    k = 2\n").is_empty(), "two lines changed");
        assert!(
            extracted("    total = d\n", "    total = sorted(d, key=len, reverse=True)[0]\n").is_empty(),
            "too many tokens"
        );
        assert!(extracted("    total = d\n", "    total = (d\n").is_empty(), "does not parse");
        assert!(extracted("    total = os.sep\n", "    total = SEP\n").is_empty(), "a project name for an expression");
        assert!(extracted("    total = d\n", "    total = conv(d)\n").is_empty(), "a call of a project function");
        assert!(extracted("    import json as d\n", "    import simplejson as d\n").is_empty(), "an import");
        assert!(extracted("    total: list = d\n", "    total: List = d\n").is_empty(), "an annotation");
    }

    fn row(repo: &str, commit: &str, before: &str, after: &str) -> PairRow {
        PairRow {
            repo: repo.into(),
            commit: commit.into(),
            path: "pkg/mod.py".into(),
            before: func(before),
            after: func(after),
            context: None,
        }
    }

    #[test]
    fn support_counts_distinct_commits_and_repositories_after_the_filters() {
        let mut rows = vec![
            row("a/one", "c1", "    total = d.keys()\n", "    total = d.items()\n"),
            row("a/one", "c1", "    total = k.keys()\n", "    total = k.items()\n"),
            row("a/one", "c2", "    total = xs.keys()\n", "    total = xs.items()\n"),
            row("b/two", "c3", "    total = d.keys()\n", "    total = d.items()\n"),
            row("gpl/three", "c4", "    total = d.keys()\n", "    total = d.items()\n"),
            row("b/two", "c5", "    total = d.keys()\n", "    total = d.items()\n"),
            row("b/two", "c6", "    total = d.pop()\n", "    total = d.popitem()\n"),
        ];
        rows[5].path = "tests/test_mod.py".into();
        // A broad commit: more rows than `max_commit_rows`.
        rows.extend((0..3).map(|_| row("b/two", "c7", "    total = d.keys()\n", "    total = d.items()\n")));
        let config = LearnConfig {
            filter: RowFilter { exclude_repos: vec!["gpl/".into()], exclude_test_paths: true },
            min_support: 2,
            max_commit_rows: 2,
            max_templates: 10,
        };
        let file = learn(&rows, &config);
        assert_eq!((file.pairs_read, file.pairs_kept, file.pairs_used), (10, 5, 5));
        let shown: Vec<(String, u32, u32)> =
            Templates::from_file(&file).unwrap().iter().map(|(t, commits)| (t.to_string(), commits, 0)).collect();
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(shown.iter().all(|(t, commits, _)| t.contains(".keys") && *commits == 3), "{shown:?}");
        assert_eq!(file.templates[0].repos, 2);
        assert_eq!(file.templates[0].example, "a/one@c1");
        assert_eq!(file.templates[0].id, 1);
    }

    fn templates(rows: &[(&str, &str, &str, u32)]) -> Templates {
        let tokens = |s: &str| s.split_whitespace().map(String::from).collect();
        let records = rows
            .iter()
            .enumerate()
            .map(|(i, (kind, before, after, commits))| TemplateRecord {
                id: u32::try_from(i + 1).unwrap(),
                kind: (*kind).to_string(),
                before: tokens(before),
                after: tokens(after),
                commits: *commits,
                repos: 1,
                example: String::new(),
                context: None,
            })
            .collect();
        let file = TemplatesFile {
            format_version: TEMPLATES_FORMAT_VERSION,
            pairs_read: 0,
            pairs_kept: 0,
            pairs_used: 0,
            templates_found: 0,
            min_support: 1,
            max_commit_rows: 30,
            excluded_repos: Vec::new(),
            templates: records,
        };
        Templates::from_file(&file).unwrap()
    }

    fn applied(templates: &Templates, src: &str, line: usize) -> Vec<String> {
        let parsed = Parsed::new(src);
        templates
            .mutations_at_line(&parsed, line, 50)
            .into_iter()
            .map(|m| Patch::single("m.py", m.edit).apply(src))
            .collect()
    }

    #[test]
    fn a_matching_line_is_rewritten_and_other_lines_are_left_alone() {
        let t = templates(&[
            ("expression", "$E0 . keys", "$E0 . items", 41),
            ("expression", "$N0 [ $N1 ]", "$N0 . get ( $N1 )", 9),
        ]);
        let src = "def f(self, d):\n    for k in self.cache.keys():\n        print(d[k])\n    return d\n";
        assert_eq!(
            applied(&t, src, 2),
            ["def f(self, d):\n    for k in self.cache.items():\n        print(d[k])\n    return d\n"]
        );
        assert_eq!(
            applied(&t, src, 3),
            ["def f(self, d):\n    for k in self.cache.keys():\n        print(d.get(k))\n    return d\n"]
        );
        assert!(applied(&t, src, 4).is_empty());
        let m = &t.mutations_at_line(&Parsed::new(src), 2, 5)[0];
        assert_eq!(m.description, "template #1 (`$E0.keys` → `$E0.items`, 41 commits)");
        assert!((m.weight - 1.0).abs() < 1e-9);
        let m = &t.mutations_at_line(&Parsed::new(src), 3, 5)[0];
        assert!((m.weight - 10f64.ln() / 42f64.ln()).abs() < 1e-9, "{}", m.weight);
    }

    #[test]
    fn expression_templates_are_learned_and_applied_in_the_context_they_were_seen_in() {
        let got: Vec<Option<Context>> =
            extract(&func("    if xs:\n        total = 1\n"), &func("    if xs is not None:\n        total = 1\n"))
                .iter()
                .map(|t| t.context)
                .collect();
        assert!(!got.is_empty() && got.iter().all(|c| *c == Some(Context::Condition)), "{got:?}");
        let got = extract(&func("    total = sum(xs)\n"), &func("    total = sum(xs) + 1\n"));
        assert!(got.iter().all(|t| t.context == Some(Context::Value)), "{got:?}");
        // Seen in conditions, `$E0 is not None` rewrites conditions (through parentheses and
        // `not`), never a value it would turn into a boolean.
        let mut t = templates(&[("expression", "$N0", "$N0 is not None", 5)]);
        t.entries[0].template.context = Some(Context::Condition);
        let src = "def f(a, b):\n    if not (a):\n        return [b, a]\n";
        assert_eq!(applied(&t, src, 2), ["def f(a, b):\n    if not (a is not None):\n        return [b, a]\n"]);
        assert!(applied(&t, src, 3).is_empty());
    }

    #[test]
    fn a_pattern_matches_whole_syntax_nodes_only() {
        let t = templates(&[("expression", "$E0 - 1", "$E0", 5), ("expression", "$N0 == None", "$N0 is None", 5)]);
        // `a * b - 1` is `(a * b) - 1`: `b - 1` is not a node, and `... == None` has no lone name
        // on its left. An operator expression is parenthesized next to an operator, to be safe.
        let src = "def f(a, b):\n    return a * b - 1 == None\n";
        assert_eq!(applied(&t, src, 2), ["def f(a, b):\n    return (a * b) == None\n"]);
        // Equal holes must bind equal text.
        let t = templates(&[("expression", "$N0 + $N0", "2 * $N0", 5)]);
        assert!(applied(&t, "def f(a, b):\n    return a + b\n", 2).is_empty());
        assert_eq!(applied(&t, "def f(a, b):\n    return a + a\n", 2), ["def f(a, b):\n    return 2 * a\n"]);
    }

    #[test]
    fn expressions_bound_to_holes_keep_their_precedence() {
        let t = templates(&[("expression", "$E0 is None", "not $E0", 5), ("expression", "$N0 ( $E0 )", "$E0", 4)]);
        let src = "def f(a, b):\n    return g(a or b) is None\n";
        let got = applied(&t, src, 2);
        assert!(got.contains(&"def f(a, b):\n    return not g(a or b)\n".to_string()), "{got:#?}");
        let src = "def f(a, b):\n    return g(a or b) * 2\n";
        assert_eq!(applied(&t, src, 2), ["def f(a, b):\n    return (a or b) * 2\n"]);
        let src = "def f(a, b):\n    return g(a or b)\n";
        assert_eq!(applied(&t, src, 2), ["def f(a, b):\n    return a or b\n"]);
    }

    #[test]
    fn new_names_are_taken_from_the_scope_of_the_function() {
        let t = templates(&[
            ("expression", "$N0 ( $N1 )", "$N0 ( $N1 , $N2 )", 5),
            ("insert-statement", "", "return $N0", 3),
        ]);
        let src = "import os.path\nfrom m import g as h\nLIMIT = 3\ndef f(a, b):\n    c = g(a)\n    return c\n";
        let got = applied(&t, src, 5);
        for want in [
            "    c = g(a, a)\n",
            "    c = g(a, b)\n",
            "    c = g(a, c)\n",
            "    return a\n    c = g(a)\n",
            "    c = g(a)\n    return b\n",
        ] {
            assert!(got.iter().any(|p| p.contains(want)), "{want:?} missing: {got:#?}");
        }
        assert!(!got.iter().any(|p| p.contains("g(a, LIMIT)") || p.contains("g(a, os)")), "{got:#?}");
        // The object of an attribute may also be a name of the module (an import).
        let t = templates(&[("expression", "isinstance ( $N0 , str )", "isinstance ( $N0 , $N1 . string_types )", 3)]);
        let src = "import six\ndef f(a):\n    return isinstance(a, str)\n";
        let want = ["a", "six"].map(|n| src.replace("str)", &format!("{n}.string_types)")));
        assert_eq!(applied(&t, src, 3), want);
        // Nothing is inserted before a line that continues a statement.
        let t = templates(&[("insert-statement", "", "return $N0", 3)]);
        let src = "def f(a, b):\n    c = g(a,\n          b)\n    return c\n";
        assert!(applied(&t, src, 3).is_empty(), "{:#?}", applied(&t, src, 3));
        assert!(applied(&t, src, 4).iter().any(|p| p.contains("    return a\n    return c")));
        // A module-level line has no function scope to draw from.
        assert!(applied(&t, "x = g(y)\n", 1).is_empty());
    }

    #[test]
    fn names_that_are_not_values_are_not_rewritten() {
        let t = templates(&[("expression", "$E0", "list ( $E0 )", 5)]);
        let src = "def f(a, b=1, *c):\n    a.x, d = g(key=lambda e: e)\n";
        let mut got: Vec<String> = applied(&t, src, 1).into_iter().chain(applied(&t, src, 2)).collect();
        got.sort();
        let mut want = [
            "def f(a, b=list(1), *c):\n    a.x, d = g(key=lambda e: e)\n",
            "def f(a, b=1, *c):\n    list(a).x, d = g(key=lambda e: e)\n",
            "def f(a, b=1, *c):\n    a.x, d = list(g(key=lambda e: e))\n",
            "def f(a, b=1, *c):\n    a.x, d = list(g)(key=lambda e: e)\n",
            "def f(a, b=1, *c):\n    a.x, d = g(key=list(lambda e: e))\n",
            "def f(a, b=1, *c):\n    a.x, d = g(key=lambda e: list(e))\n",
        ];
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn statements_are_deleted_only_when_the_whole_line_matches() {
        let t = templates(&[("delete-statement", "$N0 . clear ( )", "", 3)]);
        assert_eq!(applied(&t, "def f(d):\n    d.clear()\n    return d\n", 2), ["def f(d):\n    return d\n"]);
        assert!(applied(&t, "def f(d):\n    x = d.clear()\n    return d\n", 2).is_empty());
    }

    #[test]
    fn at_most_max_mutations_come_back_best_supported_first() {
        let t = templates(&[("expression", "$E0", "list ( $E0 )", 44), ("expression", "$E0", "str ( $E0 )", 30)]);
        let parsed = Parsed::new("def f(a, b):\n    return g(a, b)\n");
        let got = t.mutations_at_line(&parsed, 2, 3);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|m| m.support == 44), "{got:#?}");
        assert!(t.mutations_at_line(&parsed, 2, 0).is_empty());
        assert!(t.mutations_at_line(&parsed, 9, 5).is_empty());
    }

    #[test]
    fn templates_round_trip_through_their_file() {
        let rows: Vec<PairRow> = (0..3)
            .map(|i| row("a/one", &format!("c{i}"), "    total = d.keys()\n", "    total = d.items()\n"))
            .collect();
        let file = learn(&rows, &LearnConfig::default());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("templates.json");
        std::fs::write(&path, file.to_json()).unwrap();
        let loaded: TemplatesFile = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(loaded, file);
        let templates = Templates::load(&path).unwrap();
        assert_eq!(templates.len(), 2);
        std::fs::write(&path, file.to_json().replace("\"format_version\": 1", "\"format_version\": 9")).unwrap();
        assert!(matches!(Templates::load(&path), Err(TemplatesError::Version { found: 9, .. })));
    }

    #[test]
    fn the_bundled_templates_load_and_apply_quickly() {
        let templates = Templates::bundled();
        assert!(templates.len() >= 100, "{}", templates.len());
        let src = "def f(d, k):\n    if d[k] == None:\n        return list(d.keys())[len(d) - 1]\n    return str(k)\n";
        let parsed = Parsed::new(src);
        let started = std::time::Instant::now();
        let mut count = 0;
        for _ in 0..10 {
            for line in 1..=4 {
                count += templates.mutations_at_line(&parsed, line, 1000).len();
            }
        }
        assert!(count > 0);
        // A guard against a blow-up (every template tried on every subexpression), not a
        // measurement: 40 lines take a few ms; 5 s leaves room for a debug build on a loaded
        // machine. Template speed is measured where `fix` spends it (`cargo bench --bench repair`).
        assert!(started.elapsed().as_millis() < 5000, "{:?}", started.elapsed());
    }
}
