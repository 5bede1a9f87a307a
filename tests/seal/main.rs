//! seal: integration tests, one module per former test target.

mod binding;
mod expiry;
mod keys;
mod primitive;
mod rotation;
mod roundtrip;
mod tamper;
mod vectors;
