//! deepdebug: automatic repair of Python programs (library root).

pub mod mine;
pub mod python;
