//! The shared set-up of the peer comparison: one mrtr `Sealer` and one rmcp
//! `RequestStateCodec`, keyed alike and bound to the same request, so the bench
//! (`benches/peers.rs`) and the callgrind harness (`examples/cg.rs`) measure the same thing.

use std::time::Duration;

use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Key, Keyring, SealConfig, Sealer};
use rmcp::model::{RequestStateCodec, SealOptions};

/// Both codecs, their binding, and the time they seal at.
pub struct Peers {
    /// mrtr's sealer (limits raised for 16 KiB states).
    pub sealer: Sealer,
    /// The request mrtr binds to.
    pub binding: Binding,
    /// rmcp's associated data: the same three binding digests (96 bytes).
    pub aad: Vec<u8>,
    /// The time of sealing and opening.
    pub now: Timestamp,
    /// rmcp's codec (rs2, HMAC-SHA256).
    pub codec: RequestStateCodec,
}

impl Peers {
    /// Builds both with the key `[7; 32]`.
    pub fn new() -> Self {
        let cfg = SealConfig::default()
            .with_max_plaintext(32 * 1024)
            .with_max_token_len(64 * 1024);
        let sealer = Sealer::new(Keyring::new(Key::from_secret(&[7u8; 32]).unwrap()), cfg);
        let who = Principal::subject("alice").with_issuer("https://idp.example");
        let args = serde_json::json!({"env": "prod", "replicas": 3});
        let binding = Binding::new(&BindingInput {
            method: "tools/call",
            target: "deploy",
            arguments: Some(&args),
            principal: &who,
            audience: "https://mcp.example",
            protocol_version: "2026-07-28",
        });
        let aad: Vec<u8> = [
            &binding.request_digest()[..],
            &binding.principal_digest()[..],
            &binding.audience_digest()[..],
        ]
        .concat();
        let codec = RequestStateCodec::new_with_keyring("k1", [("k1", vec![7u8; 32])]).unwrap();
        Self {
            sealer,
            binding,
            aad,
            now: Timestamp::now(),
            codec,
        }
    }

    /// rmcp's seal options: the AAD and a 600 s TTL, as mrtr's default.
    pub fn opts(&self) -> SealOptions<'_> {
        SealOptions::new()
            .associated_data(&self.aad)
            .ttl(Duration::from_secs(600))
    }
}

impl Default for Peers {
    fn default() -> Self {
        Self::new()
    }
}
