//! LoRA finetuning on CPU: prompts and completions, gradient accumulation over single sequences, AdamW with warmup + cosine, checkpoints that resume exactly.

use super::{AdapterDir, LoraConfig, LoraLlama};
use crate::model::config::Task;
use crate::model::data::Example;
use crate::model::dir::{TrainState, TRAIN_STATE_FORMAT_VERSION};
use crate::model::optim::{AdamW, AdamWParams};
use crate::model::smollm::tokenizer_from_gguf;
use crate::model::train::TrainEvent;
use crate::model::train_loop::{clip, fresh_state, restore_optimizer, run, sorted_vars, split, Sets, Step, Trainee};
use crate::model::{ModelError, TrainOptions};
use candle_core::quantized::gguf_file;
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use std::path::Path;

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

/// The saved state of a checkpoint of the same config in `dir`, with its weights loaded into
/// `varmap`; `None` when `dir` holds no checkpoint.
fn resume(dir: &AdapterDir, cfg: &LoraConfig, varmap: &mut VarMap) -> Result<Option<TrainState>, ModelError> {
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
    Ok(Some(state))
}

/// The adapted model of a run, with what its steps and checkpoints need.
struct LoraRun<'a> {
    model: LoraLlama,
    dir: &'a AdapterDir,
    cfg: &'a LoraConfig,
    device: &'a Device,
}

impl Trainee for LoraRun<'_> {
    type Example = PromptExample;

    /// Gradients summed over the batch's sequences (one at a time: gradient accumulation),
    /// divided by their count, clipped to the global norm.
    fn step(&self, batch: &[&PromptExample], vars: &[candle_core::Var], clip_norm: f64) -> Result<Step, ModelError> {
        let mut sum: Option<candle_core::backprop::GradStore> = None;
        let (mut loss_sum, mut tokens) = (0f32, 0usize);
        for ex in batch {
            let loss = example_loss(&self.model, ex, self.device)?;
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
        let grad_norm = clip(&mut grads, vars, batch.len() as f64, clip_norm, true)?;
        Ok(Step { loss: loss_sum / batch.len() as f32, grad_norm, tokens, grads })
    }

    fn eval_loss(&self, eval: &[&PromptExample]) -> Result<f32, ModelError> {
        eval_loss(&self.model, eval, self.device)
    }

    fn checkpoint(&self, varmap: &VarMap, opt: &AdamW, state: &TrainState) -> Result<(), ModelError> {
        let dir = self.dir;
        dir.save_config(self.cfg)?;
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

    fn has_weights(&self) -> bool {
        self.dir.weights_path().is_file()
    }
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
    let (eval, train) = split(&encoded, sched);
    let mut varmap = VarMap::new();
    let vb = crate::model::t5::seeded_var_builder(&varmap, sched.seed, DType::F32, device);
    let model = LoraLlama::new(ct, file, cfg, &vb)?;
    drop(vb);
    let params = AdamWParams { lr: sched.lr_at(0), weight_decay: sched.weight_decay, ..AdamWParams::default() };
    let mut opt = AdamW::new(&varmap, params)?;
    let mut state = fresh_state(sched.steps);
    if let Some(saved) = resume(dir, cfg, &mut varmap)? {
        state = saved;
        let restored = restore_optimizer(&varmap, params, &optimizer_path(dir), state.step)?;
        let optimizer_restored = restored.is_some();
        if let Some(restored) = restored {
            opt = restored;
        }
        on_event(TrainEvent::Resumed { step: state.step, optimizer_restored });
    }
    let (start_step, examples, eval_examples) = (state.step, train.len(), eval.len());
    let trainee = LoraRun { model, dir, cfg, device };
    let ran = run(&trainee, &Sets { eval, train }, (&varmap, &mut opt), &mut state, sched, on_event)?;
    Ok(LoraTrainSummary {
        start_step,
        steps: ran.steps,
        examples,
        skipped,
        eval_examples,
        losses: ran.losses,
        eval_loss: ran.eval_loss,
        tokens: ran.tokens,
        seconds: ran.seconds,
        parameters: sorted_vars(&varmap).iter().map(|v| v.elem_count()).sum(),
    })
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
