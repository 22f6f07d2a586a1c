//! AdamW with its moments in the open (candle-nn's update rule), so checkpoints save and restore them.

use super::ModelError;
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::VarMap;
use std::collections::HashMap;
use std::path::Path;

/// AdamW hyper-parameters (the defaults are candle-nn's `ParamsAdamW::default()`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWParams {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

impl Default for AdamWParams {
    fn default() -> Self {
        AdamWParams { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 }
    }
}

struct Slot {
    name: String,
    var: Var,
    m: Var,
    v: Var,
}

/// Decoupled-weight-decay Adam over the named float variables of a `VarMap`:
/// `m ← β1·m + (1−β1)·g`, `v ← β2·v + (1−β2)·g²`, `θ ← θ·(1 − lr·λ) − lr·m̂ / (√v̂ + ε)` with
/// `m̂ = m / (1 − β1^t)`, `v̂ = v / (1 − β2^t)` — the same arithmetic as `candle_nn::AdamW`.
pub struct AdamW {
    slots: Vec<Slot>,
    step_t: usize,
    pub params: AdamWParams,
}

impl std::fmt::Debug for AdamW {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdamW(vars={}, t={}, {:?})", self.slots.len(), self.step_t, self.params)
    }
}

/// Safetensors key of the step counter; moments are `m.NAME` and `v.NAME`.
const STEP_KEY: &str = "step";

impl AdamW {
    /// Zero moments for every float variable of `varmap` (sorted by name).
    ///
    /// # Errors
    /// On tensor allocation errors.
    pub fn new(varmap: &VarMap, params: AdamWParams) -> Result<AdamW, ModelError> {
        let data = varmap.data().lock().expect("varmap lock");
        let mut named: Vec<(&String, &Var)> = data.iter().filter(|(_, v)| v.dtype().is_float()).collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        let slots = named
            .into_iter()
            .map(|(name, var)| {
                Ok(Slot {
                    name: name.clone(),
                    var: var.clone(),
                    m: Var::zeros(var.shape(), var.dtype(), var.device())?,
                    v: Var::zeros(var.shape(), var.dtype(), var.device())?,
                })
            })
            .collect::<Result<Vec<_>, candle_core::Error>>()?;
        Ok(AdamW { slots, step_t: 0, params })
    }

    /// Updates done so far (the `t` of the bias correction).
    #[must_use]
    pub fn step_count(&self) -> usize {
        self.step_t
    }

    pub fn set_learning_rate(&mut self, lr: f64) {
        self.params.lr = lr;
    }

    /// One update from `grads` (variables without a gradient are left alone).
    ///
    /// # Errors
    /// On tensor errors.
    pub fn step(&mut self, grads: &candle_core::backprop::GradStore) -> Result<(), ModelError> {
        self.step_t += 1;
        let AdamWParams { lr, beta1, beta2, eps, weight_decay } = self.params;
        let t = i32::try_from(self.step_t).unwrap_or(i32::MAX);
        let scale_m = 1.0 / (1.0 - beta1.powi(t));
        let scale_v = 1.0 / (1.0 - beta2.powi(t));
        for slot in &self.slots {
            let Some(g) = grads.get(&slot.var) else { continue };
            let next_m = ((slot.m.as_tensor() * beta1)? + (g * (1.0 - beta1))?)?;
            let next_v = ((slot.v.as_tensor() * beta2)? + (g.sqr()? * (1.0 - beta2))?)?;
            let m_hat = (&next_m * scale_m)?;
            let v_hat = (&next_v * scale_v)?;
            let decayed = (slot.var.as_tensor() * (1.0 - lr * weight_decay))?;
            let adjusted = (m_hat / (v_hat.sqrt()? + eps)?)?;
            let next = (decayed - (adjusted * lr)?)?;
            slot.m.set(&next_m)?;
            slot.v.set(&next_v)?;
            slot.var.set(&next)?;
        }
        Ok(())
    }

    /// Write the moments and the step counter to `path` (safetensors, via a temp file + rename).
    ///
    /// # Errors
    /// On tensor or I/O errors.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let mut tensors: HashMap<String, Tensor> = HashMap::new();
        for slot in &self.slots {
            tensors.insert(format!("m.{}", slot.name), slot.m.as_tensor().clone());
            tensors.insert(format!("v.{}", slot.name), slot.v.as_tensor().clone());
        }
        let step = i64::try_from(self.step_t).unwrap_or(i64::MAX);
        tensors.insert(STEP_KEY.to_string(), Tensor::new(&[step], &Device::Cpu)?);
        let tmp = path.with_extension("safetensors.tmp");
        candle_core::safetensors::save(&tensors, &tmp)?;
        std::fs::rename(&tmp, path).map_err(|e| ModelError::Io(path.display().to_string(), e))
    }

    /// Restore the moments and the step counter saved by [`AdamW::save`].
    ///
    /// # Errors
    /// When the file is unreadable or does not match the variables (names, shapes).
    pub fn load(&mut self, path: &Path) -> Result<(), ModelError> {
        let device = self.slots.first().map_or(Device::Cpu, |s| s.var.device().clone());
        let saved = candle_core::safetensors::load(path, &device)?;
        let bad = |what: String| ModelError::Config(format!("{}: {what}", path.display()));
        let step = saved.get(STEP_KEY).ok_or_else(|| bad("no step counter".into()))?;
        let step = step.to_dtype(DType::I64)?.to_vec1::<i64>()?.first().copied().unwrap_or(0);
        for slot in &self.slots {
            for (key, moment) in [(format!("m.{}", slot.name), &slot.m), (format!("v.{}", slot.name), &slot.v)] {
                let t = saved.get(&key).ok_or_else(|| bad(format!("lacks {key}")))?;
                if t.shape() != moment.shape() {
                    return Err(bad(format!("{key} has shape {:?}, expected {:?}", t.shape(), moment.shape())));
                }
                moment.set(&t.to_dtype(moment.dtype())?)?;
            }
        }
        self.step_t = usize::try_from(step).map_err(|_| bad(format!("bad step counter {step}")))?;
        Ok(())
    }
}
