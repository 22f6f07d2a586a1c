//! deepdebug: automatic repair of Python programs (library root).

pub mod debugger;
pub mod eval;
pub mod exclude;
pub mod exit_code;
pub mod hash;
pub mod inject;
pub mod interrupt;
pub mod io_error;
pub mod localize;
pub mod mine;
pub mod model;
pub mod patch;
pub mod pipeline;
pub mod process;
pub mod project;
pub mod pytest;
pub mod python;
pub mod repair;
pub mod report;
pub mod rng;
pub mod sandbox;
pub mod settings;
pub mod shard;
pub mod skeleton;
pub mod text;
