//! The held-out suite part of the repair bench: one `fix` per bug and source configuration, patches judged by hidden tests.

use deepdebug::repair::candidate::NeuralLimits;
use deepdebug::repair::defaults::{LmChoice, ModelChoice, SourceChoice, TemplatesChoice};
use deepdebug::repair::fix::{fix, FixOptions, FixOutcome, NeuralOptions, RankOptions, SearchEnd};
use deepdebug::repair::search::SourceKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which sources a configuration turns on (operators and combinations always).
#[derive(Debug, Clone, Copy)]
struct Config {
    name: &'static str,
    templates: bool,
    lm: Lm,
    /// The bundled patcher (`fix`'s default with SmolLM2: 2 functions × 8 samples).
    patcher: bool,
    /// The failing test's message and locals in the models' prompts (`fix`'s default).
    traces: bool,
}

/// The language model of a configuration's cloze source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lm {
    Off,
    Smollm,
    Gemma,
}

const CONFIGS: [Config; 8] = [
    Config { name: "operators", templates: false, lm: Lm::Off, patcher: false, traces: true },
    Config { name: "templates", templates: true, lm: Lm::Off, patcher: false, traces: true },
    Config { name: "lm", templates: false, lm: Lm::Smollm, patcher: false, traces: true },
    Config { name: "lm-gemma", templates: false, lm: Lm::Gemma, patcher: false, traces: true },
    // Operators and templates with the trained patcher: what the patcher adds to them.
    Config { name: "patcher", templates: true, lm: Lm::Off, patcher: true, traces: true },
    // Every source but the patcher (the "all" of the benches before the patcher was on by default).
    Config { name: "no-patcher", templates: true, lm: Lm::Smollm, patcher: false, traces: true },
    // `fix`'s defaults (`SourceChoice::default()`): every source, traces in the prompts.
    Config { name: "all", templates: true, lm: Lm::Smollm, patcher: true, traces: true },
    // The same without traces in the prompts (their A/B).
    Config { name: "no-traces", templates: true, lm: Lm::Smollm, patcher: true, traces: false },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Genuine,
    PlausibleOnly,
    NotFixed,
    Error,
}

struct Row {
    bug: String,
    kind: String,
    verdict: Verdict,
    seconds: f64,
    /// Not fixed and the search stopped before its deadline.
    stopped_early: bool,
    /// Language-model candidates admitted, and proposed (parse share = admitted+dupes / proposed).
    lm_generated: usize,
    lm_proposed: usize,
    lm_unparseable: usize,
    lm_seconds: f64,
}

pub fn run(manifest: &Path, timeout: Duration, workers: usize, rank: Option<&RankOptions>) {
    let suite = manifest.join("datasets/suite");
    let filter = std::env::var("BENCH_SUITE_FILTER").unwrap_or_default();
    let bugs = bugs(&suite, &filter);
    let wanted = std::env::var("BENCH_CONFIGS").unwrap_or_else(|_| "operators,templates,lm,all".into());
    let mut summaries = Vec::new();
    for config in CONFIGS.iter().filter(|c| wanted.split(',').any(|w| w.trim() == c.name)) {
        let gguf = match config.lm {
            Lm::Off if config.patcher => deepdebug::model::smollm::find_gguf(),
            Lm::Off => None,
            Lm::Smollm => deepdebug::model::smollm::find_gguf(),
            Lm::Gemma => deepdebug::model::smollm::find_gemma_gguf(),
        };
        if (config.lm != Lm::Off || config.patcher) && gguf.is_none() {
            println!("config {}: skipped, its language model ({:?}) is not installed", config.name, config.lm);
            continue;
        }
        let rows: Vec<Row> = bugs
            .iter()
            .map(|bug| {
                let row = run_bug(bug, *config, timeout, workers, rank);
                println!(
                    "  {:<10} {:<40} {:<15} {:>6.1}s",
                    config.name,
                    row.bug,
                    format!("{:?}", row.verdict),
                    row.seconds
                );
                row
            })
            .collect();
        summaries.push((config.name, rows));
    }
    print_tables(&summaries, timeout);
}

fn bugs(suite: &Path, filter: &str) -> Vec<PathBuf> {
    let mut bugs: Vec<PathBuf> = std::fs::read_dir(suite)
        .expect("datasets/suite exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("bug.json").is_file() && p.to_string_lossy().contains(filter))
        .collect();
    bugs.sort();
    bugs
}

/// What `fix` runs with for `config`: `fix`'s defaults (`SourceChoice::default()`) with the
/// sources the configuration leaves out turned off.
fn options(repo: PathBuf, config: Config, timeout: Duration, workers: usize, rank: Option<&RankOptions>) -> FixOptions {
    let defaults = SourceChoice::default();
    let choice = SourceChoice {
        lm: match config.lm {
            Lm::Off => LmChoice::None,
            Lm::Smollm => defaults.lm,
            Lm::Gemma => LmChoice::Gemma,
        },
        model: if config.patcher { defaults.model.clone() } else { ModelChoice::None },
        templates: if config.templates { defaults.templates.clone() } else { TemplatesChoice::None },
        traces: config.traces,
        ..defaults
    };
    let mut sources = choice.resolve().expect("the configuration's models are installed");
    sources.rank = rank.cloned();
    if config.patcher && sources.neural.is_none() {
        // Without language-model lines `fix` leaves the bundled patcher off; here it runs alone.
        let model = deepdebug::model::bundled::patcher_dir().expect("write the bundled patcher");
        let limits = NeuralLimits { traces: config.traces, ..NeuralLimits::bundled() };
        sources.neural = Some(NeuralOptions { model, limits, bundled: true });
    }
    FixOptions { jobs: workers, ..FixOptions::new(repo, timeout, sources) }
}

fn run_bug(bug: &Path, config: Config, timeout: Duration, workers: usize, rank: Option<&RankOptions>) -> Row {
    let name = bug.file_name().unwrap_or_default().to_string_lossy().to_string();
    let kind = name.split('-').next().unwrap_or_default().to_string();
    let kind = if name.starts_with("missing-call") {
        "missing-call".into()
    } else if name.starts_with("missing-statement") {
        "missing-statement".into()
    } else if name.starts_with("far-constant") {
        "far-constant".into()
    } else {
        kind
    };
    let scratch = tempfile::tempdir().expect("temp dir");
    let repo = scratch.path().join("project");
    copy_dir(&bug.join("project"), &repo);
    let mut row = Row {
        bug: name,
        kind,
        verdict: Verdict::Error,
        seconds: 0.0,
        stopped_early: false,
        lm_generated: 0,
        lm_proposed: 0,
        lm_unparseable: 0,
        lm_seconds: 0.0,
    };
    match fix(&options(repo.clone(), config, timeout, workers, rank), &|_| {}) {
        Ok(outcome) => {
            if let Ok(dir) = std::env::var("BENCH_REPORTS") {
                save_report(&Path::new(&dir).join(config.name), bug, &repo, &outcome, &row.bug);
            }
            judge(bug, &repo, &outcome, &mut row);
        }
        Err(err) => eprintln!("{}: {err}", row.bug),
    }
    row
}

/// `BENCH_REPORTS=DIR`: the run's `--json` report, with every plausible candidate judged by
/// the hidden tests (`DIR/CONFIG/BUG.json`), to study the ranking of plausible patches.
fn save_report(dir: &Path, bug: &Path, repo: &Path, outcome: &FixOutcome, name: &str) {
    let mut report = serde_json::to_value(deepdebug::report::FixReport::new(outcome, &repo.display().to_string()))
        .expect("report serializes");
    let mut judged = serde_json::Map::new();
    for v in outcome.validated.iter().filter(|v| v.outcome.is_plausible()) {
        let c = &outcome.candidates[v.candidate_id.0];
        let scratch = tempfile::tempdir().expect("temp dir");
        let copy = scratch.path().join("project");
        copy_dir(repo, &copy);
        std::fs::write(copy.join(&c.patch.file), &c.patched_text).expect("write the patched file");
        let verdict = format!("{:?}", judge_tree(bug, &copy));
        let entry = serde_json::json!({"verdict": verdict, "source": c.source.name(), "description": c.description});
        judged.insert(c.id.0.to_string(), entry);
    }
    report["judged"] = serde_json::Value::Object(judged);
    std::fs::create_dir_all(dir).expect("reports dir");
    std::fs::write(dir.join(format!("{name}.json")), serde_json::to_string_pretty(&report).expect("json"))
        .expect("write the report");
}

fn judge(bug: &Path, repo: &Path, outcome: &FixOutcome, row: &mut Row) {
    row.seconds = outcome.elapsed.as_secs_f64();
    if let Some((_, lm)) = outcome.sources.iter().find(|(k, _)| *k == SourceKind::LanguageModel) {
        (row.lm_generated, row.lm_proposed, row.lm_unparseable) = (lm.generated, lm.proposed, lm.unparseable);
    }
    row.lm_seconds = outcome.lm.as_ref().map_or(0.0, |lm| lm.seconds);
    let Some(best) = outcome.best_candidate() else {
        row.verdict = Verdict::NotFixed;
        row.stopped_early = outcome.search_end == SearchEnd::Exhausted;
        return;
    };
    std::fs::write(repo.join(&best.patch.file), &best.patched_text).expect("write the patched file");
    row.verdict = judge_tree(bug, repo);
}

/// The hidden tests' verdict on a patched copy of the bug's project.
fn judge_tree(bug: &Path, repo: &Path) -> Verdict {
    let check = bug.parent().expect("suite dir").join("check.py");
    let status = std::process::Command::new("python3")
        .arg(check)
        .arg("--judge")
        .arg(bug)
        .arg(repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status.map(|s| s.code()) {
        Ok(Some(0)) => Verdict::Genuine,
        Ok(Some(1)) => Verdict::PlausibleOnly,
        _ => Verdict::Error,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from).into_iter().filter_map(Result::ok) {
        let rel = entry.path().strip_prefix(from).expect("under from");
        if rel.components().any(|c| c.as_os_str() == "__pycache__" || c.as_os_str() == ".pytest_cache") {
            continue;
        }
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] })
}

fn print_tables(summaries: &[(&str, Vec<Row>)], timeout: Duration) {
    println!("\nheld-out suite: {}s budget per bug", timeout.as_secs());
    println!("| config | bugs | genuine | plausible-only | not fixed | errors | median time-to-fix | unfixed that stopped before the deadline | LM candidates/s | LM parse share |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, rows) in summaries {
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        let fixed: Vec<f64> = rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Genuine | Verdict::PlausibleOnly))
            .map(|r| r.seconds)
            .collect();
        let unfixed = count(Verdict::NotFixed);
        let early = rows.iter().filter(|r| r.stopped_early).count();
        let (generated, proposed, unparseable, seconds) = rows.iter().fold((0, 0, 0, 0.0), |(g, p, u, s), r| {
            (g + r.lm_generated, p + r.lm_proposed, u + r.lm_unparseable, s + r.lm_seconds)
        });
        let lm_rate = if seconds > 0.0 { format!("{:.1}", generated as f64 / seconds) } else { "-".into() };
        let parse = if proposed > 0 {
            format!("{:.0}%", 100.0 * (proposed - unparseable) as f64 / proposed as f64)
        } else {
            "-".into()
        };
        println!(
            "| {name} | {} | {} | {} | {unfixed} | {} | {} | {early}/{unfixed} | {lm_rate} | {parse} |",
            rows.len(),
            count(Verdict::Genuine),
            count(Verdict::PlausibleOnly),
            count(Verdict::Error),
            median(fixed).map_or_else(|| "n/a".into(), |m| format!("{m:.1}s")),
        );
    }
    println!("\ngenuine fixes per kind:");
    let mut kinds: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, rows)) in summaries.iter().enumerate() {
        for r in rows {
            let entry = kinds.entry(r.kind.as_str()).or_insert_with(|| vec![0; summaries.len()]);
            entry[i] += usize::from(r.verdict == Verdict::Genuine);
        }
    }
    println!("| kind | {} |", summaries.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" | "));
    println!("|---|{}", "---|".repeat(summaries.len()));
    for (kind, counts) in kinds {
        println!("| {kind} | {} |", counts.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | "));
    }
}
