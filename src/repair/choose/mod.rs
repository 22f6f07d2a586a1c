//! Judging plausible patches: the regression guard and its confirmation runs, behavioural and syntactic anti-patterns, language-model naturalness, minimal changes.

pub mod behaviour;
pub mod guard;
pub mod minimal;
pub mod overfit;
pub mod rank;
