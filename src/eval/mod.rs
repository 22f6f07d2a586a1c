//! Benchmark evaluation: QuixBugs-layout runs, behaviour comparison with correct programs, reports.

pub mod equivalence;
pub mod mutate;
pub mod quixbugs;
pub mod render;
