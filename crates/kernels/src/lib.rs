//! CPU kernels for deepdebug's language models: batched matmul on 4- and 8-bit GGUF weights, attention of new positions over a cached prefix, and nucleus selection.

pub mod attention;
pub mod qgemm;
pub mod sampling;

/// A shape that does not fit the data or the other operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input width is not a multiple of the quantization block.
    Width(usize),
    /// A buffer of the wrong length: what it is, the length expected, the length given.
    Length(&'static str, usize, usize),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Width(k) => write!(f, "input width {k} is not a multiple of {}", qgemm::BLOCK),
            Error::Length(what, want, got) => write!(f, "{what}: expected {want} values, got {got}"),
        }
    }
}

impl std::error::Error for Error {}
