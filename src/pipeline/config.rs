//! `pipeline.toml`: what each stage of `deepdebug pipeline` reads, trains and evaluates.

use super::PipelineError;
use crate::sandbox::SandboxKind;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole configuration; every table and field has a default except the corpus.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    #[serde(default)]
    pub seed: u64,
    pub pairs: PairsConfig,
    #[serde(default)]
    pub packages: PackagesConfig,
    #[serde(default)]
    pub inject: InjectConfig,
    #[serde(default = "ModelSpec::bug_creator")]
    pub bug_creator: ModelSpec,
    #[serde(default = "ModelSpec::patcher")]
    pub patcher: ModelSpec,
    #[serde(default)]
    pub rows: RowsConfig,
    #[serde(default)]
    pub evaluate: EvaluateConfig,
}

/// Stage `pairs`: fix pairs from mined JSONL (`deepdebug mine` rows, plain or gzip).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairsConfig {
    /// Corpus files, relative to the config file.
    pub corpus: Vec<PathBuf>,
    /// Rows whose `repo` contains one of these are left out (licenses: GPL/LGPL projects).
    #[serde(default)]
    pub exclude_repos: Vec<String>,
    /// Rows whose `repo` contains one of these form the test split (never trained on).
    #[serde(default)]
    pub test_repos: Vec<String>,
    #[serde(default = "defaults::max_function_chars")]
    pub max_function_chars: usize,
    /// Rows whose edit changes more lines (on either side) are left out.
    #[serde(default = "defaults::max_changed_lines")]
    pub max_changed_lines: usize,
    #[serde(default = "defaults::max_train_rows")]
    pub max_train_rows: usize,
    #[serde(default = "defaults::max_test_rows")]
    pub max_test_rows: usize,
}

/// Stage `packages`: real Python packages with their tests.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackagesConfig {
    /// Local package directories (relative to the config file), copied before use.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// `NAME==VERSION` sdists fetched with `pip download --no-binary :all: --no-deps`.
    #[serde(default)]
    pub pip: Vec<String>,
    /// Packages (directory-name substrings) whose bugs form the test split.
    #[serde(default)]
    pub test: Vec<String>,
}

/// Stage `inject`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectConfig {
    #[serde(default = "defaults::per_function")]
    pub per_function: usize,
    /// Neural bugs sampled per function from the bug-creator.
    #[serde(default = "defaults::neural_samples")]
    pub neural_samples: usize,
    /// Budget per package, e.g. `10m`.
    #[serde(default = "defaults::package_timeout")]
    pub timeout: String,
    /// `local` (bubblewrap), `docker` or `none`.
    #[serde(default = "defaults::sandbox")]
    pub sandbox: String,
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig {
            per_function: defaults::per_function(),
            neural_samples: defaults::neural_samples(),
            timeout: defaults::package_timeout(),
            sandbox: defaults::sandbox(),
        }
    }
}

/// A model to train: the bug-creator or the patcher.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `t5` (from scratch) or `smollm-lora` (LoRA on the installed SmolLM2).
    #[serde(default = "defaults::arch")]
    pub arch: String,
    /// T5 size: `tiny`, `small` or `base`.
    #[serde(default = "defaults::preset")]
    pub preset: String,
    #[serde(default = "defaults::steps")]
    pub steps: usize,
    #[serde(default = "defaults::batch_size")]
    pub batch_size: usize,
    #[serde(default = "defaults::lr")]
    pub lr: f64,
    #[serde(default = "defaults::warmup")]
    pub warmup: usize,
    #[serde(default = "defaults::max_source_len")]
    pub max_source_len: usize,
    #[serde(default = "defaults::max_target_len")]
    pub max_target_len: usize,
    #[serde(default = "defaults::lora_rank")]
    pub lora_rank: usize,
    /// BPE vocabulary of a T5 trained from scratch.
    #[serde(default = "defaults::vocab_size")]
    pub vocab_size: usize,
}

impl ModelSpec {
    fn bug_creator() -> ModelSpec {
        ModelSpec {
            arch: defaults::arch(),
            preset: defaults::preset(),
            steps: defaults::steps(),
            batch_size: defaults::batch_size(),
            lr: defaults::lr(),
            warmup: defaults::warmup(),
            max_source_len: defaults::max_source_len(),
            max_target_len: defaults::max_target_len(),
            lora_rank: defaults::lora_rank(),
            vocab_size: defaults::vocab_size(),
        }
    }

    fn patcher() -> ModelSpec {
        ModelSpec::bug_creator()
    }

    pub(crate) fn is_lora(&self) -> bool {
        self.arch == "smollm-lora"
    }
}

/// Stage `rows`: the patcher's training rows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsConfig {
    /// Append each bug's trace (error and innermost frames with locals) after its skeleton.
    #[serde(default = "defaults::yes")]
    pub trace: bool,
    /// Trace budget in tokens (DeepDebug: 896).
    #[serde(default = "defaults::trace_budget")]
    pub trace_budget: usize,
    /// Also train the patcher on the corpus's training pairs (real fixes, no trace).
    #[serde(default = "defaults::yes")]
    pub include_pairs: bool,
}

impl Default for RowsConfig {
    fn default() -> Self {
        RowsConfig { trace: true, trace_budget: defaults::trace_budget(), include_pairs: true }
    }
}

/// Stage `evaluate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluateConfig {
    /// Samples drawn per held-out bug (top-k counts the first k distinct ones).
    #[serde(default = "defaults::samples")]
    pub samples: usize,
    #[serde(default = "defaults::temperature")]
    pub temperature: f64,
    /// Held-out bugs tried at most.
    #[serde(default = "defaults::max_bugs")]
    pub max_bugs: usize,
    /// Held-out pairs scored for the cross-entropy tables at most.
    #[serde(default = "defaults::loss_rows")]
    pub loss_rows: usize,
    /// Per-test limit when candidates are validated, e.g. `10s`.
    #[serde(default = "defaults::test_timeout")]
    pub test_timeout: String,
}

impl Default for EvaluateConfig {
    fn default() -> Self {
        EvaluateConfig {
            samples: defaults::samples(),
            temperature: defaults::temperature(),
            max_bugs: defaults::max_bugs(),
            loss_rows: defaults::loss_rows(),
            test_timeout: defaults::test_timeout(),
        }
    }
}

mod defaults {
    pub fn max_function_chars() -> usize {
        900
    }
    pub fn max_changed_lines() -> usize {
        2
    }
    pub fn max_train_rows() -> usize {
        20_000
    }
    pub fn max_test_rows() -> usize {
        500
    }
    pub fn per_function() -> usize {
        4
    }
    pub fn neural_samples() -> usize {
        4
    }
    pub fn package_timeout() -> String {
        "10m".into()
    }
    pub fn sandbox() -> String {
        "local".into()
    }
    pub fn arch() -> String {
        "t5".into()
    }
    pub fn preset() -> String {
        "small".into()
    }
    pub fn steps() -> usize {
        1000
    }
    pub fn batch_size() -> usize {
        16
    }
    pub fn lr() -> f64 {
        1e-3
    }
    pub fn warmup() -> usize {
        100
    }
    pub fn max_source_len() -> usize {
        1024
    }
    pub fn max_target_len() -> usize {
        256
    }
    pub fn lora_rank() -> usize {
        8
    }
    pub fn vocab_size() -> usize {
        8000
    }
    pub fn yes() -> bool {
        true
    }
    pub fn trace_budget() -> usize {
        896
    }
    pub fn samples() -> usize {
        10
    }
    pub fn temperature() -> f64 {
        0.8
    }
    pub fn max_bugs() -> usize {
        50
    }
    pub fn loss_rows() -> usize {
        200
    }
    pub fn test_timeout() -> String {
        "10s".into()
    }
}

impl PipelineConfig {
    /// Read `path`; relative paths inside it are resolved against its directory.
    ///
    /// # Errors
    /// When the file cannot be read, is not valid TOML for this schema, or names an unknown
    /// architecture, preset or sandbox.
    pub fn load(path: &Path) -> Result<PipelineConfig, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|e| PipelineError::io("read", path, e))?;
        let mut cfg: PipelineConfig =
            toml::from_str(&text).map_err(|e| PipelineError::Config(format!("{}: {e}", path.display())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in cfg.pairs.corpus.iter_mut().chain(cfg.packages.paths.iter_mut()) {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), PipelineError> {
        for (name, spec) in [("bug_creator", &self.bug_creator), ("patcher", &self.patcher)] {
            if !matches!(spec.arch.as_str(), "t5" | "smollm-lora") {
                return Err(PipelineError::Config(format!("{name}.arch: `{}` (t5 or smollm-lora)", spec.arch)));
            }
            if !matches!(spec.preset.as_str(), "tiny" | "small" | "base") {
                return Err(PipelineError::Config(format!("{name}.preset: `{}` (tiny, small or base)", spec.preset)));
            }
        }
        self.sandbox()?;
        self.package_timeout()?;
        self.test_timeout()?;
        if self.pairs.corpus.is_empty() {
            return Err(PipelineError::Config("pairs.corpus lists no file".into()));
        }
        Ok(())
    }

    /// The sandbox of every test run.
    ///
    /// # Errors
    /// On an unknown name.
    pub fn sandbox(&self) -> Result<SandboxKind, PipelineError> {
        match self.inject.sandbox.as_str() {
            "local" => Ok(SandboxKind::Local),
            "docker" => Ok(SandboxKind::Docker),
            "none" => Ok(SandboxKind::None),
            other => Err(PipelineError::Config(format!("inject.sandbox: `{other}` (local, docker or none)"))),
        }
    }

    pub(crate) fn package_timeout(&self) -> Result<Duration, PipelineError> {
        crate::settings::parse_duration(&self.inject.timeout).map_err(|e| PipelineError::Config(e.to_string()))
    }

    pub(crate) fn test_timeout(&self) -> Result<Duration, PipelineError> {
        crate::settings::parse_duration(&self.evaluate.test_timeout).map_err(|e| PipelineError::Config(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::PipelineConfig;

    #[test]
    fn the_shipped_configs_load_and_the_gpu_ones_scale_the_cpu_run() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/pipeline");
        let load = |name: &str| PipelineConfig::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (cpu, smoke, full) = (load("cpu.toml"), load("gpu-smoke.toml"), load("gpu-full.toml"));
        assert_eq!(full.patcher.steps, cpu.patcher.steps * 100);
        assert_eq!(full.bug_creator.steps, cpu.bug_creator.steps * 100);
        assert_eq!(full.patcher.max_source_len, 1024);
        assert!(smoke.patcher.steps < full.patcher.steps / 10);
        assert_eq!(smoke.pairs.corpus, cpu.pairs.corpus, "the same corpus, found from the same folder");
    }
}
