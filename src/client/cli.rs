//! `mrtr call` (placeholder).
