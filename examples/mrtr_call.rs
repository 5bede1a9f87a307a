//! `mrtr call` as a standalone program, until the `mrtr` binary gains the subcommand.
//!
//! ```text
//! cargo run --example mrtr_call -- http://127.0.0.1:8080/mcp tool NAME --args '{"x": 1}'
//! ```

use clap::Parser;
use mrtr::client::cli::{CallArgs, run_call};

/// Calls a tool, prompt or resource on an MCP server and answers its questions.
#[derive(Debug, Parser)]
#[command(name = "mrtr-call", version)]
struct Cli {
    #[command(flatten)]
    args: CallArgs,
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    std::process::exit(run_call(cli.args).await);
}
