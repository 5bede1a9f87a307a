//! The eras `mrtr call` remembers from one run to the next: the HTTP endpoints
//! found to be of the 2025 era, so that the next call to one opens its session
//! at once instead of trying a 2026-07-28 request first. A modern endpoint needs
//! no entry (the modern request is the first one anyway).
//!
//! The file is `$MRTR_ERA_CACHE`, else `$XDG_CACHE_HOME/mrtr/eras.json`, else
//! `~/.cache/mrtr/eras.json` (an empty `MRTR_ERA_CACHE` keeps none): a JSON
//! object of endpoint URLs (no userinfo, no query) to `"legacy"`, at most
//! [`MAX_REMEMBERED_SERVERS`] of them. Only `--era auto` reads or writes it. A
//! stale entry does no harm: when the session cannot be opened, the client
//! forgets it and tells the era again, and the entry goes.

use std::io::Read;
use std::path::{Path, PathBuf};

use mrtr_client::legacy::MAX_REMEMBERED_SERVERS;
use mrtr_client::{Era, EraCache};
use serde_json::{Map, Value};

/// The largest era file read (bytes); a larger one is ignored.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The environment variable naming the file.
pub const ERA_CACHE_ENV: &str = "MRTR_ERA_CACHE";

/// Where the file is, if anywhere.
pub(super) fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(ERA_CACHE_ENV) {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("mrtr").join("eras.json"))
}

/// The entries of the file: endpoint → `"legacy"` (anything else is left out;
/// a missing, unreadable or oversized file is empty).
fn read(path: &Path) -> Map<String, Value> {
    let Ok(file) = std::fs::File::open(path) else {
        return Map::new();
    };
    let mut text = String::new();
    if file
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .is_err()
        || text.len() as u64 > MAX_FILE_BYTES
    {
        return Map::new();
    }
    let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(&text) else {
        return Map::new();
    };
    entries
        .into_iter()
        .filter(|(k, v)| {
            (k.starts_with("http://") || k.starts_with("https://"))
                && v.as_str() == Some(Era::Legacy.as_str())
        })
        .take(MAX_REMEMBERED_SERVERS)
        .collect()
}

/// A cache holding the file's entries.
pub(super) fn load(path: &Path) -> EraCache {
    let cache = EraCache::new();
    for server in read(path).keys() {
        cache.insert(server, Era::Legacy);
    }
    cache
}

/// Brings the file's entry for `server` in line with `era` (what the client
/// knows after the call): a 2025-era server is added, a modern one removed.
/// The file is read again first (another run may have written it) and
/// replaced whole; failures are only logged.
pub(super) fn record(path: &Path, server: &str, era: Option<Era>) {
    if !(server.starts_with("http://") || server.starts_with("https://")) {
        return;
    }
    let mut entries = read(path);
    let changed = match era {
        Some(Era::Legacy) if !entries.contains_key(server) => {
            if entries.len() >= MAX_REMEMBERED_SERVERS
                && let Some(first) = entries.keys().next().cloned()
            {
                entries.remove(&first);
            }
            entries.insert(server.to_owned(), Era::Legacy.as_str().into());
            true
        }
        Some(Era::Modern) => entries.remove(server).is_some(),
        _ => false,
    };
    if changed && let Err(e) = write(path, &entries) {
        tracing::debug!(error = %e, "the era file was not written");
    }
}

/// Replaces the file with `entries` (a temporary file renamed over it).
fn write(path: &Path, entries: &Map<String, Value>) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(entries).map_err(std::io::Error::other)?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_added_removed_and_filtered() {
        let dir = std::env::temp_dir().join(format!("mrtr-eras-{}", std::process::id()));
        let path = dir.join("eras.json");
        let _ = std::fs::remove_file(&path);
        record(&path, "http://a.example/mcp", Some(Era::Legacy));
        record(&path, "stdio:secret-command --token x", Some(Era::Legacy));
        record(&path, "http://b.example/mcp", Some(Era::Legacy));
        let cache = load(&path);
        assert_eq!(cache.get("http://a.example/mcp"), Some(Era::Legacy));
        assert_eq!(cache.entries().len(), 2);
        record(&path, "http://a.example/mcp", Some(Era::Modern));
        assert_eq!(load(&path).get("http://a.example/mcp"), None);
        // Junk in the file is left out, never an error.
        std::fs::write(
            &path,
            r#"{"http://c.example/": "legacy", "ftp://x": "legacy", "http://d.example/": 7}"#,
        )
        .unwrap();
        let entries = load(&path).entries();
        assert_eq!(entries, [("http://c.example/".to_owned(), Era::Legacy)]);
        std::fs::write(&path, "not json").unwrap();
        assert!(load(&path).entries().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
