//! The generate-and-validate repair loop behind `deepdebug fix`.

pub mod candidate;
pub mod lab;
pub mod operators;
pub mod pairs;
pub mod priors;
pub mod rank;
pub mod templates;
pub mod fix;
