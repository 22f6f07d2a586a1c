//! Command-line entry point: parses arguments and dispatches to subcommands.

mod cli;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use deepdebug::exit_code::ExitCode;

#[derive(Parser)]
#[command(name = "deepdebug", version, about = "Automatic repair of Python programs", args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Find a patch that makes the failing pytest tests pass, and print it as a diff.
    Fix(cli::fix::FixArgs),
    /// Mine (buggy, fixed) function pairs from the fix commits of git repositories.
    Mine(cli::mine::MineArgs),
    /// Plant heuristic bugs in functions covered by passing tests; keep those the tests catch.
    Inject(cli::inject::InjectArgs),
    /// Learn repair-operator priors from mined fix pairs (JSONL with `before`/`after`).
    Priors(cli::priors::PriorsArgs),
    /// Learn fix templates from mined fix pairs: abstracted minimal edits, ranked by support.
    Templates(cli::templates::TemplatesArgs),
    /// DeepDebug's training pipeline, resumable: pairs → bug-creator → packages → inject → rows
    /// → patcher → evaluate → report.
    Pipeline(cli::pipeline::PipelineArgs),
    /// Evaluate `fix` on a benchmark (QuixBugs layout).
    #[command(subcommand)]
    Eval(cli::eval::EvalCommand),
    #[command(flatten)]
    Debugger(cli::debugger::DebuggerCommand),
    #[command(flatten)]
    Model(cli::model::ModelCommand),
    /// Sandboxes for test runs: build the Docker image, run the isolation self-test.
    #[command(subcommand)]
    Sandbox(cli::sandbox::SandboxCommand),
}

fn main() -> std::process::ExitCode {
    let parsed = Cli::command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { ExitCode::Usage.into() } else { ExitCode::Success.into() };
        }
    };
    // Scratch copies and servers go into one directory, removed on Ctrl-C/SIGTERM as at the end.
    let _run_dir = deepdebug::interrupt::RunDir::begin()
        .map_err(|err| eprintln!("warning: {err}; an interrupted run may leave temporary files behind"))
        .ok();
    let result = match cli.command {
        Command::Fix(args) => {
            cli::fix::run(&args, matches.subcommand_matches("fix").expect("the fix subcommand's matches"))
        }
        Command::Priors(args) => cli::priors::run(&args),
        Command::Templates(args) => cli::templates::run(&args),
        Command::Inject(args) => cli::inject::run(&args),
        Command::Mine(args) => cli::mine::run(&args),
        Command::Eval(command) => cli::eval::run(&command),
        Command::Pipeline(args) => cli::pipeline::run(&args).map(|()| ExitCode::Success),
        Command::Debugger(command) => cli::debugger::run(command).map(|()| ExitCode::Success),
        Command::Model(command) => cli::model::run(command).map(|()| ExitCode::Success),
        Command::Sandbox(command) => cli::sandbox::run(&command),
    };
    match result {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::Software.into()
        }
    }
}
