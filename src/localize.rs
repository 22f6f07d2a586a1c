//! Fault localization: spectrum-based (Ochiai, DStar) fused with the failing tests' stack traces.

use crate::project::Project;
use crate::pytest::Session;
use crate::python::functions;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A line of a repair target with its suspiciousness.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspiciousLine {
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// Fused score in 0..=1.
    pub score: f64,
    pub ochiai: f64,
    pub dstar: f64,
    /// Stack-trace score: 1 for the innermost project frame of a failing test, decaying outwards.
    pub stack: f64,
}

/// A function ranked by the best score of its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspiciousFunction {
    pub file: String,
    pub qualname: String,
    pub start_line: usize,
    pub end_line: usize,
    pub score: f64,
}

/// Ranked lines and functions, most suspicious first.
#[derive(Debug, Clone, Default)]
pub struct Localization {
    pub lines: Vec<SuspiciousLine>,
    pub functions: Vec<SuspiciousFunction>,
}

const SBFL_WEIGHT: f64 = 0.65;
const STACK_DECAY: f64 = 0.8;

/// Rank the lines of `project`'s repair targets by how likely they hold the bug that makes
/// `baseline`'s failing tests fail.
#[must_use]
pub fn localize(project: &Project, baseline: &Session) -> Localization {
    let targets: BTreeSet<&str> = project.repair_targets().map(|f| f.rel.as_str()).collect();
    let total_failed = baseline.failing().count();
    // (ef, ep) per line.
    let mut spectrum: HashMap<(String, usize), (f64, f64)> = HashMap::new();
    let mut have_coverage = false;
    for test in &baseline.tests {
        let failed = !test.outcome.is_ok();
        for (file, lines) in &test.coverage {
            if !targets.contains(file.as_str()) {
                continue;
            }
            have_coverage |= failed;
            for &line in lines {
                let entry = spectrum.entry((file.clone(), line)).or_default();
                if failed {
                    entry.0 += 1.0;
                } else {
                    entry.1 += 1.0;
                }
            }
        }
    }
    let mut stack: HashMap<(String, usize), f64> = HashMap::new();
    for test in baseline.failing() {
        let Some(failure) = &test.failure else { continue };
        let mut weight = 1.0;
        for frame in failure.frames.iter().rev() {
            if !frame.in_project || !targets.contains(frame.file.as_str()) {
                continue;
            }
            let slot = stack.entry((frame.file.clone(), frame.line)).or_default();
            *slot = slot.max(weight);
            weight *= STACK_DECAY;
        }
    }
    let total_failed = total_failed as f64;
    let mut scored: BTreeMap<(String, usize), (f64, f64)> = BTreeMap::new();
    for (key, &(ef, ep)) in &spectrum {
        if ef == 0.0 {
            continue;
        }
        let ochiai = ef / (total_failed * (ef + ep)).sqrt();
        let nf = total_failed - ef;
        let dstar = ef * ef / (ep + nf + 0.5);
        scored.insert(key.clone(), (ochiai, dstar));
    }
    let max_dstar = scored.values().map(|s| s.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let keys: BTreeSet<(String, usize)> = scored.keys().chain(stack.keys()).cloned().collect();
    let mut lines: Vec<SuspiciousLine> = keys
        .into_iter()
        .map(|key| {
            let (ochiai, dstar) = scored.get(&key).copied().unwrap_or((0.0, 0.0));
            let st = stack.get(&key).copied().unwrap_or(0.0);
            let sbfl = 0.5 * ochiai + 0.5 * dstar / max_dstar;
            let score = if have_coverage { SBFL_WEIGHT * sbfl + (1.0 - SBFL_WEIGHT) * st } else { st };
            SuspiciousLine { file: key.0, line: key.1, score, ochiai, dstar, stack: st }
        })
        .filter(|l| l.score > 0.0)
        .collect();
    // Definition lines (`def f(...):`) are covered by every call; keep them but after body lines.
    let mut functions_out = Vec::new();
    let mut def_lines = BTreeSet::new();
    for file in project.repair_targets() {
        for def in functions(&file.parsed) {
            def_lines.insert((file.rel.clone(), def.start_line));
            let best = lines
                .iter()
                .filter(|l| l.file == file.rel && def.contains_line(l.line))
                .map(|l| l.score)
                .fold(0.0, f64::max);
            if best > 0.0 {
                functions_out.push(SuspiciousFunction {
                    file: file.rel.clone(),
                    qualname: def.qualname.clone(),
                    start_line: def.start_line,
                    end_line: def.end_line,
                    score: best,
                });
            }
        }
    }
    for line in &mut lines {
        if def_lines.contains(&(line.file.clone(), line.line)) {
            line.score *= 0.5;
        }
    }
    lines.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| a.line.cmp(&b.line))
    });
    // Innermost functions first among equals: nested defs are more specific.
    functions_out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| (a.end_line - a.start_line).cmp(&(b.end_line - b.start_line)))
    });
    Localization { lines, functions: functions_out }
}
