//! Stage `evaluate` (cross-entropy tables, top-k success on held-out executable bugs) and stage `report`.

use super::config::PipelineConfig;
use super::stages::{bug_source, Figures, Layout};
use super::{Manifest, PipelineError, PipelineEvent, Stage};
use crate::inject::BugRow;
use crate::model::{self, Patcher, SampleOptions, Task};
use crate::process::Exit;
use crate::pytest::{Pytest, RunSpec, Session, TestRun};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One cell of the cross-entropy tables (DeepDebug Tables 1–2).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LossRow {
    /// `patch` (the patcher) or `bug-create` (the bug-creator).
    pub model: String,
    /// `forward` (buggy → fixed) or `reversed` (fixed → buggy) held-out pairs.
    pub direction: String,
    /// With the rows' skeleton context, or the focal function alone.
    pub context: bool,
    /// Nats per target token.
    pub loss: f32,
    pub rows: usize,
}

/// Patch success on held-out bugs (DeepDebug Table 5's analogue).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopK {
    pub trace: bool,
    /// Bugs whose tests fail with the bug in place (the others are not counted).
    pub bugs: usize,
    /// Samples drawn per bug: `top_k` counts bugs fixed by any of the first k distinct ones.
    pub k: usize,
    pub top1: usize,
    pub top_k: usize,
    /// Distinct candidates validated.
    pub candidates: usize,
    pub seconds: f64,
}

/// `OUT/evaluation.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evaluation {
    pub losses: Vec<LossRow>,
    pub top_k: Vec<TopK>,
    /// Held-out bugs skipped: their tests did not fail with the bug in place, or the file no
    /// longer held the function.
    pub unusable_bugs: usize,
}

pub(super) fn evaluate(
    cfg: &PipelineConfig,
    layout: &Layout<'_>,
    on_event: &(dyn Fn(PipelineEvent) + Sync),
) -> Result<Figures, PipelineError> {
    let losses = losses(cfg, layout)?;
    for l in &losses {
        on_event(PipelineEvent::Note(format!(
            "loss {} on {} pairs{}: {:.4} ({} rows)",
            l.model,
            l.direction,
            if l.context { "" } else { " without context" },
            l.loss,
            l.rows
        )));
    }
    let bugs: Vec<BugRow> = read_test_bugs(layout)?.into_iter().take(cfg.evaluate.max_bugs).collect();
    let mut patcher = Patcher::load(&layout.model(Task::Patch))?;
    let mut top_k = Vec::new();
    let mut unusable = 0;
    let traces: &[bool] = if cfg.rows.trace { &[false, true] } else { &[false] };
    for &trace in traces {
        let (result, skipped) = success(cfg, &bugs, &mut patcher, trace)?;
        on_event(PipelineEvent::Note(format!(
            "top-1 {}/{} top-{} {}/{} ({} trace)",
            result.top1,
            result.bugs,
            cfg.evaluate.samples,
            result.top_k,
            result.bugs,
            if trace { "with" } else { "without" }
        )));
        unusable = skipped;
        top_k.push(result);
    }
    let evaluation = Evaluation { losses, top_k, unusable_bugs: unusable };
    let text = serde_json::to_string_pretty(&evaluation).expect("evaluation serializes");
    std::fs::write(layout.evaluation(), text).map_err(|e| PipelineError::io("write", &layout.evaluation(), e))?;
    let mut figures = Figures::new();
    figures.insert("evaluation".into(), serde_json::to_value(&evaluation).expect("serializes"));
    Ok(figures)
}

fn read_test_bugs(layout: &Layout<'_>) -> Result<Vec<BugRow>, PipelineError> {
    let path = layout.rows("test-bugs");
    let text = std::fs::read_to_string(&path).map_err(|e| PipelineError::io("read", &path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .map_err(|e| PipelineError::stage(Stage::Evaluate, format!("{}: {e}", path.display())))
        })
        .collect()
}

/// Cross-entropy of both models on the held-out pairs, both directions, with and without context.
fn losses(cfg: &PipelineConfig, layout: &Layout<'_>) -> Result<Vec<LossRow>, PipelineError> {
    let mut out = Vec::new();
    let device = model::t5::device(false).map_err(model::ModelError::from)?;
    for (task, spec) in [(Task::Patch, &cfg.patcher), (Task::BugCreate, &cfg.bug_creator)] {
        let dir = layout.model(task);
        for (direction, rows_task) in [("forward", Task::Patch), ("reversed", Task::BugCreate)] {
            let mut examples = model::data::read_jsonl(
                &layout.pairs("test"),
                rows_task,
                crate::debugger::neural::trajectory_examples,
            )?;
            examples.truncate(cfg.evaluate.loss_rows);
            if examples.is_empty() {
                continue;
            }
            for context in [true, false] {
                let rows: Vec<model::data::Example> = if context {
                    examples.clone()
                } else {
                    examples.iter().map(model::data::without_context).collect()
                };
                let (loss, n) = if spec.is_lora() {
                    let adapter = model::lora::AdapterDir::new(&dir);
                    let mut lcfg = adapter.config()?;
                    // The prompt asks for the model's own task; the rows decide what is scored.
                    let gguf = adapter.base(&lcfg)?;
                    task.name().clone_into(&mut lcfg.task);
                    model::lora::cross_entropy(&gguf, Some(&adapter), &lcfg, &rows, &device)?
                } else {
                    model::cross_entropy(&model::ModelDir::new(&dir), &rows, &device)?
                };
                out.push(LossRow { model: task.name().into(), direction: direction.into(), context, loss, rows: n });
            }
        }
    }
    Ok(out)
}

/// Runs pytest on scratch copies of the held-out packages.
struct Validator {
    timeout: Duration,
    kind: crate::sandbox::SandboxKind,
    /// Per package: a scratch copy, its pytest, and the tests failing with the original code.
    packages: HashMap<String, (tempfile::TempDir, Pytest, BTreeSet<String>)>,
}

fn run_tests(
    timeout: Duration,
    pytest: &Pytest,
    root: &Path,
    selectors: &[String],
    exit_first: bool,
) -> Result<Session, PipelineError> {
    let run = TestRun {
        exit_first,
        per_test_timeout: Some(timeout),
        ..TestRun::new(Some(selectors), timeout * 4 + Duration::from_secs(30))
    };
    let spec = RunSpec { root, coverage: false, run, deselect: &[], watch: &[] };
    Ok(pytest.run(&spec)?)
}

impl Validator {
    /// The scratch copy of `package` (made once), with its original failing tests.
    fn package(&mut self, package: &str) -> Result<&(tempfile::TempDir, Pytest, BTreeSet<String>), PipelineError> {
        if !self.packages.contains_key(package) {
            let scratch = tempfile::tempdir()
                .map_err(|e| PipelineError::io("create a scratch dir for", Path::new(package), e))?;
            let status = std::process::Command::new("cp")
                .arg("-rT")
                .arg(package)
                .arg(scratch.path())
                .status()
                .map_err(|e| PipelineError::io("copy", Path::new(package), e))?;
            if !status.success() {
                return Err(PipelineError::stage(Stage::Evaluate, format!("copying {package} failed")));
            }
            let (pytest, _) =
                crate::pytest::for_project(scratch.path(), None, self.kind, &crate::sandbox::DockerConfig::default())?;
            let session = run_tests(self.timeout, &pytest, scratch.path(), &[], false)?;
            let failing = session.failing().map(|t| t.nodeid.clone()).collect();
            self.packages.insert(package.to_string(), (scratch, pytest, failing));
        }
        Ok(&self.packages[package])
    }

    /// Whether `function_text` in place of the bug's function passes its failing tests and
    /// breaks no test of the suite that passed with the original code.
    fn passes(&mut self, bug: &BugRow, original: &str, function_text: &str) -> Result<bool, PipelineError> {
        let timeout = self.timeout;
        let (scratch, pytest, before) = self.package(&bug.repo)?;
        let root = scratch.path();
        let file = root.join(&bug.path);
        let patched = original.replacen(bug.fixed_function.trim_end(), function_text.trim_end(), 1);
        std::fs::write(&file, &patched).map_err(|e| PipelineError::io("write", &file, e))?;
        let result = (|| {
            let first = run_tests(timeout, pytest, root, &bug.failing_tests, true)?;
            if !clean(&first) {
                return Ok(false);
            }
            let all = run_tests(timeout, pytest, root, &[], false)?;
            Ok(all.exit != Exit::Timeout && all.failing().all(|t| before.contains(&t.nodeid)))
        })();
        std::fs::write(&file, original).map_err(|e| PipelineError::io("restore", &file, e))?;
        result
    }
}

fn clean(session: &Session) -> bool {
    session.exit != Exit::Timeout
        && session.collect_errors.is_empty()
        && !session.tests.is_empty()
        && session.failing().next().is_none()
}

/// Top-1 / top-k of the patcher's samples on `bugs` (with or without traces); also how many
/// bugs were unusable.
fn success(
    cfg: &PipelineConfig,
    bugs: &[BugRow],
    patcher: &mut Patcher,
    trace: bool,
) -> Result<(TopK, usize), PipelineError> {
    let started = Instant::now();
    let mut validator = Validator { timeout: cfg.test_timeout()?, kind: cfg.sandbox()?, packages: HashMap::new() };
    let mut result = TopK { trace, bugs: 0, k: cfg.evaluate.samples, top1: 0, top_k: 0, candidates: 0, seconds: 0.0 };
    let mut unusable = 0;
    for (i, bug) in bugs.iter().enumerate() {
        let file = PathBuf::from(&bug.repo).join(&bug.path);
        let original = std::fs::read_to_string(&file).map_err(|e| PipelineError::io("read", &file, e))?;
        if !original.contains(bug.fixed_function.trim_end()) || validator.passes(bug, &original, &bug.buggy_function)? {
            unusable += 1;
            continue;
        }
        result.bugs += 1;
        let source = bug_source(bug, trace.then_some(cfg.rows.trace_budget));
        let opts = SampleOptions {
            n: cfg.evaluate.samples,
            temperature: cfg.evaluate.temperature,
            top_p: 0.95,
            max_len: patcher.max_target_len(),
            seed: cfg.seed + i as u64,
        };
        let mut samples = patcher.sample(&source, &opts)?.samples;
        samples.sort_by(|a, b| b.count.cmp(&a.count).then(b.log_prob.total_cmp(&a.log_prob)));
        let mut seen = BTreeSet::new();
        for sample in samples.iter().filter(|s| s.finished) {
            let text = crate::repair::candidate::reindent(&sample.text, &bug.fixed_function);
            if text.trim() == bug.buggy_function.trim()
                || !seen.insert(text.clone())
                || seen.len() > cfg.evaluate.samples
            {
                continue;
            }
            result.candidates += 1;
            if validator.passes(bug, &original, &text)? {
                result.top1 += usize::from(seen.len() == 1);
                result.top_k += 1;
                break;
            }
        }
    }
    result.seconds = started.elapsed().as_secs_f64();
    Ok((result, unusable))
}

/// Stage `report`: `report.json` (the manifest's figures and wall times) and `report.md`.
pub(super) fn report(cfg: &PipelineConfig, layout: &Layout<'_>, manifest: &Manifest) -> Result<Figures, PipelineError> {
    let evaluation: Evaluation = {
        let path = layout.evaluation();
        let text = std::fs::read_to_string(&path).map_err(|e| PipelineError::io("read", &path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| PipelineError::stage(Stage::Report, format!("{}: {e}", path.display())))?
    };
    let json_path = layout.0.join("report.json");
    let report =
        json!({"format_version": super::PIPELINE_FORMAT_VERSION, "stages": manifest.stages, "evaluation": evaluation});
    std::fs::write(&json_path, serde_json::to_string_pretty(&report).expect("serializes"))
        .map_err(|e| PipelineError::io("write", &json_path, e))?;
    let md_path = layout.0.join("report.md");
    std::fs::write(&md_path, markdown(cfg, manifest, &evaluation))
        .map_err(|e| PipelineError::io("write", &md_path, e))?;
    let mut figures = Figures::new();
    figures.insert("report".into(), json!(md_path));
    Ok(figures)
}

fn markdown(cfg: &PipelineConfig, manifest: &Manifest, evaluation: &Evaluation) -> String {
    let mut md =
        String::from("# deepdebug pipeline report\n\n## Stages\n\n| stage | wall time | figures |\n|---|---|---|\n");
    for (stage, record) in &manifest.stages {
        let figures: Vec<String> = record
            .figures
            .iter()
            .filter(|(k, _)| k.as_str() != "evaluation")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        md.push_str(&format!(
            "| {} | {:.1} s | {} |\n",
            stage.name(),
            record.seconds,
            figures.join("; ").replace('|', "/")
        ));
    }
    md.push_str(&format!(
        "\nModels: bug-creator `{}` ({} steps), patcher `{}` ({} steps).\n",
        cfg.bug_creator.arch, cfg.bug_creator.steps, cfg.patcher.arch, cfg.patcher.steps
    ));
    md.push_str("\n## Cross-entropy on held-out pairs (nats per target token)\n\n| model | pairs | with context | without context |\n|---|---|---|---|\n");
    for model in ["patch", "bug-create"] {
        for direction in ["forward", "reversed"] {
            let cell = |context: bool| {
                evaluation
                    .losses
                    .iter()
                    .find(|l| l.model == model && l.direction == direction && l.context == context)
                    .map_or_else(|| "–".to_string(), |l| format!("{:.4} ({} rows)", l.loss, l.rows))
            };
            md.push_str(&format!("| {model} | {direction} | {} | {} |\n", cell(true), cell(false)));
        }
    }
    md.push_str(&format!(
        "\n## Patch success on held-out executable bugs ({} samples each)\n\n| trace | bugs | top-1 | top-{} | candidates validated | wall time |\n|---|---|---|---|---|---|\n",
        cfg.evaluate.samples, cfg.evaluate.samples
    ));
    for t in &evaluation.top_k {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} s |\n",
            if t.trace { "with" } else { "without" },
            t.bugs,
            t.top1,
            t.top_k,
            t.candidates,
            t.seconds
        ));
    }
    md.push_str(&format!(
        "\nHeld-out bugs not usable (tests pass with the bug, or function not found): {}.\n",
        evaluation.unusable_bugs
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bug(repo: &Path) -> BugRow {
        BugRow {
            format_version: 1,
            repo: repo.display().to_string(),
            path: "calc.py".into(),
            function: "double".into(),
            class: None,
            kind: "binary-operator".into(),
            line: 2,
            description: "`*` → `+`".into(),
            buggy_function: "def double(x):\n    return x + 2\n".into(),
            fixed_function: "def double(x):\n    return x * 2\n".into(),
            context: "# target edit\ndef double(x):\n    return x * 2\n# end\n".into(),
            outcome: "failed".into(),
            failing_tests: vec!["test_calc.py::test_double".into()],
            error_type: "AssertionError".into(),
            error_message: "assert 5 == 6".into(),
            trace: Vec::new(),
            seed: 0,
        }
    }

    #[test]
    fn a_candidate_passes_only_when_the_failing_tests_pass_and_nothing_else_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let original = "def double(x):\n    return x * 2\n\n\ndef half(x):\n    return x / 2\n";
        std::fs::write(dir.path().join("calc.py"), original).unwrap();
        std::fs::write(
            dir.path().join("test_calc.py"),
            "from calc import double, half\n\ndef test_double():\n    assert double(3) == 6\n\ndef test_positive():\n    assert double(1) > 0\n",
        )
        .unwrap();
        let bug = bug(dir.path());
        let mut v = Validator {
            timeout: Duration::from_secs(10),
            kind: crate::sandbox::SandboxKind::None,
            packages: HashMap::new(),
        };
        assert!(v.passes(&bug, original, &bug.fixed_function).unwrap());
        assert!(!v.passes(&bug, original, &bug.buggy_function).unwrap());
        // Fixes the failing test but breaks one that passed: not a success.
        assert!(!v.passes(&bug, original, "def double(x):\n    return 6 if x == 3 else -1\n").unwrap());
        // A syntax error is a failure, not an error of the evaluation.
        assert!(!v.passes(&bug, original, "def double(x):\n    return x *\n").unwrap());
        // The package itself is never written.
        assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), original);
    }
}
