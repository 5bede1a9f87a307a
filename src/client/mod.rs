//! placeholder: client
