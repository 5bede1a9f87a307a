//! `call`: one module per former test target.

mod auth;
mod cli;
mod https;
mod legacy;
mod reference;
mod refusals;
mod stdio;
mod tasks;
