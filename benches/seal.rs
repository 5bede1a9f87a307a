//! Seal and open cost by state size, beside the bare AEAD floor.
//!
//! `cargo bench --bench seal` (quick: `-- --warm-up-time 1 --measurement-time 2`).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mrtr::Timestamp;
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Claims, Key, Keyring, SealConfig, Sealer, UntrustedState};
use xaes_256_gcm::Xaes256Gcm;
use xaes_256_gcm::aead::{AeadInOut, KeyInit};

const SIZES: [usize; 4] = [256, 1024, 4096, 16384];

fn bench(c: &mut Criterion) {
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
    let now = Timestamp::from_unix_secs(1_800_000_000);
    let xaes = Xaes256Gcm::new(&[7u8; 32].into());
    let aes = aes_gcm::Aes256Gcm::new(&[7u8; 32].into());

    let mut g = c.benchmark_group("seal");
    for n in SIZES {
        // A JSON string state whose serialized form is exactly n bytes.
        let state = "s".repeat(n - 2);
        let claims = Claims::first_round(binding, now, sealer.config(), state);
        let token = UntrustedState::new(sealer.seal(&claims).unwrap());
        let mut tampered = token.as_str().as_bytes().to_vec();
        let last = tampered.len() - 2;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = UntrustedState::new(String::from_utf8(tampered).unwrap());
        assert!(sealer.open::<String>(&tampered, &binding, now).is_err());

        g.throughput(Throughput::Bytes(n as u64));
        g.bench_with_input(BenchmarkId::new("seal", n), &claims, |b, c| {
            b.iter(|| sealer.seal(black_box(c)).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("open", n), &token, |b, t| {
            b.iter(|| sealer.open::<String>(black_box(t), &binding, now).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("open_reject", n), &tampered, |b, t| {
            b.iter(|| {
                sealer
                    .open::<String>(black_box(t), &binding, now)
                    .unwrap_err()
            })
        });
        let plain = vec![0x5au8; n];
        g.bench_with_input(BenchmarkId::new("xaes256gcm_floor", n), &plain, |b, p| {
            let nonce = xaes_256_gcm::Nonce::from([3u8; 24]);
            let mut buf = p.clone();
            b.iter(|| {
                buf.copy_from_slice(p);
                let tag = xaes
                    .encrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into())
                    .unwrap();
                xaes.decrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into(), &tag)
                    .unwrap();
                black_box(&buf);
            })
        });
        g.bench_with_input(BenchmarkId::new("aes256gcm_floor", n), &plain, |b, p| {
            let nonce = aes_gcm::Nonce::from([3u8; 12]);
            let mut buf = p.clone();
            b.iter(|| {
                buf.copy_from_slice(p);
                let tag = aes
                    .encrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into())
                    .unwrap();
                aes.decrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into(), &tag)
                    .unwrap();
                black_box(&buf);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
