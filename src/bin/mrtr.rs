//! `mrtr`: the reference MRTR server and operator tools.
//!
//! Exit codes: 0 success; 1 runtime failure (e.g. the listen address is taken);
//! 2 usage or configuration error (message on stderr).

fn main() {}
