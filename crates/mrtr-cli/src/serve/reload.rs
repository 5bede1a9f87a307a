//! Reloading the key ring of a running server: SIGHUP re-reads `--keys-file`.
//!
//! The file is read and parsed first, and the ring swapped in only if that
//! worked and the new ring still opens every state this instance may have in
//! flight ([`Sealer::try_replace_keyring`]), so a mistyped file, or one caught
//! half written, never leaves the server without keys nor breaks its flows: it
//! keeps the ring it has and says why. Log lines name kids (public: every token
//! carries its kid in clear) and the file's path, never key bytes or the file's
//! contents.

use std::future::Future;

use mrtr::Timestamp;
use mrtr::seal::{KeysInUse, Kid, Sealer};

use super::{KEYS_ENV, KeySource, ServerConfigError};

/// The tracing target of the reload lines (`RUST_LOG=mrtr::keys=info`).
const TARGET: &str = "mrtr::keys";

/// What one reload of the keys did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyReload {
    /// The key file was read and parsed: its ring is now in force.
    Reloaded {
        /// The kids of the new ring, the sealing one first.
        kids: Vec<Kid>,
    },
    /// The key file could not be read or did not parse: the ring in force is kept.
    Kept {
        /// Why (the path and the reason, never the file's contents).
        error: ServerConfigError,
    },
    /// The key file parsed, but its ring drops keys whose states this instance
    /// may still have in flight (a file caught half written, or a key removed
    /// too early): the ring in force is kept.
    Refused {
        /// Which keys, by kid.
        error: KeysInUse,
    },
    /// The keys come from `MRTR_KEYS` or are ephemeral: there is no file to re-read.
    NothingToReload,
}

/// Re-reads the keys from `source` and, if they parse, puts them in force in
/// `sealer` (and so in every clone of it: the engine's, the service's); logs the
/// result either way.
///
/// With [`KeySource::File`], the file is read and parsed as at start-up
/// ([`KeySource::keyring`]), then checked against what this instance sealed
/// ([`Sealer::try_replace_keyring`], at the system clock's `now`): the new ring
/// must still hold the key sealing now and every key that sealed a state which
/// may still open (within its flow deadline plus the clock skew), each with the
/// same secret. Then the new ring replaces the old one atomically and `key ring
/// reloaded` is logged (INFO, target `mrtr::keys`) with the kids and the number
/// of keys. Otherwise the old ring stays and the reason is logged at ERROR:
/// `key ring not reloaded`, with the path and the error (for a ring that drops
/// keys in use, their kids in `in_use`). Other sources have nothing to re-read:
/// that is logged at WARN and the ring is left alone. This is what `mrtr serve`
/// runs on SIGHUP; call it from your own trigger when embedding.
///
/// Write the file to a temporary name in the same directory and `rename` it over
/// the old one: a reader then sees the old file or the new one, never a part.
/// The check above catches a half-written rotation file that parses (its first
/// line only), not every one: see [`crate::manual::rotation`].
///
/// ```
/// use mrtr::seal::{Keyring, SealConfig, Sealer};
/// use mrtr_cli::serve::{KeyReload, KeySource, reload_keys};
/// let sealer = Sealer::new(Keyring::ephemeral(), SealConfig::default());
/// assert_eq!(reload_keys(&KeySource::Ephemeral, &sealer), KeyReload::NothingToReload);
/// ```
///
/// Blocking: it reads a file. From async code, run it with
/// `tokio::task::spawn_blocking`.
pub fn reload_keys(source: &KeySource, sealer: &Sealer) -> KeyReload {
    let path = match source {
        KeySource::File(path) => path,
        KeySource::Env(_) | KeySource::Ephemeral => {
            let from = if matches!(source, KeySource::Env(_)) {
                KEYS_ENV
            } else {
                "an ephemeral key"
            };
            tracing::warn!(
                target: TARGET,
                keys_from = from,
                "nothing to reload: keys are re-read only from --keys-file; \
                 the key ring is unchanged"
            );
            return KeyReload::NothingToReload;
        }
    };
    let ring = match source.keyring() {
        Ok(ring) => ring,
        Err(error) => {
            tracing::error!(
                target: TARGET,
                path = %path.display(),
                error = %error,
                "key ring not reloaded: keeping the previous ring"
            );
            return KeyReload::Kept { error };
        }
    };
    let kids = ring.kids();
    let previous = sealer.keyring().kids();
    let sealing = ring.sealing_kid();
    let list = |kids: &[Kid]| {
        kids.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    if let Err(error) = sealer.try_replace_keyring(ring, Timestamp::now()) {
        tracing::error!(
            target: TARGET,
            path = %path.display(),
            in_use = %list(&error.kids()),
            error = %error,
            "key ring not reloaded: keeping the previous ring (if the file was being \
             written, write it to a temporary name and rename it, then send SIGHUP again)"
        );
        return KeyReload::Refused { error };
    }
    let removed: Vec<Kid> = previous
        .iter()
        .copied()
        .filter(|k| !kids.contains(k))
        .collect();
    let removed = (!removed.is_empty()).then(|| list(&removed));
    tracing::info!(
        target: TARGET,
        path = %path.display(),
        kids = %list(&kids),
        sealing = %sealing,
        keys = kids.len(),
        removed = removed.as_ref().map(tracing::field::display),
        "key ring reloaded"
    );
    if !previous.contains(&sealing) {
        // Rotation phase 1 exists for this: other instances of a fleet cannot open
        // what this one now seals until they hold the key too.
        tracing::warn!(
            target: TARGET,
            sealing = %sealing,
            "the new sealing key was not in the previous ring: instances that do not \
             hold it yet refuse its states as unknown_key (add a key open-only \
             everywhere first, then make it seal)"
        );
    }
    KeyReload::Reloaded { kids }
}

/// The task that reloads the keys on SIGHUP; stopped when dropped.
#[derive(Debug)]
pub(crate) struct OnHangup(tokio::task::JoinHandle<()>);

impl Drop for OnHangup {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Installs the SIGHUP handler now and spawns the task that runs [`reload_keys`]
/// on every SIGHUP until the returned value is dropped.
///
/// Installing eagerly matters as for shutdown: SIGHUP's default action ends the
/// process, so the handler must be in place, in every mode and whatever the key
/// source, before the server reports that it is up. (Once installed, tokio keeps
/// it for the life of the process.) Must be called inside a tokio runtime.
pub(crate) fn on_hangup(source: KeySource, sealer: Sealer) -> OnHangup {
    OnHangup(tokio::spawn(hangups(source, sealer)))
}

/// If the handler cannot be installed, that is logged at WARN and the future
/// never resolves. Off Unix, there is no SIGHUP and the future does nothing.
fn hangups(source: KeySource, sealer: Sealer) -> impl Future<Output = ()> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let installed = signal(SignalKind::hangup());
        async move {
            let mut hangups = match installed {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, signal = "SIGHUP", "cannot install signal handler");
                    return std::future::pending().await;
                }
            };
            while hangups.recv().await.is_some() {
                let (source, sealer) = (source.clone(), sealer.clone());
                let reloaded =
                    tokio::task::spawn_blocking(move || reload_keys(&source, &sealer)).await;
                if let Err(e) = reloaded {
                    tracing::error!(target: TARGET, error = %e, "key ring reload failed");
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (source, sealer);
        std::future::pending()
    }
}
