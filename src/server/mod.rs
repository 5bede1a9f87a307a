//! placeholder: server
