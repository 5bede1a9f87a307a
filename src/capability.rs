//! placeholder: capability
