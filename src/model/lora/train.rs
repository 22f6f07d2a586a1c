//! LoRA finetuning on CPU: prompts and completions, gradient accumulation over single sequences, AdamW with warmup + cosine, checkpoints that resume exactly.

use super::{AdapterDir, LoraConfig, LoraLlama};
use crate::model::config::Task;
use crate::model::data::Example;
use crate::model::dir::{TrainState, TRAIN_STATE_FORMAT_VERSION};
use crate::model::optim::{AdamW, AdamWParams};
use crate::model::smollm::tokenizer_from_gguf;
use crate::model::train::TrainEvent;
use crate::model::{ModelError, TrainOptions};
use candle_core::quantized::gguf_file;
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::time::Instant;

/// The line after the skeleton that asks for the function's other version.
fn request(task: Task) -> &'static str {
    match task {
        Task::BugCreate => "# The target function with a bug:",
        _ => "# The target function, fixed:",
    }
}

/// The prompt of a skeleton (with its `# target edit` … `# end` function): the completion is
/// the function's other version, then end-of-text.
#[must_use]
pub fn prompt_text(source: &str, task: Task) -> String {
    format!("{}\n{}\n", source.trim_end(), request(task))
}

/// One training pair as token ids.
#[derive(Debug, Clone)]
pub struct PromptExample {
    pub prompt: Vec<u32>,
    /// The completion's ids (a pair's ends with end-of-text).
    pub completion: Vec<u32>,
    /// Which completion tokens the loss counts (empty: all of them).
    pub mask: Vec<bool>,
}

/// A sequence trained on some of its parts: text segments, each tokenized on its own and
/// marked trained or not (a next-state trajectory: its code, first frame and actions are
/// given, its later frames are trained). The leading untrained segments are the prompt.
#[derive(Debug, Clone, Default)]
pub struct Segments(pub Vec<(String, bool)>);

/// A LoRA run: the shared schedule options plus the adapter's shape.
#[derive(Debug, Clone)]
pub struct LoraTrainOptions {
    /// `batch_size` is the number of sequences whose gradients are summed per step.
    pub schedule: TrainOptions,
    pub config: LoraConfig,
}

/// What a run did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoraTrainSummary {
    pub start_step: usize,
    pub steps: usize,
    pub examples: usize,
    /// Rows left out: completion longer than `max_completion_tokens`, or empty.
    pub skipped: usize,
    pub eval_examples: usize,
    pub losses: Vec<f32>,
    pub eval_loss: Vec<(usize, f32)>,
    /// Prompt + completion tokens run forward and backward.
    pub tokens: usize,
    pub seconds: f64,
    /// Trainable (adapter) parameters.
    pub parameters: usize,
}

/// Tokenize examples; the prompt keeps its last `max_prompt_tokens` (the function is at its end).
fn encode(
    tokenizer: &tokenizers::Tokenizer,
    eos: u32,
    examples: &[Example],
    cfg: &LoraConfig,
    task: Task,
) -> Result<(Vec<PromptExample>, usize), ModelError> {
    let ids = |text: &str| -> Result<Vec<u32>, ModelError> {
        Ok(tokenizer.encode(text, false).map_err(|e| ModelError::Tokenizer(e.to_string()))?.get_ids().to_vec())
    };
    let mut out = Vec::new();
    let mut skipped = 0;
    for ex in examples {
        let mut completion = ids(&format!("{}\n", ex.target.trim_end()))?;
        completion.push(eos);
        if completion.len() > cfg.max_completion_tokens || ex.target.trim().is_empty() {
            skipped += 1;
            continue;
        }
        let mut prompt = ids(&prompt_text(&ex.source, task))?;
        if prompt.len() > cfg.max_prompt_tokens {
            prompt.drain(..prompt.len() - cfg.max_prompt_tokens);
        }
        out.push(PromptExample { prompt, completion, mask: Vec::new() });
    }
    Ok((out, skipped))
}

/// Tokenize segmented sequences, keeping the segments that fit in `max_prompt_tokens +
/// max_completion_tokens` (a sequence is cut after its last whole segment within it); a
/// sequence with no trained token left is skipped.
fn encode_segments(
    tokenizer: &tokenizers::Tokenizer,
    sequences: &[Segments],
    cfg: &LoraConfig,
) -> Result<(Vec<PromptExample>, usize), ModelError> {
    let cap = cfg.max_prompt_tokens + cfg.max_completion_tokens;
    let mut out = Vec::new();
    let mut skipped = 0;
    for seq in sequences {
        let mut ex = PromptExample { prompt: Vec::new(), completion: Vec::new(), mask: Vec::new() };
        for (text, trained) in &seq.0 {
            let ids = tokenizer
                .encode(text.as_str(), false)
                .map_err(|e| ModelError::Tokenizer(e.to_string()))?
                .get_ids()
                .to_vec();
            if ex.prompt.len() + ex.completion.len() + ids.len() > cap {
                break;
            }
            if ex.completion.is_empty() && !trained {
                ex.prompt.extend(ids);
            } else {
                ex.mask.extend(std::iter::repeat_n(*trained, ids.len()));
                ex.completion.extend(ids);
            }
        }
        if ex.prompt.is_empty() || !ex.mask.contains(&true) {
            skipped += 1;
            continue;
        }
        out.push(ex);
    }
    Ok((out, skipped))
}

/// Mean cross-entropy (nats per token) of `ex`'s completion.
fn example_loss(model: &LoraLlama, ex: &PromptExample, device: &Device) -> Result<Tensor, ModelError> {
    let ids: Vec<u32> = ex.prompt.iter().chain(&ex.completion[..ex.completion.len() - 1]).copied().collect();
    if ex.mask.is_empty() {
        let logits = model.logits_from(&ids, ex.prompt.len() - 1)?;
        let target = Tensor::new(ex.completion.as_slice(), device)?;
        return Ok(candle_nn::loss::cross_entropy(&logits, &target)?);
    }
    let trained: Vec<usize> = (0..ex.completion.len()).filter(|&j| ex.mask[j]).collect();
    let positions: Vec<u32> = trained.iter().map(|&j| (ex.prompt.len() - 1 + j) as u32).collect();
    let logits = model.logits_at(&ids, &positions)?;
    let target: Vec<u32> = trained.iter().map(|&j| ex.completion[j]).collect();
    Ok(candle_nn::loss::cross_entropy(&logits, &Tensor::new(target.as_slice(), device)?)?)
}

/// Tokens the loss of `ex` counts.
fn trained_tokens(ex: &PromptExample) -> usize {
    if ex.mask.is_empty() {
        ex.completion.len()
    } else {
        ex.mask.iter().filter(|&&m| m).count()
    }
}

fn eval_loss(model: &LoraLlama, eval: &[&PromptExample], device: &Device) -> Result<f32, ModelError> {
    let (mut total, mut tokens) = (0f64, 0usize);
    for ex in eval {
        let loss = example_loss(model, ex, device)?.to_scalar::<f32>()?;
        total += f64::from(loss) * trained_tokens(ex) as f64;
        tokens += trained_tokens(ex);
    }
    Ok((total / tokens.max(1) as f64) as f32)
}

/// The adapter's files for a resumed run: `train_state.json` and `optimizer.safetensors`.
fn state_path(dir: &AdapterDir) -> std::path::PathBuf {
    dir.path.join("train_state.json")
}

fn optimizer_path(dir: &AdapterDir) -> std::path::PathBuf {
    dir.path.join("optimizer.safetensors")
}

fn checkpoint(
    dir: &AdapterDir,
    cfg: &LoraConfig,
    varmap: &VarMap,
    opt: &AdamW,
    state: &TrainState,
) -> Result<(), ModelError> {
    dir.save_config(cfg)?;
    let tmp = dir.path.join("adapter_model.safetensors.tmp");
    varmap.save(&tmp)?;
    std::fs::rename(&tmp, dir.weights_path())
        .map_err(|e| ModelError::Io(dir.weights_path().display().to_string(), e))?;
    opt.save(&optimizer_path(dir))?;
    let text = serde_json::to_string_pretty(state).expect("state serializes");
    let tmp = state_path(dir).with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| ModelError::Io(tmp.display().to_string(), e))?;
    std::fs::rename(&tmp, state_path(dir)).map_err(|e| ModelError::Io(state_path(dir).display().to_string(), e))
}

/// Restore a checkpoint of the same config into `varmap`/`opt`; the saved state, if any.
fn resume(
    dir: &AdapterDir,
    cfg: &LoraConfig,
    varmap: &mut VarMap,
    opt: &mut AdamW,
) -> Result<Option<TrainState>, ModelError> {
    if !state_path(dir).is_file() || !dir.weights_path().is_file() {
        return Ok(None);
    }
    if &dir.config()? != cfg {
        return Err(ModelError::Config(format!("{} holds an adapter with another config", dir.path.display())));
    }
    let text = std::fs::read_to_string(state_path(dir))
        .map_err(|e| ModelError::Io(state_path(dir).display().to_string(), e))?;
    let state: TrainState = serde_json::from_str(&text).map_err(|e| ModelError::Config(e.to_string()))?;
    if state.format_version != TRAIN_STATE_FORMAT_VERSION {
        return Err(ModelError::Config(format!("unsupported train_state format_version {}", state.format_version)));
    }
    varmap.load(dir.weights_path())?;
    opt.load(&optimizer_path(dir))?;
    if opt.step_count() != state.step {
        return Err(ModelError::Config(format!("{}: optimizer and train state disagree", dir.path.display())));
    }
    Ok(Some(state))
}

/// One optimizer step's gradients: summed over the batch's sequences, divided by their count,
/// clipped to the global norm. Returns (mean loss, gradient norm before clipping, tokens).
fn accumulate(
    model: &LoraLlama,
    batch: &[&PromptExample],
    vars: &[candle_core::Var],
    clip: f64,
    device: &Device,
) -> Result<(f32, f32, usize, candle_core::backprop::GradStore), ModelError> {
    let mut sum: Option<candle_core::backprop::GradStore> = None;
    let (mut loss_sum, mut tokens) = (0f32, 0usize);
    for ex in batch {
        let loss = example_loss(model, ex, device)?;
        let grads = loss.backward()?;
        loss_sum += loss.to_scalar::<f32>()?;
        tokens += ex.prompt.len() + ex.completion.len();
        sum = Some(match sum {
            None => grads,
            Some(mut acc) => {
                for v in vars {
                    if let (Some(a), Some(g)) = (acc.get(v), grads.get(v)) {
                        let total = (a + g)?;
                        acc.insert(v, total);
                    }
                }
                acc
            }
        });
    }
    let mut grads = sum.ok_or_else(|| ModelError::Data("empty batch".into()))?;
    let n = batch.len() as f64;
    let mut sq = 0f64;
    for v in vars {
        if let Some(g) = grads.remove(v) {
            let g = (g / n)?;
            sq += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
            grads.insert(v, g);
        }
    }
    let norm = sq.sqrt();
    if clip > 0.0 && norm > clip {
        for v in vars {
            if let Some(g) = grads.remove(v) {
                grads.insert(v, (g * (clip / norm))?);
            }
        }
    }
    Ok((loss_sum / batch.len() as f32, norm as f32, tokens, grads))
}

/// Train (or resume) LoRA adapters on `examples` (`{source: skeleton, target: function}`)
/// over the GGUF at `gguf`, saving to `dir`. Batches depend only on (seed, step).
///
/// # Errors
/// On tensor, tokenizer or I/O errors, or no usable example.
pub fn train_lora(
    dir: &AdapterDir,
    gguf: &Path,
    examples: &[Example],
    opts: &LoraTrainOptions,
    device: &Device,
    on_event: &mut dyn FnMut(TrainEvent),
) -> Result<LoraTrainSummary, ModelError> {
    opts.config.validate()?;
    let task = opts.config.task();
    let mut file = std::fs::File::open(gguf).map_err(|e| ModelError::Io(gguf.display().to_string(), e))?;
    let ct = gguf_file::Content::read(&mut file)?;
    let (tokenizer, eos) = tokenizer_from_gguf(&ct)?;
    let encoded = encode(&tokenizer, eos, examples, &opts.config, task)?;
    train_encoded(dir, (&ct, &mut file), encoded, opts, device, on_event)
}

/// [`train_lora`] on segmented sequences (the loss counts the trained segments' tokens only):
/// the next-state model's whole trajectories.
///
/// # Errors
/// On tensor, tokenizer or I/O errors, or no usable sequence.
pub fn train_lora_segments(
    dir: &AdapterDir,
    gguf: &Path,
    sequences: &[Segments],
    opts: &LoraTrainOptions,
    device: &Device,
    on_event: &mut dyn FnMut(TrainEvent),
) -> Result<LoraTrainSummary, ModelError> {
    opts.config.validate()?;
    let mut file = std::fs::File::open(gguf).map_err(|e| ModelError::Io(gguf.display().to_string(), e))?;
    let ct = gguf_file::Content::read(&mut file)?;
    let (tokenizer, _) = tokenizer_from_gguf(&ct)?;
    let encoded = encode_segments(&tokenizer, sequences, &opts.config)?;
    train_encoded(dir, (&ct, &mut file), encoded, opts, device, on_event)
}

/// The training loop over encoded examples (and how many rows were skipped).
fn train_encoded(
    dir: &AdapterDir,
    (ct, file): (&gguf_file::Content, &mut std::fs::File),
    (encoded, skipped): (Vec<PromptExample>, usize),
    opts: &LoraTrainOptions,
    device: &Device,
    on_event: &mut dyn FnMut(TrainEvent),
) -> Result<LoraTrainSummary, ModelError> {
    let (cfg, sched) = (&opts.config, &opts.schedule);
    if encoded.is_empty() {
        return Err(ModelError::Data(format!("no usable training example ({skipped} too long or empty)")));
    }
    let mut order: Vec<usize> = (0..encoded.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(sched.seed));
    let n_eval = if encoded.len() < 4 {
        0
    } else {
        ((encoded.len() as f64 * sched.eval_fraction).ceil() as usize).clamp(1, encoded.len() / 2)
    };
    let eval: Vec<&PromptExample> = order[..n_eval].iter().map(|&i| &encoded[i]).collect();
    let train_set: Vec<&PromptExample> = order[n_eval..].iter().map(|&i| &encoded[i]).collect();

    let mut varmap = VarMap::new();
    let vb = crate::model::t5::seeded_var_builder(&varmap, sched.seed, DType::F32, device);
    let model = LoraLlama::new(ct, file, cfg, &vb)?;
    drop(vb);
    let params = AdamWParams { lr: sched.lr_at(0), weight_decay: sched.weight_decay, ..AdamWParams::default() };
    let mut opt = AdamW::new(&varmap, params)?;
    let mut state = match resume(dir, cfg, &mut varmap, &mut opt)? {
        Some(state) => {
            on_event(TrainEvent::Resumed { step: state.step, optimizer_restored: true });
            state
        }
        None => TrainState {
            format_version: TRAIN_STATE_FORMAT_VERSION,
            step: 0,
            total_steps: sched.steps,
            train_loss: Vec::new(),
            eval_loss: Vec::new(),
        },
    };
    state.total_steps = sched.steps;
    let vars = sorted_vars(&varmap);
    let mut summary = LoraTrainSummary {
        start_step: state.step,
        steps: 0,
        examples: train_set.len(),
        skipped,
        eval_examples: eval.len(),
        losses: Vec::new(),
        eval_loss: Vec::new(),
        tokens: 0,
        seconds: 0.0,
        parameters: vars.iter().map(|v| v.elem_count()).sum(),
    };
    let started = Instant::now();
    let mut since_ckpt = Vec::new();
    while state.step < sched.steps {
        let step = state.step;
        let mut rng =
            StdRng::seed_from_u64(sched.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(step as u64 + 1));
        let batch: Vec<&PromptExample> =
            (0..sched.batch_size.max(1)).map(|_| train_set[rng.random_range(0..train_set.len())]).collect();
        let (loss, grad_norm, tokens, grads) = accumulate(&model, &batch, &vars, sched.clip_norm, device)?;
        let lr = sched.lr_at(step);
        opt.set_learning_rate(lr);
        opt.step(&grads)?;
        state.step += 1;
        summary.steps += 1;
        summary.tokens += tokens;
        summary.losses.push(loss);
        since_ckpt.push(loss);
        let tokens_per_second = summary.tokens as f64 / started.elapsed().as_secs_f64().max(1e-9);
        on_event(TrainEvent::Step { step: state.step, loss, lr, grad_norm, tokens_per_second });
        let last = state.step == sched.steps;
        if !eval.is_empty() && (last || (sched.eval_every > 0 && state.step.is_multiple_of(sched.eval_every))) {
            let l = eval_loss(&model, &eval, device)?;
            state.eval_loss.push((state.step, l));
            summary.eval_loss.push((state.step, l));
            on_event(TrainEvent::Eval { step: state.step, loss: l });
        }
        if last || (sched.checkpoint_every > 0 && state.step.is_multiple_of(sched.checkpoint_every)) {
            state.train_loss.push((state.step, since_ckpt.iter().sum::<f32>() / since_ckpt.len().max(1) as f32));
            since_ckpt.clear();
            checkpoint(dir, cfg, &varmap, &opt, &state)?;
            on_event(TrainEvent::Checkpoint { step: state.step });
        }
    }
    if summary.steps == 0 && !dir.weights_path().is_file() {
        checkpoint(dir, cfg, &varmap, &opt, &state)?;
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The trainable variables in name order (a fixed order keeps clipping reproducible).
fn sorted_vars(varmap: &VarMap) -> Vec<candle_core::Var> {
    let data = varmap.data().lock().expect("varmap lock");
    let mut named: Vec<(&String, &candle_core::Var)> = data.iter().collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    named.into_iter().map(|(_, v)| v.clone()).collect()
}

/// Per-token cross-entropy of `examples`' completions under the base model with the adapter
/// in `dir` (or none): the evaluation of DeepDebug's Tables 1–2.
///
/// # Errors
/// On tensor, tokenizer or I/O errors.
pub fn cross_entropy(
    gguf: &Path,
    adapter: Option<&AdapterDir>,
    cfg: &LoraConfig,
    examples: &[Example],
    device: &Device,
) -> Result<(f32, usize), ModelError> {
    let task = cfg.task();
    let mut file = std::fs::File::open(gguf).map_err(|e| ModelError::Io(gguf.display().to_string(), e))?;
    let ct = gguf_file::Content::read(&mut file)?;
    let (tokenizer, eos) = tokenizer_from_gguf(&ct)?;
    let (encoded, _) = encode(&tokenizer, eos, examples, cfg, task)?;
    let mut varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
    let model = LoraLlama::new(&ct, &mut file, cfg, &vb)?;
    if let Some(dir) = adapter {
        varmap.load(dir.weights_path())?;
    }
    let refs: Vec<&PromptExample> = encoded.iter().collect();
    Ok((eval_loss(&model, &refs, device)?, encoded.len()))
}
