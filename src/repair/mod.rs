//! The generate-and-validate repair loop behind `deepdebug fix`, by stage: `generate/` (candidate sources), `search/` (scheduling), `validate/` (validation in scratch copies), `choose/` (the guard, anti-patterns, ranking: which plausible patch to report), `fix` (the stages tied together), and `learn/` (what is learned offline from fix commits).

pub mod candidate;
pub mod choose;
pub mod cleanup;
pub mod defaults;
pub mod fix;
pub mod generate;
pub mod learn;
pub mod search;
pub mod validate;
