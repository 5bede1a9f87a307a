//! `call`: one module per former test target.

mod cli;
mod reference;
mod stdio;
mod https;
