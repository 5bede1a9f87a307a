//! placeholder: wire
