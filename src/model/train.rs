//! Training the T5 patcher: its options (AdamW, warmup + cosine, clipping), events and summary, and its part of the shared loop (`train_loop`).

use super::data::Example;
use super::dir::{ModelDir, TrainState};
use super::optim::{AdamW, AdamWParams};
use super::t5::{seeded_var_builder, Seq2Seq};
use super::tokenizer::{EOS_ID, PAD_ID};
use super::train_loop::{clip, fresh_state, restore_optimizer, run, sorted_vars, split, Sets, Step, Trainee};
pub use super::train_loop::{TrainEvent, TrainOptions};
use super::{CodeTokenizer, ModelConfig, ModelError};
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};

/// What a run did.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    pub start_step: usize,
    pub steps: usize,
    /// Per-step training losses of this run.
    pub losses: Vec<f32>,
    pub eval_loss: Vec<(usize, f32)>,
    /// Non-pad source + target tokens processed.
    pub tokens: usize,
    pub seconds: f64,
    pub parameters: usize,
    /// A resumed run found `optimizer.safetensors` and restored the AdamW moments (false for
    /// fresh runs and for checkpoints written before the moments were saved).
    pub optimizer_restored: bool,
}

impl TrainSummary {
    #[must_use]
    pub fn tokens_per_second(&self) -> f64 {
        self.tokens as f64 / self.seconds.max(1e-9)
    }
}

/// Tokenized pair: encoder ids (with `</s>`) and labels (with `</s>`).
pub(crate) struct Encoded {
    pub src: Vec<u32>,
    pub labels: Vec<u32>,
}

/// Encoder ids for `text`: truncated to `max_len - 1`, then `</s>`.
pub(crate) fn source_ids(tokenizer: &CodeTokenizer, text: &str, max_len: usize) -> Result<Vec<u32>, ModelError> {
    let mut ids = tokenizer.encode(text)?;
    ids.truncate(max_len.saturating_sub(1));
    ids.push(EOS_ID);
    Ok(ids)
}

fn encode_all(tokenizer: &CodeTokenizer, cfg: &ModelConfig, examples: &[Example]) -> Result<Vec<Encoded>, ModelError> {
    examples
        .iter()
        .map(|ex| {
            let src = source_ids(tokenizer, &ex.source, cfg.max_source_len)?;
            let mut labels = tokenizer.encode(&ex.target)?;
            labels.truncate(cfg.max_target_len.saturating_sub(1));
            labels.push(EOS_ID);
            Ok(Encoded { src, labels })
        })
        .collect()
}

/// Right-pad rows into a (b, t) u32 tensor.
pub(crate) fn pad_batch(rows: &[&[u32]], device: &Device) -> Result<Tensor, ModelError> {
    let t = rows.iter().map(|r| r.len()).max().unwrap_or(1).max(1);
    let mut flat = Vec::with_capacity(rows.len() * t);
    for r in rows {
        flat.extend_from_slice(r);
        flat.extend(std::iter::repeat_n(PAD_ID, t - r.len()));
    }
    Ok(Tensor::from_vec(flat, (rows.len(), t), device)?)
}

/// (src, decoder input, labels, non-pad token count) for a batch.
fn batch_tensors(batch: &[&Encoded], device: &Device) -> Result<(Tensor, Tensor, Tensor, usize), ModelError> {
    let src: Vec<&[u32]> = batch.iter().map(|e| e.src.as_slice()).collect();
    let labels: Vec<&[u32]> = batch.iter().map(|e| e.labels.as_slice()).collect();
    let dec_in: Vec<Vec<u32>> = batch
        .iter()
        .map(|e| std::iter::once(PAD_ID).chain(e.labels[..e.labels.len() - 1].iter().copied()).collect())
        .collect();
    let dec_refs: Vec<&[u32]> = dec_in.iter().map(Vec::as_slice).collect();
    let tokens = batch.iter().map(|e| e.src.len() + e.labels.len()).sum();
    Ok((pad_batch(&src, device)?, pad_batch(&dec_refs, device)?, pad_batch(&labels, device)?, tokens))
}

fn eval_loss(model: &Seq2Seq, eval: &[&Encoded], batch_size: usize, device: &Device) -> Result<f32, ModelError> {
    let mut total = 0.0f64;
    let mut weight = 0usize;
    for chunk in eval.chunks(batch_size.max(1)) {
        let (src, dec_in, labels, _) = batch_tensors(chunk, device)?;
        let n: usize = chunk.iter().map(|e| e.labels.len()).sum();
        let loss = model.loss(&src, &dec_in, &labels)?.to_scalar::<f32>()?;
        total += f64::from(loss) * n as f64;
        weight += n;
    }
    Ok((total / weight.max(1) as f64) as f32)
}

/// Per-token cross-entropy of `examples`' targets under the T5 model saved in `dir` (the
/// evaluation of DeepDebug's Tables 1–2); also the number of examples.
///
/// # Errors
/// When the directory's files are unusable, or on tensor errors.
pub fn cross_entropy(dir: &ModelDir, examples: &[Example], device: &Device) -> Result<(f32, usize), ModelError> {
    let cfg = dir.config()?;
    let tokenizer = dir.tokenizer()?;
    let encoded = encode_all(&tokenizer, &cfg, examples)?;
    let mut varmap = VarMap::new();
    let model = Seq2Seq::new(&cfg, VarBuilder::from_varmap(&varmap, DType::F32, device))?;
    varmap.load(dir.weights_path())?;
    let refs: Vec<&Encoded> = encoded.iter().collect();
    Ok((eval_loss(&model, &refs, 8, device)?, encoded.len()))
}

/// The T5 model of a run, with what its steps and checkpoints need.
struct T5Run<'a> {
    model: Seq2Seq,
    dir: &'a ModelDir,
    cfg: &'a ModelConfig,
    tokenizer: &'a CodeTokenizer,
    batch_size: usize,
    device: &'a Device,
}

impl Trainee for T5Run<'_> {
    type Example = Encoded;

    fn step(&self, batch: &[&Encoded], vars: &[candle_core::Var], clip_norm: f64) -> Result<Step, ModelError> {
        let (src, dec_in, labels, tokens) = batch_tensors(batch, self.device)?;
        let loss = self.model.loss(&src, &dec_in, &labels)?;
        let mut grads = loss.backward()?;
        let grad_norm = clip(&mut grads, vars, 1.0, clip_norm, false)?;
        Ok(Step { loss: loss.to_scalar::<f32>()?, grad_norm, tokens, grads })
    }

    fn eval_loss(&self, eval: &[&Encoded]) -> Result<f32, ModelError> {
        eval_loss(&self.model, eval, self.batch_size, self.device)
    }

    fn checkpoint(&self, varmap: &VarMap, opt: &AdamW, state: &TrainState) -> Result<(), ModelError> {
        let dir = self.dir;
        dir.create()?;
        let tmp = dir.path.join("model.safetensors.tmp");
        varmap.save(&tmp)?;
        std::fs::rename(&tmp, dir.weights_path())
            .map_err(|e| ModelError::Io(dir.weights_path().display().to_string(), e))?;
        opt.save(&dir.optimizer_path())?;
        dir.save_config(self.cfg)?;
        self.tokenizer.save(&dir.tokenizer_path())?;
        dir.save_train_state(state)
    }

    fn has_weights(&self) -> bool {
        self.dir.is_complete()
    }
}

/// Train (or resume training) the model in `dir` on `examples`. A fresh model is initialized
/// from `opts.seed`. When `dir` holds a checkpoint with `train_state.json`, its weights, step
/// and AdamW moments (`optimizer.safetensors`) are restored, so stopping at a checkpoint and
/// resuming gives the weights of an uninterrupted run; `cfg`/`tokenizer` must match it. A
/// checkpoint without `optimizer.safetensors` (or with one from another step) resumes with
/// fresh moments.
///
/// # Errors
/// On tensor, tokenizer or I/O errors, or an empty data set.
pub fn train(
    dir: &ModelDir,
    cfg: &ModelConfig,
    tokenizer: &CodeTokenizer,
    examples: &[Example],
    opts: &TrainOptions,
    device: &Device,
    on_event: &mut dyn FnMut(TrainEvent),
) -> Result<TrainSummary, ModelError> {
    if examples.is_empty() {
        return Err(ModelError::Data("no training examples".into()));
    }
    cfg.validate()?;
    if cfg.vocab_size < tokenizer.vocab_size() {
        return Err(ModelError::Config(format!(
            "vocab_size {} is smaller than the tokenizer's {}",
            cfg.vocab_size,
            tokenizer.vocab_size()
        )));
    }
    let encoded = encode_all(tokenizer, cfg, examples)?;
    let (eval, train) = split(&encoded, opts);
    let varmap = VarMap::new();
    let model = Seq2Seq::new(cfg, seeded_var_builder(&varmap, opts.seed, DType::F32, device))?;
    let params = AdamWParams { lr: opts.lr_at(0), weight_decay: opts.weight_decay, ..AdamWParams::default() };
    let mut opt = AdamW::new(&varmap, params)?;
    let (mut state, mut optimizer_restored) = (fresh_state(opts.steps), false);
    if let Some(saved) = dir.train_state()? {
        if &dir.config()? != cfg {
            return Err(ModelError::Config(format!(
                "{} holds a checkpoint with a different config",
                dir.path.display()
            )));
        }
        varmap.clone().load(dir.weights_path())?;
        state = saved;
        if let Some(restored) = restore_optimizer(&varmap, params, &dir.optimizer_path(), state.step)? {
            (opt, optimizer_restored) = (restored, true);
        }
        on_event(TrainEvent::Resumed { step: state.step, optimizer_restored });
    }
    let trainee = T5Run { model, dir, cfg, tokenizer, batch_size: opts.batch_size, device };
    let start_step = state.step;
    let ran = run(&trainee, &Sets { eval, train }, (&varmap, &mut opt), &mut state, opts, on_event)?;
    Ok(TrainSummary {
        start_step,
        steps: ran.steps,
        losses: ran.losses,
        eval_loss: ran.eval_loss,
        tokens: ran.tokens,
        seconds: ran.seconds,
        parameters: sorted_vars(&varmap).iter().map(|v| v.elem_count()).sum(),
        optimizer_restored,
    })
}
