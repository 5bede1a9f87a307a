//! placeholder: seal
