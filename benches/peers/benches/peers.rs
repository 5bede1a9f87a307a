//! One criterion run: mrtr's seal/open beside rmcp's `RequestStateCodec` (rs2, HMAC-SHA256,
//! sign-only) for the same JSON state and a comparable binding (96 bytes of AAD for rmcp,
//! the three binding digests for mrtr), both with a 600 s TTL.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Claims, Key, Keyring, SealConfig, Sealer, UntrustedState};
use mrtr::time::Timestamp;
use rmcp::model::{RequestStateCodec, SealOptions};

const SIZES: [usize; 4] = [256, 1024, 4096, 16384];

fn bench(c: &mut Criterion) {
    let cfg = SealConfig::default()
        .max_plaintext(32 * 1024)
        .max_token_len(64 * 1024);
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
    let now = Timestamp::now();
    let codec = RequestStateCodec::new_with_keyring("k1", [("k1", vec![7u8; 32])]).unwrap();
    let opts = SealOptions::new()
        .associated_data(&aad)
        .ttl(Duration::from_secs(600));

    let mut g = c.benchmark_group("peers");
    for n in SIZES {
        let state = "s".repeat(n - 2);
        g.throughput(Throughput::Bytes(n as u64));

        let claims = Claims::first_round(binding, now, sealer.config(), state.clone());
        let token = UntrustedState::new(sealer.seal(&claims).unwrap());
        g.bench_with_input(BenchmarkId::new("mrtr_seal", n), &claims, |b, c| {
            b.iter(|| sealer.seal(black_box(c)).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("mrtr_open", n), &token, |b, t| {
            b.iter(|| sealer.open::<String>(black_box(t), &binding, now).unwrap())
        });

        let rtoken = codec.seal_json_with(&state, &opts).unwrap();
        assert_eq!(
            codec.open_json_with::<String>(&rtoken, &aad).unwrap(),
            state
        );
        g.bench_with_input(BenchmarkId::new("rmcp_seal", n), &state, |b, s| {
            b.iter(|| codec.seal_json_with(black_box(s), &opts).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("rmcp_open", n), &rtoken, |b, t| {
            b.iter(|| codec.open_json_with::<String>(black_box(t), &aad).unwrap())
        });
        eprintln!(
            "size {n}: mrtr token {} chars, rmcp token {} chars",
            token.as_str().len(),
            rtoken.len()
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
