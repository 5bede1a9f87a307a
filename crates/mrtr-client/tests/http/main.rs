//! http: integration tests, one module per former test target.

mod legacy;
mod transport;
