//! The workspace's docs and comments point only inside the repository or at the
//! public MCP specification by section name: no `.rs` file under `src/` or
//! `crates/*/src/`, and no README, names a document that lives outside it.
//!
//! What a reader needs from such documents belongs in `crate::manual` or in the
//! item's own docs. Cite the specification in words, e.g. "MCP 2026-07-28, Multi
//! Round-Trip Requests §Supported Requests".

use std::path::{Path, PathBuf};

/// Names of documents outside the repository, matched case-insensitively.
const FORBIDDEN: &[&str] = &[
    "design.md",
    "spec.md",
    "conformance.md",
    "sealing.md",
    "peers.md",
    "../shared",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn src_names_no_document_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    // Every crate of the workspace: its sources and its README (its crate docs).
    for entry in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let dir = entry.expect("directory entry").path();
        rust_files(&dir.join("src"), &mut files);
        files.push(dir.join("README.md"));
    }
    files.push(root.join("README.md"));
    files.sort();
    assert!(
        files.len() > 20,
        "too few .rs files found under src/ and crates/*/src/"
    );
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for name in FORBIDDEN {
                if lower.contains(name) {
                    let rel = file.strip_prefix(root).unwrap_or(file);
                    hits.push(format!(
                        "{}:{}: {name}: {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "the sources point at documents outside the repository; move what the reader needs into \
         crate::manual, or cite the public MCP specification by section name:\n{}",
        hits.join("\n")
    );
}
