//! One criterion run: mrtr's seal/open beside rmcp's `RequestStateCodec` (rs2, HMAC-SHA256,
//! sign-only) for the same JSON state and a comparable binding (96 bytes of AAD for rmcp,
//! the three binding digests for mrtr), both with a 600 s TTL.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mrtr::seal::{Claims, UntrustedState};
use mrtr_peers_bench::Peers;

const SIZES: [usize; 4] = [256, 1024, 4096, 16384];

fn bench(c: &mut Criterion) {
    let peers = Peers::new();
    let opts = peers.opts();
    let (sealer, binding, aad, now, codec) = (
        &peers.sealer,
        peers.binding,
        &peers.aad,
        peers.now,
        &peers.codec,
    );

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
        assert_eq!(codec.open_json_with::<String>(&rtoken, aad).unwrap(), state);
        g.bench_with_input(BenchmarkId::new("rmcp_seal", n), &state, |b, s| {
            b.iter(|| codec.seal_json_with(black_box(s), &opts).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("rmcp_open", n), &rtoken, |b, t| {
            b.iter(|| codec.open_json_with::<String>(black_box(t), aad).unwrap())
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
