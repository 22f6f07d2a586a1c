//! Neural debugger: Python tracing, state trees, token grammar, sampling, evaluation, front end.

pub mod cruxeval;
pub mod dap;
pub mod dataset;
pub mod eval;
#[cfg(test)]
mod fixtures;
pub mod grammar;
pub mod neural;
pub mod pdb;
pub mod predictor;
pub mod record;
pub mod sampler;
pub mod session;
pub mod trace;
pub mod tree;
