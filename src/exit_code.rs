//! Documented process exit codes of the `deepdebug` binary.

/// Exit codes, ranked so that scripts can branch on them (also listed in the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// A plausible patch was found (or the command succeeded).
    Success = 0,
    /// Internal or infrastructure error.
    Software = 1,
    /// Bad command line.
    Usage = 2,
    /// Candidates were validated but none made every test pass.
    NotFixed = 3,
    /// Every test already passes: nothing to repair.
    NothingToFix = 4,
    /// Python, pytest or a pytest plugin the configuration names is missing; the sandbox cannot start.
    Environment = 5,
    /// The test suite cannot run: no test ran at all, none of `--tests` ran, or no failing test within the baseline's share.
    BaselineBroken = 6,
    /// Interrupted by SIGINT, SIGTERM or SIGHUP (see `interrupt`): 128 + SIGINT, as shells report it.
    Interrupted = 130,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}
