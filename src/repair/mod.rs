//! The generate-and-validate repair loop behind `deepdebug fix`: candidates from sources, a search that schedules them, a lab that validates them, judges that pick the patch, and what is learned offline from fix commits.

pub mod candidate;
pub mod cleanup;
pub mod defaults;
pub mod fix;
pub mod judge;
pub mod lab;
pub mod learn;
pub mod search;
pub mod sources;
