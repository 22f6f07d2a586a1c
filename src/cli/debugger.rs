//! Neural-debugger subcommands: `trace`, `debug`, `dap`, `trace-dataset`, `eval-next-state`, `eval-cruxeval`.

use anyhow::{bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use deepdebug::debugger::{cruxeval, dataset, eval, neural, pdb, predictor, record, sampler, session, trace};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the traced program comes from.
#[derive(clap::Args)]
pub struct Source {
    /// Python file defining the function(s).
    #[arg(long, conflicts_with = "trace")]
    code: Option<PathBuf>,
    /// Call expression to trace, e.g. 'f(1, [2, 3])'.
    #[arg(long, requires = "code")]
    call: Option<String>,
    /// A trace JSON written by `deepdebug trace` (instead of --code/--call).
    #[arg(long)]
    trace: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct LimitArgs {
    /// Wall-clock limit per traced call, in seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Event cap: a trace that reaches it exits `never` (infinite loop).
    #[arg(long, default_value_t = 10_000)]
    max_events: usize,
    /// Longest repr kept for a value, in characters.
    #[arg(long, default_value_t = 300)]
    max_repr: usize,
    /// Python interpreter that runs the program (and, in `debug`, evaluates `p` expressions
    /// and breakpoint conditions).
    #[arg(long, default_value = "python3")]
    python: PathBuf,
    #[command(flatten)]
    sandbox: super::sandbox::SandboxArgs,
}

impl LimitArgs {
    fn limits(&self) -> Result<record::RecordLimits> {
        let sandbox = Some(self.sandbox.resolve()?);
        Ok(record::RecordLimits {
            timeout: Duration::from_secs_f64(self.timeout.max(0.1)),
            max_events: self.max_events,
            max_repr: self.max_repr,
            python: self.python.clone(),
            sandbox,
            ..record::RecordLimits::standard()
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Backend {
    /// Replay the recorded trace (exact, including stepping back).
    Real,
    /// The neural code path (serialize, predict, parse) with the replaying oracle predictor.
    Oracle,
    /// A trained next-state model (--model DIR).
    Neural,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PredictorChoice {
    /// Replays the recorded traces (scores 100%).
    Oracle,
    /// Predicts that nothing changes (a floor).
    CopyLast,
    /// A trained next-state model (--model DIR).
    Neural,
}

/// The trained model for `--backend neural` / `--predictor neural`.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// Model directory written by `deepdebug train --task next-state`.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Run the model on the CPU even when built with CUDA.
    #[arg(long)]
    cpu: bool,
}

impl ModelArgs {
    fn load(&self, what: &str) -> Result<neural::NeuralPredictor> {
        let Some(dir) = &self.model else {
            bail!("{what} needs --model DIR, a model trained with `deepdebug train --task next-state`");
        };
        Ok(neural::NeuralPredictor::load(dir, self.cpu)?)
    }

    fn warn_unused(&self) {
        if self.model.is_some() {
            eprintln!("note: --model is only used by the neural backend or predictor");
        }
    }
}

#[derive(Subcommand)]
pub enum DebuggerCommand {
    /// Record a Python call with sys.settrace and print the trace as JSON.
    Trace {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        limits: LimitArgs,
        /// Print the step_into trajectory in the token grammar instead of JSON.
        #[arg(long)]
        grammar: bool,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Interactive pdb-like debugger; reads commands from stdin.
    Debug {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        limits: LimitArgs,
        #[arg(long, value_enum, default_value_t = Backend::Real)]
        backend: Backend,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// A Debug Adapter Protocol server on stdin/stdout, for editors (VS Code and others):
    /// records the launched program, then serves stepping forwards and backwards, breakpoints
    /// (with conditions), variables and evaluation from the recording (`backend: "real"`), or
    /// from states a model predicts (`backend: "neural"`, with `call` and `model`).
    Dap {
        /// Python interpreter that runs the program.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
    },
    /// Sample grammar-serialized trajectories from a JSONL of {code, input[, id, entry]}.
    TraceDataset {
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Trajectories sampled per function row.
        #[arg(long, default_value_t = 4)]
        per_trace: usize,
        #[arg(long, default_value_t = 32)]
        max_actions: usize,
        #[arg(long, default_value_t = 0.5)]
        inverse_fraction: f64,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Next-state exact match (overall and per component) per action, as JSON.
    EvalNextState {
        #[arg(long)]
        input: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, default_value_t = 4)]
        per_trace: usize,
        #[arg(long, value_enum, default_value_t = PredictorChoice::Oracle)]
        predictor: PredictorChoice,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// CruxEval-style pass@1 (output: step_return, breakpoint; input: inv_step_call), as JSON.
    EvalCruxeval {
        /// JSONL of {code, input, output, id}.
        #[arg(long)]
        input: PathBuf,
        #[arg(long, value_enum, default_value_t = PredictorChoice::Oracle)]
        predictor: PredictorChoice,
        /// Predictions per task: above 1, the neural predictor samples (at --temperature) and
        /// the report adds pass@k for k = 1, 2, 4, … up to this.
        #[arg(long, default_value_t = 1)]
        samples: usize,
        /// Sampling temperature when --samples is above 1.
        #[arg(long, default_value_t = 0.8)]
        temperature: f64,
        /// First sampling seed (one seed per prediction after it).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
}

fn load_trace(source: &Source, limits: &LimitArgs) -> Result<trace::Trace> {
    if let Some(path) = &source.trace {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let t: trace::Trace =
            serde_json::from_str(&text).with_context(|| format!("parsing trace {}", path.display()))?;
        if t.format_version != trace::TRACE_FORMAT_VERSION {
            bail!(
                "{}: trace format_version {} is not supported (expected {})",
                path.display(),
                t.format_version,
                trace::TRACE_FORMAT_VERSION
            );
        }
        return Ok(t);
    }
    let (Some(code), Some(call)) = (&source.code, &source.call) else {
        bail!("give --code FILE --call EXPR, or --trace FILE");
    };
    let text = std::fs::read_to_string(code).with_context(|| format!("reading {}", code.display()))?;
    Ok(record::record_call(&text, call, &limits.limits()?)?)
}

fn write_out(out: Option<&Path>, text: &str) -> Result<()> {
    match out {
        Some(path) => std::fs::write(path, text).with_context(|| format!("writing {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            Ok(stdout.flush()?)
        }
    }
}

/// The model for `--predictor neural`, loaded before anything is traced so that a bad
/// `--model` fails at once.
fn load_model(choice: PredictorChoice, model: &ModelArgs) -> Result<Option<neural::NeuralPredictor>> {
    match choice {
        PredictorChoice::Neural => Ok(Some(model.load("--predictor neural")?)),
        PredictorChoice::Oracle | PredictorChoice::CopyLast => {
            model.warn_unused();
            Ok(None)
        }
    }
}

fn make_predictor(
    choice: PredictorChoice,
    traces: Vec<trace::Trace>,
    neural: Option<neural::NeuralPredictor>,
) -> Result<Box<dyn predictor::NextStatePredictor>> {
    Ok(match (choice, neural) {
        (PredictorChoice::Oracle, _) => Box::new(predictor::OraclePredictor::new(traces)),
        (PredictorChoice::CopyLast, _) => Box::new(predictor::CopyLastPredictor),
        (PredictorChoice::Neural, Some(p)) => Box::new(p),
        (PredictorChoice::Neural, None) => bail!("--predictor neural: the model was not loaded"),
    })
}

pub fn run(command: DebuggerCommand) -> Result<()> {
    match command {
        DebuggerCommand::Trace { source, limits, grammar: as_grammar, out } => {
            let t = load_trace(&source, &limits)?;
            let text = if as_grammar {
                format!("{}\n", sampler::step_into_trajectory(&t).serialize())
            } else {
                format!("{}\n", serde_json::to_string_pretty(&t)?)
            };
            write_out(out.as_deref(), &text)
        }
        DebuggerCommand::Debug { source, limits, backend, model } => {
            // Load the model first: a bad --model fails before anything is traced.
            let neural = match backend {
                Backend::Neural => Some(model.load("--backend neural")?),
                Backend::Real | Backend::Oracle => {
                    model.warn_unused();
                    None
                }
            };
            let t = load_trace(&source, &limits)?;
            let stdin = std::io::stdin();
            let echo = !stdin.is_terminal();
            let mut input = stdin.lock();
            let mut stdout = std::io::stdout().lock();
            let input: &mut dyn BufRead = &mut input;
            // Locations name the --code file (line numbers are its own; the generated entry
            // point `main` follows its last line), or the saved trace.
            let file = source
                .code
                .as_ref()
                .or(source.trace.as_ref())
                .and_then(|p| p.file_name())
                .map_or_else(|| "<program>".to_string(), |n| n.to_string_lossy().into_owned());
            let mut backend: Box<dyn session::DebugBackend> = match backend {
                Backend::Real => Box::new(session::ReplayBackend::new(&t)),
                Backend::Oracle => {
                    Box::new(session::PredictorBackend::new(predictor::OraclePredictor::new(vec![t.clone()]), &t))
                }
                Backend::Neural => {
                    let p = neural.context("the neural model was loaded above")?;
                    Box::new(session::PredictorBackend::new(p, &t))
                }
            };
            pdb::run(backend.as_mut(), &t.program, &file, &limits.python, input, &mut stdout, echo)?;
            Ok(())
        }
        DebuggerCommand::Dap { python } => {
            let stdin = std::io::stdin();
            let mut server = deepdebug::debugger::dap::Server::new(std::io::stdout().lock(), &python);
            server.serve(&mut stdin.lock()).context("the DAP connection")
        }
        DebuggerCommand::TraceDataset { input, out, seed, per_trace, max_actions, inverse_fraction, limits } => {
            let rows: Vec<sampler::FunctionRow> = dataset::read_jsonl(&input)?;
            let config = sampler::SamplerConfig { max_actions, inverse_fraction, ..sampler::SamplerConfig::standard() };
            let (samples, stats) = dataset::generate(&rows, &limits.limits()?, per_trace, seed, &config);
            let mut text = String::new();
            for s in &samples {
                text.push_str(&serde_json::to_string(s)?);
                text.push('\n');
            }
            std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
            eprintln!("{}", serde_json::to_string(&stats)?);
            Ok(())
        }
        DebuggerCommand::EvalNextState { input, seed, per_trace, predictor: choice, model, limits } => {
            let neural = load_model(choice, &model)?;
            let rows: Vec<sampler::FunctionRow> = dataset::read_jsonl(&input)?;
            let traces: Vec<trace::Trace> =
                dataset::record_rows(&rows, &limits.limits()?).into_iter().filter_map(Result::ok).collect();
            let cases = eval::sample_cases(&traces, per_trace, seed, &sampler::SamplerConfig::standard());
            let mut p = make_predictor(choice, traces, neural)?;
            let report = eval::evaluate(p.as_mut(), &cases);
            write_out(None, &format!("{}\n", serde_json::to_string_pretty(&report)?))
        }
        DebuggerCommand::EvalCruxeval { input, predictor: choice, samples, temperature, seed, model, limits } => {
            let mut neural = load_model(choice, &model)?;
            if samples > 1 {
                if let Some(n) = &mut neural {
                    n.with_sampling(temperature, seed);
                }
            }
            let rows: Vec<cruxeval::CruxRow> = dataset::read_jsonl(&input)?;
            let limits = limits.limits()?;
            let traces = cruxeval::record(&rows, &limits);
            let mut p = make_predictor(choice, traces.iter().flatten().cloned().collect(), neural)?;
            let mut reports = Vec::with_capacity(samples.max(1));
            for _ in 0..samples.max(1) {
                reports.push(cruxeval::evaluate(&rows, &traces, p.as_mut(), &limits)?);
            }
            let report = if samples > 1 { cruxeval::combine_samples(reports) } else { reports.remove(0) };
            write_out(None, &format!("{}\n", serde_json::to_string_pretty(&report)?))
        }
    }
}
