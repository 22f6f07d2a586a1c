//! deepdebug: automatic repair of Python programs (library root).

pub mod debugger;
pub mod python;
