//! client: integration tests, one module per former test target.

mod driver;
mod hostile;
