//! What `fix` learns offline from mined fix commits: function pairs, operator priors, fix templates.

pub mod pairs;
pub mod priors;
pub mod templates;
