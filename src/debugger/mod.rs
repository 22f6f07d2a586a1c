//! Neural debugger: Python tracing, state trees, token grammar, sampling, evaluation, front end.

pub mod eval;
pub mod grammar;
pub mod predictor;
pub mod record;
pub mod sampler;
pub mod trace;
pub mod tree;
