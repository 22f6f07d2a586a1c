//! Learning templates from mined pairs: extraction on all cores, clustering of identical
//! templates, support counted in distinct commits and repositories.

use super::extract::extract;
use super::pattern::Template;
use super::{TemplateRecord, TemplatesFile, TEMPLATES_FORMAT_VERSION};
use crate::repair::learn::pairs::{map_rows, PairRow, PairsError, RowFilter};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// How to learn templates.
#[derive(Debug, Clone)]
pub struct LearnConfig {
    /// Rows to leave out (repositories, test files).
    pub filter: RowFilter,
    /// Keep templates seen in at least this many distinct commits.
    pub min_support: u32,
    /// Leave out every row of a commit with more rows than this (broad refactors, not bug fixes).
    pub max_commit_rows: usize,
    /// Keep at most this many templates, the best supported.
    pub max_templates: usize,
}

impl Default for LearnConfig {
    fn default() -> Self {
        LearnConfig {
            filter: RowFilter { exclude_repos: Vec::new(), exclude_test_paths: true },
            min_support: 3,
            max_commit_rows: 30,
            max_templates: 2000,
        }
    }
}

/// What one row contributes.
struct RowTemplates {
    repo: String,
    commit: String,
    kept: bool,
    templates: Vec<Template>,
}

/// Learn templates from a JSON Lines file of mined rows (gzip-compressed or not).
///
/// # Errors
/// When the file cannot be read or a line is not a row.
pub fn learn_from_jsonl(path: &Path, config: &LearnConfig) -> Result<TemplatesFile, PairsError> {
    let rows = map_rows(path, |row| templates_of(row, &config.filter))?;
    Ok(cluster(&rows, config))
}

/// Learn templates from rows in memory.
#[must_use]
pub fn learn(rows: &[PairRow], config: &LearnConfig) -> TemplatesFile {
    let rows: Vec<RowTemplates> = rows.iter().map(|row| templates_of(row, &config.filter)).collect();
    cluster(&rows, config)
}

fn templates_of(row: &PairRow, filter: &RowFilter) -> RowTemplates {
    let kept = filter.keeps(row);
    let templates = if kept { extract(&row.before, &row.after) } else { Vec::new() };
    RowTemplates { repo: row.repo.clone(), commit: row.commit.clone(), kept, templates }
}

/// Commits and repositories a template was seen in, and the first of them.
struct Support<'r> {
    commits: HashSet<(&'r str, &'r str)>,
    repos: HashSet<&'r str>,
    example: (&'r str, &'r str),
}

fn cluster(rows: &[RowTemplates], config: &LearnConfig) -> TemplatesFile {
    let mut commit_rows: HashMap<(&str, &str), usize> = HashMap::new();
    for row in rows {
        *commit_rows.entry((&row.repo, &row.commit)).or_default() += 1;
    }
    let kept: Vec<&RowTemplates> = rows
        .iter()
        .filter(|r| r.kept && commit_rows[&(r.repo.as_str(), r.commit.as_str())] <= config.max_commit_rows)
        .collect();
    let mut support: HashMap<&Template, Support<'_>> = HashMap::new();
    for row in &kept {
        let commit = (row.repo.as_str(), row.commit.as_str());
        for template in &row.templates {
            let entry = support.entry(template).or_insert_with(|| Support {
                commits: HashSet::new(),
                repos: HashSet::new(),
                example: commit,
            });
            entry.commits.insert(commit);
            entry.repos.insert(&row.repo);
        }
    }
    let found = support.len();
    let mut ranked: Vec<(&Template, Support<'_>)> =
        support.into_iter().filter(|(_, s)| s.commits.len() >= config.min_support as usize).collect();
    ranked.sort_by(|(ta, a), (tb, b)| {
        (b.commits.len(), b.repos.len()).cmp(&(a.commits.len(), a.repos.len())).then_with(|| ta.cmp(tb))
    });
    ranked.truncate(config.max_templates);
    TemplatesFile {
        format_version: TEMPLATES_FORMAT_VERSION,
        pairs_read: rows.len(),
        pairs_kept: kept.len(),
        pairs_used: kept.iter().filter(|r| !r.templates.is_empty()).count(),
        templates_found: found,
        min_support: config.min_support,
        max_commit_rows: config.max_commit_rows,
        excluded_repos: config.filter.exclude_repos.clone(),
        templates: ranked.iter().enumerate().map(|(i, (t, s))| record(i + 1, t, s)).collect(),
    }
}

fn record(id: usize, template: &Template, support: &Support<'_>) -> TemplateRecord {
    let (repo, commit) = support.example;
    TemplateRecord {
        id: u32::try_from(id).unwrap_or(u32::MAX),
        kind: template.kind.name().to_string(),
        before: template.before.iter().map(ToString::to_string).collect(),
        after: template.after.iter().map(ToString::to_string).collect(),
        commits: u32::try_from(support.commits.len()).unwrap_or(u32::MAX),
        repos: u32::try_from(support.repos.len()).unwrap_or(u32::MAX),
        example: format!("{repo}@{}", commit.get(..12).unwrap_or(commit)),
        context: template.context.map(|c| c.name().to_string()),
    }
}
