//! placeholder: carrier
