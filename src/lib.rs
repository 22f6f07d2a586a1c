//! deepdebug: automatic repair of Python programs (library root).

pub mod debugger;
pub mod python;
pub mod process;
pub mod pytest;
pub mod patch;
pub mod project;
pub mod localize;
pub mod repair;
pub mod exit_code;
pub mod report;
pub mod sandbox;
