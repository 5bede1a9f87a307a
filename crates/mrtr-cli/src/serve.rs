//! `mrtr serve`: the settings ([`ServeConfig`]), the one place the engine is
//! assembled from them ([`build_service`]: keys, seal configuration, limits,
//! replay guard), and the process around `mrtr-server`'s transports ([`serve`]:
//! signals, SIGHUP key reload, the metrics listener). The binary's, not an API.
//!
//! The files: `config` (the settings and each flag's check), `run` (the
//! process), `replay_store`, `reload` and `shutdown` (its parts).

mod config;
mod reload;
mod replay_store;
mod run;
mod shutdown;

use std::time::Duration;

use mrtr::Timestamp;
use mrtr::engine::Engine;
use mrtr::seal::SealConfig;
use mrtr::service::Service;

pub use config::{OAuthSettings, PRINCIPAL_ENV, PrincipalConfig, ServeConfig};
pub use reload::{KeyReload, reload_keys};
pub use replay_store::ReplayStore;
pub use run::{ServeError, serve};

pub use mrtr_server::ServerConfigError;
pub use mrtr_server::keys::{KEYS_ENV, KeySource, keyring_from_env};

/// Not library API (the `mrtr` binary's, which may change in any release).
///
/// Builds the request service from the settings: the ONE place where the engine
/// (keys, seal configuration, limits, replay guard) is assembled; `make` puts the
/// application's tools, prompts and resources on it, the lists are paged at
/// `cfg.page_size`, and the eras served are `cfg.eras`.
///
/// ```
/// use mrtr_cli::serve::{ServeConfig, build_service};
/// use mrtr::service::Service;
/// let service = build_service(&ServeConfig::default(), |engine| {
///     Service::new(engine, "example", "1.0.0")
/// })
/// .unwrap();
/// assert_eq!(service.engine().audience(), mrtr::defaults::AUDIENCE);
/// ```
///
/// The in-memory replay guard refuses states sealed before the second this is
/// called in ([`MemoryReplayGuard::new`](mrtr::replay::MemoryReplayGuard::new));
/// [`serve`] calls it at the start of a fresh second.
///
/// # Errors
/// [`ServerConfigError`] if the keys cannot be loaded, or the replay store is unusable.
#[doc(hidden)]
pub fn build_service<F>(cfg: &ServeConfig, make: F) -> Result<Service, ServerConfigError>
where
    F: FnOnce(Engine) -> Service,
{
    let keyring = cfg.keys.keyring()?;
    let seal = SealConfig::default()
        .with_ttl(Duration::from_secs(cfg.state_ttl_secs))
        .map_err(|e| ServerConfigError(format!("--state-ttl: {e}")))?
        .with_clock_skew(Duration::from_secs(cfg.clock_skew_secs));
    let (guard, tasks) = replay_store::stores(&cfg.replay(), Timestamp::now())?;
    let engine = Engine::new(keyring, cfg.audience.clone())
        .with_seal_config(seal)
        .with_max_rounds(cfg.max_rounds)
        // A side effect behind `Round::once` must not repeat when a client replays
        // the final round.
        .with_replay_guard(guard);
    let mut service = make(engine)
        .with_page_size(cfg.page_size)
        .with_eras(cfg.eras);
    if service.serves_tasks() {
        // The tasks go where the claims go: a fleet sharing one shares both.
        if let Some(store) = tasks {
            service = service.with_task_store(store);
        }
        if let Some(secs) = cfg.task_lease_secs {
            service = service.with_task_lease(Duration::from_secs(secs));
        }
    }
    Ok(service)
}

#[cfg(test)]
mod tests;
