//! The one training loop of both model families (T5 and LoRA): seeded split and batches, clipped AdamW steps, held-out loss, checkpoints and resumption.

use super::dir::{TrainState, TRAIN_STATE_FORMAT_VERSION};
use super::optim::{AdamW, AdamWParams};
use super::ModelError;
use candle_core::backprop::GradStore;
use candle_core::Var;
use candle_nn::VarMap;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::time::Instant;

/// Hyper-parameters of a training run.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Total optimizer steps (a resumed run continues up to this count).
    pub steps: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub warmup_steps: usize,
    /// The cosine decays to `learning_rate * min_lr_ratio`.
    pub min_lr_ratio: f64,
    pub weight_decay: f64,
    /// Global gradient-norm limit.
    pub clip_norm: f64,
    /// Held-out loss every this many steps (and at the end); 0 = only at the end.
    pub eval_every: usize,
    /// Checkpoint every this many steps (and at the end); 0 = only at the end.
    pub checkpoint_every: usize,
    /// Share of the examples held out for the eval loss (none when fewer than 4 examples).
    pub eval_fraction: f64,
    /// Seeds the initial weights, the train/eval split and the batches (batch `k` depends
    /// only on seed and `k`).
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            steps: 1000,
            batch_size: 16,
            learning_rate: 1e-3,
            warmup_steps: 100,
            min_lr_ratio: 0.1,
            weight_decay: 0.01,
            clip_norm: 1.0,
            eval_every: 200,
            checkpoint_every: 500,
            eval_fraction: 0.05,
            seed: 0,
        }
    }
}

impl TrainOptions {
    /// Learning rate for 0-based `step`.
    #[must_use]
    pub fn lr_at(&self, step: usize) -> f64 {
        if step < self.warmup_steps {
            return self.learning_rate * (step + 1) as f64 / self.warmup_steps as f64;
        }
        let span = self.steps.saturating_sub(self.warmup_steps).max(1) as f64;
        let p = ((step - self.warmup_steps) as f64 / span).min(1.0);
        let min = self.learning_rate * self.min_lr_ratio;
        min + (self.learning_rate - min) * 0.5 * (1.0 + (std::f64::consts::PI * p).cos())
    }
}

/// Progress reports.
#[derive(Debug, Clone)]
pub enum TrainEvent {
    /// A checkpoint was resumed; `optimizer_restored` says whether the AdamW moments were too.
    Resumed {
        step: usize,
        optimizer_restored: bool,
    },
    Step {
        step: usize,
        loss: f32,
        lr: f64,
        grad_norm: f32,
        tokens_per_second: f64,
    },
    Eval {
        step: usize,
        loss: f32,
    },
    Checkpoint {
        step: usize,
    },
}

/// One optimizer step's gradients, already clipped to the global norm.
pub(crate) struct Step {
    /// Mean training loss of the batch.
    pub loss: f32,
    /// Global gradient norm before clipping.
    pub grad_norm: f32,
    /// Tokens the batch processed.
    pub tokens: usize,
    pub grads: GradStore,
}

/// What the loop needs of a model family: its gradients for a batch, its held-out loss, and
/// how it saves a checkpoint.
pub(crate) trait Trainee {
    type Example;

    /// The gradients of one batch (clipped to `clip`, when positive) over `vars`.
    fn step(&self, batch: &[&Self::Example], vars: &[Var], clip: f64) -> Result<Step, ModelError>;

    /// Mean held-out loss per token.
    fn eval_loss(&self, eval: &[&Self::Example]) -> Result<f32, ModelError>;

    /// Write the weights, the optimizer's moments and `state` (each file written then renamed).
    fn checkpoint(&self, varmap: &VarMap, opt: &AdamW, state: &TrainState) -> Result<(), ModelError>;

    /// Whether the model's directory already holds weights (a run of zero steps writes them
    /// only when it does not).
    fn has_weights(&self) -> bool;
}

/// The held-out and training examples: a seeded shuffle, `eval_fraction` held out (none when
/// fewer than 4 examples, at most half).
pub(crate) fn split<'e, E>(encoded: &'e [E], opts: &TrainOptions) -> (Vec<&'e E>, Vec<&'e E>) {
    let mut order: Vec<usize> = (0..encoded.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(opts.seed));
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n_eval = if encoded.len() < 4 {
        0
    } else {
        ((encoded.len() as f64 * opts.eval_fraction).ceil() as usize).clamp(1, encoded.len() / 2)
    };
    let eval = order[..n_eval].iter().map(|&i| &encoded[i]).collect();
    let train = order[n_eval..].iter().map(|&i| &encoded[i]).collect();
    (eval, train)
}

/// A fresh state for a run of `steps`.
pub(crate) fn fresh_state(steps: usize) -> TrainState {
    TrainState {
        format_version: TRAIN_STATE_FORMAT_VERSION,
        step: 0,
        total_steps: steps,
        train_loss: Vec::new(),
        eval_loss: Vec::new(),
    }
}

/// The AdamW moments saved at `path` for `varmap`, when they are from `step`: a missing file,
/// or one from another step (a torn checkpoint), resumes with fresh moments instead.
///
/// # Errors
/// When the file exists but cannot be read.
pub(crate) fn restore_optimizer(
    varmap: &VarMap,
    params: AdamWParams,
    path: &Path,
    step: usize,
) -> Result<Option<AdamW>, ModelError> {
    if !path.is_file() {
        return Ok(None);
    }
    let mut restored = AdamW::new(varmap, params)?;
    restored.load(path)?;
    Ok((restored.step_count() == step).then_some(restored))
}

/// The trainable variables in name order (a fixed order keeps the gradient norm's summation
/// order, hence clipping, reproducible).
pub(crate) fn sorted_vars(varmap: &VarMap) -> Vec<Var> {
    let data = varmap.data().lock().expect("varmap lock");
    let mut named: Vec<(&String, &Var)> = data.iter().collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    named.into_iter().map(|(_, v)| v.clone()).collect()
}

/// What one run of the loop did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ran {
    pub steps: usize,
    pub losses: Vec<f32>,
    pub eval_loss: Vec<(usize, f32)>,
    pub tokens: usize,
    pub seconds: f64,
}

/// The examples of a run: held out and trained on.
pub(crate) struct Sets<'a, E> {
    pub eval: Vec<&'a E>,
    pub train: Vec<&'a E>,
}

/// Train from `state.step` up to `opts.steps`: batch `k` depends only on (seed, k); held-out
/// loss every `eval_every` steps and checkpoints every `checkpoint_every` (both at the end).
///
/// # Errors
/// On tensor or I/O errors of the trainee.
pub(crate) fn run<T: Trainee>(
    trainee: &T,
    sets: &Sets<'_, T::Example>,
    (varmap, opt): (&VarMap, &mut AdamW),
    state: &mut TrainState,
    opts: &TrainOptions,
    on_event: &mut dyn FnMut(TrainEvent),
) -> Result<Ran, ModelError> {
    state.total_steps = opts.steps;
    let vars = sorted_vars(varmap);
    let (started, mut ran, mut since_ckpt) = (Instant::now(), Ran::default(), Vec::new());
    while state.step < opts.steps {
        let step = state.step;
        let mut rng =
            StdRng::seed_from_u64(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(step as u64 + 1));
        let batch: Vec<&T::Example> =
            (0..opts.batch_size.max(1)).map(|_| sets.train[rng.random_range(0..sets.train.len())]).collect();
        let Step { loss, grad_norm, tokens, grads } = trainee.step(&batch, &vars, opts.clip_norm)?;
        let lr = opts.lr_at(step);
        opt.set_learning_rate(lr);
        opt.step(&grads)?;
        state.step += 1;
        ran.steps += 1;
        ran.tokens += tokens;
        ran.losses.push(loss);
        since_ckpt.push(loss);
        #[allow(clippy::cast_precision_loss)]
        let tokens_per_second = ran.tokens as f64 / started.elapsed().as_secs_f64().max(1e-9);
        on_event(TrainEvent::Step { step: state.step, loss, lr, grad_norm, tokens_per_second });
        let last = state.step == opts.steps;
        if !sets.eval.is_empty() && (last || (opts.eval_every > 0 && state.step.is_multiple_of(opts.eval_every))) {
            let l = trainee.eval_loss(&sets.eval)?;
            state.eval_loss.push((state.step, l));
            ran.eval_loss.push((state.step, l));
            on_event(TrainEvent::Eval { step: state.step, loss: l });
        }
        if last || (opts.checkpoint_every > 0 && state.step.is_multiple_of(opts.checkpoint_every)) {
            #[allow(clippy::cast_precision_loss)]
            let mean = since_ckpt.iter().sum::<f32>() / since_ckpt.len().max(1) as f32;
            state.train_loss.push((state.step, mean));
            since_ckpt.clear();
            trainee.checkpoint(varmap, opt, state)?;
            on_event(TrainEvent::Checkpoint { step: state.step });
        }
    }
    if ran.steps == 0 && !trainee.has_weights() {
        trainee.checkpoint(varmap, opt, state)?;
    }
    ran.seconds = started.elapsed().as_secs_f64();
    Ok(ran)
}

/// Global-norm clipping of `grads` over `vars`, after dividing each by `divide` (the batch's
/// sequence count when gradients were summed, else 1); returns the norm before clipping.
/// The squares are summed in f64 when `wide`, else in f32 (each family keeps its own
/// summation so that resumed runs reproduce earlier checkpoints bit for bit).
///
/// # Errors
/// On tensor errors.
pub(crate) fn clip(grads: &mut GradStore, vars: &[Var], divide: f64, clip: f64, wide: bool) -> Result<f32, ModelError> {
    let (mut sq32, mut sq64) = (0f32, 0f64);
    for v in vars {
        if let Some(g) = grads.remove(v) {
            let g = if (divide - 1.0).abs() > f64::EPSILON { (g / divide)? } else { g };
            let s = g.sqr()?.sum_all()?.to_scalar::<f32>()?;
            sq32 += s;
            sq64 += f64::from(s);
            grads.insert(v, g);
        }
    }
    #[allow(clippy::cast_possible_truncation)]
    let norm = if wide { sq64.sqrt() } else { f64::from(sq32.sqrt()) };
    if clip > 0.0 && norm > clip {
        for v in vars {
            if let Some(g) = grads.remove(v) {
                grads.insert(v, (g * (clip / norm))?);
            }
        }
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok(norm as f32)
}
