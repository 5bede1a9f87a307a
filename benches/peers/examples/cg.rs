//! Callgrind harness: `cg <mrtr_seal|mrtr_open|rmcp_seal|rmcp_open> <size> <iters>`.
//! Run at two iteration counts and divide the difference for per-call instructions.

use std::hint::black_box;

use mrtr::seal::{Claims, UntrustedState};
use mrtr_peers_bench::Peers;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let which = a[1].as_str();
    let n: usize = a[2].parse().unwrap();
    let iters: usize = a[3].parse().unwrap();
    let peers = Peers::new();
    let opts = peers.opts();
    let (sealer, binding, aad, now, codec) = (
        &peers.sealer,
        peers.binding,
        &peers.aad,
        peers.now,
        &peers.codec,
    );
    let state = "s".repeat(n - 2);
    let claims = Claims::first_round(binding, now, sealer.config(), state.clone());
    let token = UntrustedState::new(sealer.seal(&claims).unwrap());
    let rtoken = codec.seal_json_with(&state, &opts).unwrap();
    // warm up each path once
    black_box(sealer.open::<String>(&token, &binding, now).unwrap());
    black_box(codec.open_json_with::<String>(&rtoken, aad).unwrap());
    let t = std::time::Instant::now();
    for _ in 0..iters {
        match which {
            "mrtr_seal" => drop(black_box(sealer.seal(black_box(&claims)).unwrap())),
            "mrtr_open" => drop(black_box(
                sealer
                    .open::<String>(black_box(&token), &binding, now)
                    .unwrap(),
            )),
            "rmcp_seal" => drop(black_box(
                codec.seal_json_with(black_box(&state), &opts).unwrap(),
            )),
            "rmcp_open" => drop(black_box(
                codec
                    .open_json_with::<String>(black_box(&rtoken), aad)
                    .unwrap(),
            )),
            _ => panic!("which"),
        }
    }
    if std::env::var_os("CG_TIME").is_some() {
        println!(
            "{which} {n} {:.1} ns",
            t.elapsed().as_nanos() as f64 / iters as f64
        );
    }
}
