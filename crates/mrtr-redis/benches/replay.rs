//! What a `once` step's claim costs: the in-memory guard, and Redis on loopback.
//!
//! For each guard, the latency of N = 10 000 claims made one after the other
//! (median and p99), the latency of a whole final round whose handler runs one
//! `once_async` step (open the state, claim, run, finish), and the throughput of
//! claims made 64 at a time (Redis pipelines them on one connection).
//!
//! ```sh
//! cargo bench --bench replay                                        # memory only
//! MRTR_BENCH_REDIS_URL=$(scripts/redis.sh start) cargo bench -p mrtr-redis --bench replay
//! ```
//!
//! Without `MRTR_BENCH_REDIS_URL` the Redis part
//! is skipped, with a line saying so. A plain program, not criterion: the
//! figures wanted are percentiles of single claims, each a network round trip.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mrtr::Timestamp;
use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Flow, Form, Outcome, Round};
use mrtr::principal::Principal;
use mrtr::replay::{Claim, ClaimOutcome, MemoryReplayGuard, PrincipalKey, ReplayGuard};
use mrtr::seal::Keyring;
use mrtr::wire::{CarrierMethod, CarrierRequest};
use serde_json::json;

const N: usize = 10_000;
const IN_FLIGHT: usize = 64;
const SECRET: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
const AUDIENCE: &str = "https://mcp.bench.example";

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("replay guard claims: N = {N} each, one process, current-thread runtime");
    // Real time: Redis expires keys by its own clock.
    let started = Timestamp::now();
    // Bounds above what the bench claims (its rounds are all one principal's).
    let memory: Arc<dyn ReplayGuard> = Arc::new(
        MemoryReplayGuard::new(started)
            .with_max_claims(1_000_000)
            .with_max_claims_per_principal(1_000_000),
    );
    report(&rt, "memory", memory);
    redis_part(&rt);
}

fn redis_part(rt: &tokio::runtime::Runtime) {
    let Ok(url) = std::env::var("MRTR_BENCH_REDIS_URL") else {
        println!(
            "redis: skipped (MRTR_BENCH_REDIS_URL is not set; e.g. MRTR_BENCH_REDIS_URL=$(scripts/redis.sh start))"
        );
        return;
    };
    let audience = format!("bench-{}", std::process::id());
    let guard = mrtr_redis::RedisReplayGuard::new(&url, &audience).expect("a Redis URL");
    report(rt, "redis", Arc::new(guard));
}

fn report(rt: &tokio::runtime::Runtime, name: &str, guard: Arc<dyn ReplayGuard>) {
    // Warm up (the Redis connection opens on the first claim).
    let mut flows = Flows(0);
    for _ in 0..200 {
        let c = flows.claim();
        assert_eq!(
            rt.block_on(guard.claim(&c)),
            ClaimOutcome::Claimed,
            "{name}: warm-up"
        );
    }

    let mut lat = Vec::with_capacity(N);
    for _ in 0..N {
        let c = flows.claim();
        let t = Instant::now();
        let o = rt.block_on(guard.claim(&c));
        lat.push(t.elapsed());
        assert_eq!(o, ClaimOutcome::Claimed, "{name}");
    }
    let (med, p99) = percentiles(&mut lat);
    println!("{name:>6}: claim, one at a time:        median {med:>9.1?}  p99 {p99:>9.1?}");

    let claims: Vec<Claim> = (0..N).map(|_| flows.claim()).collect();
    let t = Instant::now();
    rt.block_on(async {
        for chunk in claims.chunks(IN_FLIGHT) {
            let outcomes =
                futures_util::future::join_all(chunk.iter().map(|c| guard.claim(c))).await;
            assert!(
                outcomes.iter().all(|o| *o == ClaimOutcome::Claimed),
                "{name}"
            );
        }
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{name:>6}: claims, {IN_FLIGHT} in flight:         {:>9.0} claims/s",
        N as f64 / secs
    );

    let engine = Engine::new(Keyring::parse_keys(SECRET).expect("key"), AUDIENCE)
        .with_replay_guard(Arc::clone(&guard));
    let mut lat = Vec::with_capacity(N);
    let flows = Instant::now();
    for _ in 0..N {
        let now = Timestamp::now();
        let Outcome::InputRequired(irr) = rt.block_on(round(&engine, request(None), now)) else {
            panic!("{name}: round 1 is input_required")
        };
        let last = request(irr.request_state());
        let t = Instant::now();
        let o = rt.block_on(round(&engine, last, now));
        lat.push(t.elapsed());
        assert!(matches!(o, Outcome::Complete(_)), "{name}: {o:?}");
    }
    let flows_per_sec = N as f64 / flows.elapsed().as_secs_f64();
    let (med, p99) = percentiles(&mut lat);
    println!("{name:>6}: final round with a once step: median {med:>9.1?}  p99 {p99:>9.1?}");
    println!("{name:>6}: two-round deploy flows, one at a time: {flows_per_sec:>9.0} flows/s");
}

/// Distinct flows for the claims of one run.
struct Flows(u64);

impl Flows {
    fn claim(&mut self) -> Claim {
        self.0 += 1;
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.0.to_be_bytes());
        id[8..].copy_from_slice(&u64::from(std::process::id()).to_be_bytes());
        let now = Timestamp::now();
        Claim::new(
            id,
            "deploy",
            now,
            now.add_secs(660),
            now,
            PrincipalKey::from_bytes([1; 16]),
        )
    }
}

fn request(state: Option<&str>) -> CarrierRequest {
    let mut params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
        "name": "deploy",
        "arguments": {"service": "web"},
    });
    if let Some(s) = state {
        params["requestState"] = s.into();
        params["inputResponses"] =
            json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    }
    CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(&params)).expect("request")
}

async fn round(engine: &Engine, req: CarrierRequest, now: Timestamp) -> Outcome {
    let done = engine
        .run_until(
            req,
            &Principal::anonymous(),
            now,
            deploy,
            std::future::pending(),
        )
        .await;
    Outcome::<ToolResult>::into(done)
}

async fn deploy(r: Round) -> Result<mrtr::ToolResult, Flow> {
    match r.elicit("confirm", Form::confirm("Deploy web?"))? {
        Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
            let n: u32 = r.once_async("deploy", || async { Ok(1) }).await?;
            Ok(ToolResult::text(format!("deployment #{n}")))
        }
        _ => Ok(ToolResult::text("not deployed")),
    }
}

fn percentiles(lat: &mut [Duration]) -> (Duration, Duration) {
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    (at(0.5), at(0.99))
}
