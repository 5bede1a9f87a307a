//! placeholder: error
