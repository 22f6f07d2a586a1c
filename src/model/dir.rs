//! HF-format model directories: `config.json`, `tokenizer.json`, `model.safetensors`, and
//! `train_state.json` + `optimizer.safetensors` (for resuming).

use super::{CodeTokenizer, ModelConfig, ModelError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const TRAIN_STATE_FORMAT_VERSION: u32 = 1;

/// Progress of training, saved beside the weights at every checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    pub format_version: u32,
    /// Optimizer steps done.
    pub step: usize,
    /// Steps of the schedule (warmup + cosine) this run was started with.
    pub total_steps: usize,
    /// (step, mean training loss since the previous checkpoint) pairs.
    pub train_loss: Vec<(usize, f32)>,
    /// (step, held-out loss) pairs.
    pub eval_loss: Vec<(usize, f32)>,
}

/// A model directory on disk.
#[derive(Debug, Clone)]
pub struct ModelDir {
    pub path: PathBuf,
}

fn read(path: &Path) -> Result<String, ModelError> {
    std::fs::read_to_string(path).map_err(|e| ModelError::Io(path.display().to_string(), e))
}

fn write(path: &Path, text: &str) -> Result<(), ModelError> {
    // Write-then-rename so an interrupted checkpoint never leaves a torn file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| ModelError::Io(tmp.display().to_string(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| ModelError::Io(path.display().to_string(), e))
}

impl ModelDir {
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> ModelDir {
        ModelDir { path: path.into() }
    }

    #[must_use]
    pub fn config_path(&self) -> PathBuf {
        self.path.join("config.json")
    }

    #[must_use]
    pub fn tokenizer_path(&self) -> PathBuf {
        self.path.join("tokenizer.json")
    }

    #[must_use]
    pub fn weights_path(&self) -> PathBuf {
        self.path.join("model.safetensors")
    }

    #[must_use]
    pub fn state_path(&self) -> PathBuf {
        self.path.join("train_state.json")
    }

    /// AdamW moments and step counter of the last checkpoint (see `optim::AdamW::save`).
    #[must_use]
    pub fn optimizer_path(&self) -> PathBuf {
        self.path.join("optimizer.safetensors")
    }

    /// True when config, tokenizer and weights are all present.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.config_path().is_file() && self.tokenizer_path().is_file() && self.weights_path().is_file()
    }

    /// # Errors
    /// When the directory cannot be created.
    pub fn create(&self) -> Result<(), ModelError> {
        std::fs::create_dir_all(&self.path).map_err(|e| ModelError::Io(self.path.display().to_string(), e))
    }

    /// # Errors
    /// When missing, malformed, or of another format version.
    pub fn config(&self) -> Result<ModelConfig, ModelError> {
        let path = self.config_path();
        if !path.is_file() {
            return Err(ModelError::NotAModel(self.path.display().to_string()));
        }
        let cfg: ModelConfig =
            serde_json::from_str(&read(&path)?).map_err(|e| ModelError::Config(format!("{}: {e}", path.display())))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// # Errors
    /// On I/O errors.
    pub fn save_config(&self, cfg: &ModelConfig) -> Result<(), ModelError> {
        write(&self.config_path(), &serde_json::to_string_pretty(cfg).expect("config serializes"))
    }

    /// # Errors
    /// When missing or malformed.
    pub fn tokenizer(&self) -> Result<CodeTokenizer, ModelError> {
        CodeTokenizer::load(&self.tokenizer_path())
    }

    /// `Ok(None)` when there is no state (nothing to resume).
    ///
    /// # Errors
    /// When present but unreadable or of another format version.
    pub fn train_state(&self) -> Result<Option<TrainState>, ModelError> {
        let path = self.state_path();
        if !path.is_file() || !self.weights_path().is_file() {
            return Ok(None);
        }
        let state: TrainState =
            serde_json::from_str(&read(&path)?).map_err(|e| ModelError::Config(format!("{}: {e}", path.display())))?;
        if state.format_version != TRAIN_STATE_FORMAT_VERSION {
            return Err(ModelError::Config(format!(
                "{}: unsupported format_version {}",
                path.display(),
                state.format_version
            )));
        }
        Ok(Some(state))
    }

    /// # Errors
    /// On I/O errors.
    pub fn save_train_state(&self, state: &TrainState) -> Result<(), ModelError> {
        write(&self.state_path(), &serde_json::to_string_pretty(state).expect("state serializes"))
    }
}
