//! The peer bench (`benches/peers/`, its own workspace and lock file) must build mrtr
//! with exactly the dependency versions this crate is tested with.
//!
//! Why it matters: `aes` 0.9.3 and later dispatch every block call through the VAES
//! backends on hosts that have them, which adds a fixed cost per call and makes a 256 B
//! seal about 30% slower on AVX-512 hosts. mrtr's own lock (resolved for its
//! `rust-version`) has `aes` 0.9.2; a peer bench that silently resolved a different
//! version would compare something CI never tests.

use std::collections::{BTreeSet, HashMap};

const ROOT_LOCK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock");
const PEERS_LOCK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peers/Cargo.lock");

/// A lock file's packages: name → [(version, dependency entries)].
type Packages = HashMap<String, Vec<(String, Vec<String>)>>;

fn packages(path: &str) -> Packages {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lock: toml::Table = text.parse().unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out: Packages = HashMap::new();
    for p in lock["package"].as_array().expect("[[package]] array") {
        let field = |k: &str| p[k].as_str().expect("string field").to_owned();
        let deps = p
            .get("dependencies")
            .and_then(|d| d.as_array())
            .map(|d| d.iter().map(|e| e.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        out.entry(field("name"))
            .or_default()
            .push((field("version"), deps));
    }
    out
}

/// Every (name, version) reachable from `root` in a lock file.
fn closure(lock: &Packages, root: &str) -> BTreeSet<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_owned()];
    while let Some(entry) = todo.pop() {
        // A dependency entry is "name" or "name version" (or "name version (source)").
        let mut words = entry.split_whitespace();
        let name = words.next().unwrap();
        let want = words.next();
        let candidates = &lock[name];
        let (version, deps) = match want {
            Some(v) => candidates.iter().find(|(cv, _)| cv == v).unwrap(),
            None => {
                assert_eq!(candidates.len(), 1, "{name}: ambiguous entry");
                &candidates[0]
            }
        };
        if seen.insert((name.to_owned(), version.clone())) {
            todo.extend(deps.iter().cloned());
        }
    }
    seen
}

#[test]
fn the_peer_bench_builds_mrtr_with_the_tested_versions() {
    let root = packages(ROOT_LOCK);
    let peers = packages(PEERS_LOCK);
    let used = closure(&peers, "mrtr");
    // Not vacuous: the sealing stack is in the walk.
    for name in [
        "xaes-256-gcm",
        "aes",
        "aes-gcm",
        "polyval",
        "base64",
        "serde_json",
    ] {
        assert!(
            used.iter().any(|(n, _)| n == name),
            "{name} not reached from mrtr in {PEERS_LOCK}"
        );
    }
    let drift: Vec<String> = used
        .iter()
        // A crate the root lock lacks is only there through features the peer
        // workspace turns on (rmcp's, on a shared dependency): nothing to compare.
        .filter_map(|(name, version)| {
            let tested = root.get(name)?;
            (!tested.iter().any(|(v, _)| v == version)).then(|| {
                let tested: Vec<&str> = tested.iter().map(|(v, _)| v.as_str()).collect();
                format!("{name} {version} (tested: {tested:?})")
            })
        })
        .collect();
    assert!(
        drift.is_empty(),
        "benches/peers/Cargo.lock builds mrtr with versions CI does not test: {drift:?}\n\
         fix: cd benches/peers && cargo update -p <name> --precise <tested version>"
    );
}
