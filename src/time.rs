//! placeholder: time
