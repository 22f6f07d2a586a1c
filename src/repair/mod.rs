//! The generate-and-validate repair loop behind `deepdebug fix`.

pub mod background;
pub mod behaviour;
pub mod candidate;
pub mod cleanup;
pub mod cloze;
pub mod defaults;
pub mod fix;
pub mod guard;
pub mod lab;
pub mod minimal;
pub mod operators;
pub mod overfit;
pub mod pairs;
pub mod patcher;
pub mod priors;
pub mod rank;
pub mod search;
pub mod signature;
pub mod sources;
pub mod templates;
pub mod widen;
