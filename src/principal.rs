//! placeholder: principal
