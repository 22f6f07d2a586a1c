//! Which slice of a repository list this process handles: `--shard I/N` or a cluster array index.

use std::fmt;

/// Environment variables that carry an array index, in lookup order: Kubernetes Indexed
/// Jobs, then Slurm job arrays.
pub const INDEX_ENV_VARS: [&str; 2] = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"];

/// One shard out of `count`; repository `i` (in command-line order) belongs to shard
/// `i % count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: usize,
    count: usize,
}

/// Why a `--shard` value could not be resolved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardError {
    #[error("parse shard spec `{0}`: expected `I/N` or `N` with the index in {vars}", vars = INDEX_ENV_VARS.join(" or "))]
    Syntax(String),
    #[error("use shard index {index} of {count}: the index must be below the count, which must be positive")]
    OutOfRange { index: usize, count: usize },
    #[error("find the shard index for `--shard {0}`: none of {vars} is set", vars = INDEX_ENV_VARS.join(", "))]
    NoIndexInEnvironment(usize),
    #[error("parse shard index `{value}` from {var}")]
    BadEnvironmentIndex { var: &'static str, value: String },
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// A checked shard.
    pub fn new(index: usize, count: usize) -> Result<Shard, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    #[must_use]
    pub fn index(self) -> usize {
        self.index
    }

    #[must_use]
    pub fn count(self) -> usize {
        self.count
    }

    /// True when the item at position `position` of the shared list belongs to this shard.
    #[must_use]
    pub fn owns(self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// Parse `I/N`, or `N` with the index taken from the environment through `env`.
    ///
    /// For Slurm, `SLURM_ARRAY_TASK_MIN` is subtracted so arrays like `--array=1-8` work.
    pub fn parse(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| ShardError::Syntax(spec.to_string()));
        if let Some((index, count)) = spec.split_once('/') {
            return Shard::new(number(index)?, number(count)?);
        }
        let count = number(spec)?;
        for var in INDEX_ENV_VARS {
            let Some(value) = env(var) else { continue };
            let bad = || ShardError::BadEnvironmentIndex { var, value: value.clone() };
            let mut index: usize = value.trim().parse().map_err(|_| bad())?;
            if var == "SLURM_ARRAY_TASK_ID" {
                if let Some(min) = env("SLURM_ARRAY_TASK_MIN") {
                    let min: usize = min.trim().parse().map_err(|_| bad())?;
                    index = index.checked_sub(min).ok_or_else(bad)?;
                }
            }
            return Shard::new(index, count);
        }
        Err(ShardError::NoIndexInEnvironment(count))
    }

    /// `shard-00003-of-00008`, used in output file names.
    #[must_use]
    pub fn file_stem(self) -> String {
        format!("shard-{:05}-of-{:05}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
    }

    #[test]
    fn explicit_index_over_count_ignores_the_environment() {
        let shard = Shard::parse("2/5", env(&[("JOB_COMPLETION_INDEX", "4")])).unwrap();
        assert_eq!((shard.index(), shard.count()), (2, 5));
        assert!(shard.owns(7) && !shard.owns(8));
    }

    #[test]
    fn bare_count_takes_the_kubernetes_completion_index() {
        let shard = Shard::parse("4", env(&[("JOB_COMPLETION_INDEX", "3"), ("SLURM_ARRAY_TASK_ID", "1")])).unwrap();
        assert_eq!(shard, Shard::new(3, 4).unwrap());
    }

    #[test]
    fn slurm_task_id_is_offset_by_the_array_minimum() {
        let shard = Shard::parse("8", env(&[("SLURM_ARRAY_TASK_ID", "8"), ("SLURM_ARRAY_TASK_MIN", "1")])).unwrap();
        assert_eq!(shard, Shard::new(7, 8).unwrap());
    }

    #[test]
    fn bad_specs_are_rejected() {
        assert!(matches!(Shard::parse("3/3", env(&[])), Err(ShardError::OutOfRange { .. })));
        assert!(matches!(Shard::parse("0/0", env(&[])), Err(ShardError::OutOfRange { .. })));
        assert!(matches!(Shard::parse("a/3", env(&[])), Err(ShardError::Syntax(_))));
        assert_eq!(Shard::parse("3", env(&[])), Err(ShardError::NoIndexInEnvironment(3)));
        assert!(matches!(
            Shard::parse("3", env(&[("JOB_COMPLETION_INDEX", "x")])),
            Err(ShardError::BadEnvironmentIndex { .. })
        ));
        assert!(matches!(Shard::parse("3", env(&[("JOB_COMPLETION_INDEX", "3")])), Err(ShardError::OutOfRange { .. })));
    }
}
