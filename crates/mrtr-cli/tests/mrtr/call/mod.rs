//! `call`: one module per former test target.

mod cli;
mod https;
mod reference;
mod stdio;
