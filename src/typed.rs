//! Placeholder: replaced by the typed-decoding module.
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a value does not fit a type.
#[derive(Debug, Clone)]
pub struct TypeMismatch {
    field: String,
}

impl TypeMismatch {
    /// The field.
    pub fn field(&self) -> &str {
        &self.field
    }
    /// A sentence.
    pub fn describe(&self, what: &str) -> String {
        format!("{what} {:?} does not fit", self.field)
    }
}

impl std::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field {:?}", self.field)
    }
}

/// Decodes.
///
/// # Errors
/// On mismatch.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, TypeMismatch> {
    serde_json::from_value(value.clone()).map_err(|_| TypeMismatch {
        field: String::new(),
    })
}
