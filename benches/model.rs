//! Benchmark: training and sampling throughput (tokens/s) of the seq2seq model on the CPU.
//!
//! `cargo bench --bench model` (add `-- small` for the small preset; default tiny).

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

fn main() {
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
}
