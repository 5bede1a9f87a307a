//! [`TokenCache`]: the tokens and registered clients of one user, in a file only
//! that user can read (mode 0600 in a directory of mode 0700).

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TransportError;

/// The cache file's format version.
const VERSION: u32 = 1;

/// A file of OAuth tokens, keyed by authorization server and resource, and of
/// the clients registered with each authorization server.
///
/// Written whole, to a temporary file renamed over the old one, so a reader
/// never sees half of it. On Unix it is created with mode 0600 (and its
/// directory, if missing, with 0700); an existing file is set to 0600 on
/// every write.
#[derive(Clone)]
pub struct TokenCache {
    path: PathBuf,
}

impl fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCache")
            .field("path", &self.path)
            .finish()
    }
}

/// The tokens of one (authorization server, MCP server) pair.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Entry {
    /// The MCP server's URL the login was for: what the entry is found and
    /// forgotten by (its metadata's `resource` may be the server's origin).
    /// Empty in entries written before it was kept; those go by `resource`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) server: String,
    pub(super) issuer: String,
    pub(super) resource: String,
    pub(super) token_endpoint: String,
    pub(super) client_id: String,
    pub(super) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) refresh_token: Option<String>,
    /// Unix seconds; `None` when the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) scope: Option<String>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("server", &self.server)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A client registered dynamically (RFC 7591) with one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Registered {
    pub(super) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) client_secret: Option<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    tokens: Vec<Entry>,
    #[serde(default)]
    clients: BTreeMap<String, Registered>,
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> TransportError {
    TransportError::Unauthorized(format!("the token cache {}: {what}: {e}", path.display()))
}

impl TokenCache {
    /// The cache in the file `path` (created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The per-user default: `$XDG_CACHE_HOME/mrtr/tokens.json`, else
    /// `$HOME/.cache/mrtr/tokens.json`; `None` when neither is set.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            })?;
        Some(base.join("mrtr").join("tokens.json"))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<File, TransportError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                let file: File = serde_json::from_slice(&bytes).map_err(|_| {
                    TransportError::Unauthorized(format!(
                        "the token cache {} is not one this version reads; delete it to log in again",
                        self.path.display()
                    ))
                })?;
                if file.version != VERSION {
                    return Ok(File::default());
                }
                Ok(file)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
            Err(e) => Err(io_error("cannot read it", &self.path, &e)),
        }
    }

    fn store(&self, mut file: File) -> Result<(), TransportError> {
        file.version = VERSION;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if !dir.as_os_str().is_empty() && !dir.exists() {
            create_private_dir(dir)
                .map_err(|e| io_error("cannot create its directory", &self.path, &e))?;
        }
        let tmp = self
            .path
            .with_extension(format!("tmp.{}", std::process::id()));
        let bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        let written = (|| {
            let mut f = private_file(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_error("cannot write it", &self.path, &e));
        }
        Ok(())
    }

    /// The entry for the MCP server at `server_url`, whichever authorization
    /// server issued it.
    pub(super) fn entry_for(&self, server_url: &str) -> Result<Option<Entry>, TransportError> {
        let wanted = super::discovery_normalized(server_url);
        Ok(self.load()?.tokens.into_iter().find(|e| e.is_for(&wanted)))
    }

    pub(super) fn put(&self, entry: Entry) -> Result<(), TransportError> {
        let mut file = self.load()?;
        let key = super::discovery_normalized(entry.key());
        file.tokens
            .retain(|e| !(e.issuer == entry.issuer && super::discovery_normalized(e.key()) == key));
        file.tokens.push(entry);
        self.store(file)
    }

    pub(super) fn client(&self, issuer: &str) -> Result<Option<Registered>, TransportError> {
        Ok(self.load()?.clients.remove(issuer))
    }

    pub(super) fn put_client(
        &self,
        issuer: &str,
        client: Registered,
    ) -> Result<(), TransportError> {
        let mut file = self.load()?;
        file.clients.insert(issuer.to_owned(), client);
        self.store(file)
    }

    /// Forgets every token for the MCP server at `server_url` (saved for that
    /// URL, or for that resource); says how many there were. Registered
    /// clients are kept.
    ///
    /// # Errors
    /// [`TransportError::Unauthorized`] when the file cannot be read or written.
    pub fn forget(&self, server_url: &str) -> Result<usize, TransportError> {
        let mut file = self.load()?;
        let before = file.tokens.len();
        let wanted = super::discovery_normalized(server_url);
        file.tokens
            .retain(|e| !(e.is_for(&wanted) || super::discovery_normalized(&e.resource) == wanted));
        let gone = before - file.tokens.len();
        if gone > 0 {
            self.store(file)?;
        }
        Ok(gone)
    }
}

impl TokenCache {
    /// Forgets `entry` (a refresh token the server no longer takes).
    pub(super) fn remove(&self, entry: &Entry) -> Result<(), TransportError> {
        let mut file = self.load()?;
        let before = file.tokens.len();
        let key = super::discovery_normalized(entry.key());
        file.tokens
            .retain(|e| !(e.issuer == entry.issuer && super::discovery_normalized(e.key()) == key));
        if file.tokens.len() != before {
            self.store(file)?;
        }
        Ok(())
    }
}

impl Entry {
    /// What the entry is kept under: the MCP server's URL, else (an older
    /// entry) the resource.
    fn key(&self) -> &str {
        if self.server.is_empty() {
            &self.resource
        } else {
            &self.server
        }
    }

    /// Whether the entry is for the server whose normalized URL is `wanted`.
    fn is_for(&self, wanted: &str) -> bool {
        super::discovery_normalized(self.key()) == wanted
    }
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // A fresh file, never one (or a symlink) planted at this name: a stale one
    // is removed first, and the create fails if another appears meanwhile.
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resource: &str, token: &str) -> Entry {
        Entry {
            issuer: "https://auth.example".into(),
            resource: resource.into(),
            token_endpoint: "https://auth.example/token".into(),
            client_id: "c".into(),
            access_token: token.into(),
            ..Entry::default()
        }
    }

    #[test]
    fn entries_are_kept_per_server_and_resource_in_a_private_file() {
        let dir = std::env::temp_dir().join(format!("mrtr-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = TokenCache::new(dir.join("sub").join("tokens.json"));
        assert_eq!(cache.entry_for("https://a/mcp").unwrap(), None);
        cache.put(entry("https://a/mcp", "t1")).unwrap();
        cache.put(entry("https://b/mcp", "t2")).unwrap();
        cache.put(entry("https://a/mcp", "t3")).unwrap();
        let got = cache.entry_for("https://a/mcp/").unwrap().unwrap();
        assert_eq!(got.access_token, "t3");
        assert!(!format!("{got:?}").contains("t3"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(cache.path()), 0o600);
            assert_eq!(mode(cache.path().parent().unwrap()), 0o700);
        }
        cache
            .put_client(
                "https://auth.example",
                Registered {
                    client_id: "dyn".into(),
                    client_secret: None,
                },
            )
            .unwrap();
        assert_eq!(cache.forget("https://A/mcp/").unwrap(), 1);
        assert_eq!(cache.entry_for("https://a/mcp").unwrap(), None);
        assert!(cache.entry_for("https://b/mcp").unwrap().is_some());
        assert_eq!(
            cache
                .client("https://auth.example")
                .unwrap()
                .unwrap()
                .client_id,
            "dyn"
        );
        assert_eq!(cache.forget("https://a/mcp").unwrap(), 0);
        std::fs::write(cache.path(), b"{not json").unwrap();
        assert!(cache.entry_for("https://b/mcp").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// N10: a login whose metadata names the server's origin as its resource is
    /// found again by the server's URL, and `forget` removes it.
    #[test]
    fn an_entry_whose_resource_is_the_origin_is_found_and_forgotten_by_the_server_url() {
        let dir = std::env::temp_dir().join(format!("mrtr-cache-origin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = TokenCache::new(dir.join("tokens.json"));
        let mut e = entry("https://a.example", "t1");
        e.server = "https://a.example/mcp".into();
        cache.put(e.clone()).unwrap();
        let got = cache.entry_for("https://a.example/mcp").unwrap().unwrap();
        assert_eq!(got.access_token, "t1");
        // A second login for the same server replaces the first.
        e.access_token = "t2".into();
        cache.put(e).unwrap();
        assert_eq!(cache.load().unwrap().tokens.len(), 1);
        // Another server on the same origin has its own entry.
        let mut other = entry("https://a.example", "t3");
        other.server = "https://a.example/other".into();
        cache.put(other).unwrap();
        assert_eq!(
            cache
                .entry_for("https://a.example/mcp")
                .unwrap()
                .unwrap()
                .access_token,
            "t2"
        );
        assert_eq!(cache.forget("https://a.example/mcp").unwrap(), 1);
        assert_eq!(cache.entry_for("https://a.example/mcp").unwrap(), None);
        assert!(
            cache
                .entry_for("https://a.example/other")
                .unwrap()
                .is_some()
        );
        // Forgetting by the resource itself removes what was kept for it.
        assert_eq!(cache.forget("https://a.example").unwrap(), 1);
        assert!(cache.load().unwrap().tokens.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A symlink planted at the temporary file's name is replaced, not written
    /// through; a refused refresh token's entry can be removed.
    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_not_written_through() {
        let dir = std::env::temp_dir().join(format!("mrtr-cache-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let cache = TokenCache::new(dir.join("tokens.json"));
        let tmp = cache
            .path()
            .with_extension(format!("tmp.{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        let e = entry("https://a/mcp", "t1");
        cache.put(e.clone()).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        assert_eq!(
            cache
                .entry_for("https://a/mcp")
                .unwrap()
                .unwrap()
                .access_token,
            "t1"
        );
        cache.remove(&e).unwrap();
        assert_eq!(cache.entry_for("https://a/mcp").unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
