//! Where an edge's sealing keys come from: the environment ([`KEYS_ENV`]) or a
//! key file, read here; the core only parses text ([`Keyring::parse_keys`],
//! [`Keyring::parse_key_file`]).

use std::fmt;
use std::path::PathBuf;

use mrtr::Keyring;

use crate::ServerConfigError;

/// The environment variable holding the key ring of a fleet (comma-separated keys,
/// the first seals): read by the binary, never by the core.
pub const KEYS_ENV: &str = "MRTR_KEYS";
/// Where the sealing keys come from: the edge's side of key loading. Reading the
/// environment and the key file happens here, at the edge; the sealed-state module
/// only parses text ([`Keyring::parse_keys`], [`Keyring::parse_key_file`]).
#[derive(Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `--keys-file PATH`: the file holds the keys in the `MRTR_KEYS` format. The only
    /// source `mrtr serve` re-reads on SIGHUP.
    File(PathBuf),
    /// The raw value of the `MRTR_KEYS` environment variable.
    Env(String),
    /// No configured key: a random key for this process only.
    Ephemeral,
}

impl fmt::Debug for KeySource {
    // The environment value is key material: never print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(p) => f.debug_tuple("File").field(p).finish(),
            Self::Env(_) => f.write_str("Env(<redacted>)"),
            Self::Ephemeral => f.write_str("Ephemeral"),
        }
    }
}

impl KeySource {
    /// Picks the key source: `--keys-file` first, else `MRTR_KEYS` (passed in as
    /// read from the environment), else an ephemeral key.
    ///
    /// # Errors
    /// [`ServerConfigError`] if `MRTR_KEYS` is set but empty or not UTF-8: a fleet
    /// operator who set it by mistake must not silently get a per-process key.
    pub fn resolve(
        keys_file: Option<PathBuf>,
        env_value: Option<std::ffi::OsString>,
    ) -> Result<Self, ServerConfigError> {
        if let Some(path) = keys_file {
            return Ok(Self::File(path));
        }
        match env_value {
            None => Ok(Self::Ephemeral),
            Some(v) => match v.into_string() {
                Ok(s) if s.trim().is_empty() => {
                    Err(ServerConfigError(format!("{KEYS_ENV} is set but empty")))
                }
                Ok(s) => Ok(Self::Env(s)),
                Err(_) => Err(ServerConfigError(format!("{KEYS_ENV} is not valid UTF-8"))),
            },
        }
    }

    /// The key ring: read from the file and parsed (format of
    /// [`Keyring::parse_key_file`]), parsed from `MRTR_KEYS`, or a fresh ephemeral key.
    ///
    /// # Errors
    /// [`ServerConfigError`] naming what is wrong with the keys (never their bytes), or
    /// why the key file cannot be read.
    pub fn keyring(&self) -> Result<Keyring, ServerConfigError> {
        match self {
            Self::File(path) => {
                // Wiped on drop: the file holds the secrets.
                let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
                    ServerConfigError(format!(
                        "--keys-file: cannot read key file {}: {e}",
                        path.display()
                    ))
                })?);
                Keyring::parse_key_file(&text)
                    .map_err(|e| ServerConfigError(format!("--keys-file: {e}")))
            }
            Self::Env(s) => {
                Keyring::parse_keys(s).map_err(|e| ServerConfigError(format!("{KEYS_ENV}: {e}")))
            }
            Self::Ephemeral => Ok(Keyring::ephemeral()),
        }
    }
}

/// The key ring in the [`KEYS_ENV`] environment variable (`MRTR_KEYS`: keys in
/// the format of [`Keyring::parse_keys`], the first seals), read as `mrtr serve`
/// reads it: the one call an application embedding mrtr needs to share the
/// binary's keys. `None` when the variable is not set: choose
/// [`Keyring::ephemeral`] on purpose (a flow then does not survive a restart or
/// move to another instance), or refuse to start.
///
/// ```
/// let keyring = mrtr_server::keys::keyring_from_env()?.unwrap_or_else(mrtr::Keyring::ephemeral);
/// # drop(keyring);
/// # Ok::<(), mrtr_server::ServerConfigError>(())
/// ```
///
/// # Errors
/// [`ServerConfigError`] when the variable is set but empty or not UTF-8, or its
/// keys do not parse; the message names what is wrong, never the key bytes.
pub fn keyring_from_env() -> Result<Option<Keyring>, ServerConfigError> {
    match KeySource::resolve(None, std::env::var_os(KEYS_ENV))? {
        KeySource::Ephemeral => Ok(None),
        source => source.keyring().map(Some),
    }
}
