//! The `mrtr` binary and the reference server, from outside: one test binary,
//! a module per area. `support` spawns the binary (`CARGO_BIN_EXE_mrtr`, which
//! cargo gives only this package's tests) and holds the reference service in
//! process; the helpers every crate's tests share are `mrtr-testkit`'s.

mod support;

mod audit;
mod call;
mod redis;
mod reference;
mod serve;
