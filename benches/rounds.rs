//! Round engine benchmarks at realistic sizes: a first round (begin, the handler
//! asks two questions, finish sealed), a resumed round (opens a ~1 KiB state with
//! two sealed answers), the same through `Service::handle` from raw JSON-RPC
//! bytes, and the bare seal/open of a state that size for comparison.
//!
//! `cargo bench --bench rounds -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mrtr::Timestamp;
use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Flow, Form, Outcome, Round};
use mrtr::principal::Principal;
use mrtr::seal::{Binding, BindingInput, Claims, Keyring, SealConfig, Sealer, UntrustedState};
use mrtr::service::{RequestContext, Service};
use mrtr::wire::{CarrierMethod, CarrierRequest};
use serde_json::{Value, json};

const SECRET: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
const AUDIENCE: &str = "https://mcp.bench.example";
const T0: Timestamp = Timestamp::from_unix_secs(1_800_000_000);

fn target_form() -> Form {
    Form::new("Where should the release go?")
        .one_of("environment", ["staging", "production", "canary"])
        .string("service", "Service name")
        .integer("replicas", "Replicas", Some(1), Some(64))
}

fn notes_form() -> Form {
    Form::new("Release notes for the change log (shown to operators).")
        .string("summary", "Summary")
        .string("details", "Details")
}

/// A release tool: two questions in round 1, a confirmation in round 2, done in round 3.
fn release(r: Round) -> Result<mrtr::ToolResult, Flow> {
    release_steps(&r)
}

/// The same tool as an async handler, with a real suspension point before the asks
/// (a handler that awaits a lookup that happens to be ready).
async fn release_async(r: Round) -> Result<mrtr::ToolResult, Flow> {
    ready_lookup().await;
    release_steps(&r)
}

/// Stands in for an awaited lookup: yields once to the executor, then completes.
async fn ready_lookup() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

fn release_steps(r: &Round) -> Result<mrtr::ToolResult, Flow> {
    let target = r.elicit("target", target_form());
    let notes = r.elicit("notes", notes_form());
    let (target, notes) = (target?, notes?);
    let (Some(t), Some(n)) = (target.accepted(), notes.accepted()) else {
        return Ok(ToolResult::text("Release cancelled."));
    };
    let env = t.str("environment").unwrap_or("staging").to_owned();
    match r.elicit("confirm", Form::confirm(format!("Release to {env}?")))? {
        Elicited::Accepted(c) if c.bool("confirm") == Some(true) => Ok(ToolResult::text(format!(
            "Released {} x{} to {env}: {}",
            t.str("service").unwrap_or_default(),
            t.i64("replicas").unwrap_or(1),
            n.str("summary").unwrap_or_default()
        ))),
        _ => Ok(ToolResult::text("Release not confirmed.")),
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
    })
}

fn params(extra: Value) -> Value {
    let mut p = json!({"_meta": meta(), "name": "release",
                       "arguments": {"ticket": "REL-4522", "dryRun": false, "owners": ["ops", "sre"]}});
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

fn body(id: u64, params: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
        .to_string()
        .into_bytes()
}

fn request(p: &Value) -> CarrierRequest {
    CarrierRequest::from_params(CarrierMethod::ToolsCall, Some(p)).unwrap()
}

fn state_of(o: impl Into<Outcome>) -> String {
    match o.into() {
        Outcome::InputRequired(i) => i.request_state().unwrap().to_owned(),
        other => panic!("expected input_required, got {}", other.label()),
    }
}

/// Round 1, round 2 and round 3 params; round 3 resumes a state with two answers.
fn flow(engine: &Engine) -> (Value, Value, Value, usize) {
    let anon = Principal::anonymous();
    let p1 = params(json!({}));
    let s1 = state_of(engine.run(request(&p1), &anon, T0, release));
    let details = "Rolls out the new request-state sealing (XAES-256-GCM) with key rotation, \
                   bounded rounds and flow deadlines; migrates the session store off Redis; \
                   raises the default TTL for long-running elicitations to ten minutes; adds \
                   per-reason rejection counters and a private diagnostic log that never \
                   carries tokens, keys or argument values. Rollback: redeploy the previous \
                   image; tokens sealed by this release stay readable by the old key ring.";
    let p2 = params(json!({"requestState": s1, "inputResponses": {
        "target": {"action": "accept", "content": {"environment": "production", "service": "billing-api", "replicas": 12}},
        "notes": {"action": "accept", "content": {"summary": "Sealed requestState and key rotation for the billing API", "details": details}},
    }}));
    let s2 = state_of(engine.run(request(&p2), &anon, T0.add_secs(20), release));
    let plaintext = engine
        .sealer()
        .inspect(&UntrustedState::new(s2.clone()))
        .unwrap()["state"]
        .to_string()
        .len();
    let p3 = params(json!({"requestState": s2, "inputResponses": {
        "confirm": {"action": "accept", "content": {"confirm": true}}}}));
    (p1, p2, p3, plaintext)
}

fn engine() -> Engine {
    Engine::new(Keyring::parse_keys(SECRET).unwrap(), AUDIENCE)
}

fn engine_rounds(c: &mut Criterion) {
    let engine = engine();
    let anon = Principal::anonymous();
    let (p1, p2, p3, state_len) = flow(&engine);
    eprintln!("resumed state: {state_len} bytes of JSON state (plus the 141-byte claims header)");
    let (r1, r2, r3) = (request(&p1), request(&p2), request(&p3));
    let now = T0.add_secs(30);
    // Sanity: the outcomes are what the names say.
    assert!(matches!(
        engine.run(r1.clone(), &anon, now, release),
        Outcome::InputRequired(_)
    ));
    assert!(matches!(
        engine.run(r2.clone(), &anon, now, release),
        Outcome::InputRequired(_)
    ));
    assert!(matches!(
        engine.run(r3.clone(), &anon, now, release),
        Outcome::Complete(_)
    ));

    let mut g = c.benchmark_group("engine");
    g.bench_function("first_round_two_asks_sealed", |b| {
        b.iter(|| black_box(engine.run(black_box(r1.clone()), &anon, now, release)))
    });
    g.bench_function("resumed_round_1KiB_state_complete", |b| {
        b.iter(|| black_box(engine.run(black_box(r3.clone()), &anon, now, release)))
    });
    g.bench_function("resumed_round_accept_two_reseal_1KiB", |b| {
        b.iter(|| black_box(engine.run(black_box(r2.clone()), &anon, now, release)))
    });
    // The same rounds with the async handler, on a current-thread tokio runtime.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let done: Outcome<mrtr::ToolResult> = rt.block_on(engine.run_until(
        r3.clone(),
        &anon,
        now,
        release_async,
        std::future::pending(),
    ));
    assert!(matches!(done, Outcome::Complete(_)));
    g.bench_function("async/first_round_two_asks_sealed", |b| {
        b.iter(|| {
            let o: Outcome<mrtr::ToolResult> = rt.block_on(engine.run_until(
                black_box(r1.clone()),
                &anon,
                now,
                release_async,
                std::future::pending(),
            ));
            black_box(o)
        })
    });
    g.bench_function("async/resumed_round_1KiB_state_complete", |b| {
        b.iter(|| {
            let o: Outcome<mrtr::ToolResult> = rt.block_on(engine.run_until(
                black_box(r3.clone()),
                &anon,
                now,
                release_async,
                std::future::pending(),
            ));
            black_box(o)
        })
    });
    g.finish();

    let async_service = Service::new(engine.clone(), "bench", "1.0.0").tool(
        "release",
        "Releases a service after two questions and a confirmation.",
        json!({"type": "object", "properties": {"ticket": {"type": "string"}}}),
        release_async,
    );
    let service = Service::new(engine.clone(), "bench", "1.0.0").tool(
        "release",
        "Releases a service after two questions and a confirmation.",
        json!({"type": "object", "properties": {"ticket": {"type": "string"}}}),
        release,
    );
    let ctx = RequestContext {
        principal: anon.clone(),
        now,
        correlation_id: "bench".into(),
        peer: None,
        trace: None,
    };
    let (b1, b3) = (body(1, &p1), body(3, &p3));
    assert_eq!(service.handle_sync(&b1, &ctx).log.outcome, "input_required");
    assert_eq!(service.handle_sync(&b3, &ctx).log.outcome, "complete");
    let mut g = c.benchmark_group("service");
    g.throughput(Throughput::Bytes(b1.len() as u64));
    g.bench_function("first_round_handle", |b| {
        b.iter(|| black_box(service.handle_sync(black_box(&b1), &ctx)))
    });
    g.throughput(Throughput::Bytes(b3.len() as u64));
    g.bench_function("resumed_round_handle_1KiB_state", |b| {
        b.iter(|| black_box(service.handle_sync(black_box(&b3), &ctx)))
    });
    // The transports' path: `Service::handle` awaited on a runtime, sync handler
    // against async handler.
    assert_eq!(
        rt.block_on(async_service.handle(&b3, &ctx)).log.outcome,
        "complete"
    );
    g.throughput(Throughput::Bytes(b1.len() as u64));
    g.bench_function("runtime/first_round_sync_handler", |b| {
        b.iter(|| black_box(rt.block_on(service.handle(black_box(&b1), &ctx))))
    });
    g.bench_function("runtime/first_round_async_handler", |b| {
        b.iter(|| black_box(rt.block_on(async_service.handle(black_box(&b1), &ctx))))
    });
    g.throughput(Throughput::Bytes(b3.len() as u64));
    g.bench_function("runtime/resumed_round_sync_handler", |b| {
        b.iter(|| black_box(rt.block_on(service.handle(black_box(&b3), &ctx))))
    });
    g.bench_function("runtime/resumed_round_async_handler", |b| {
        b.iter(|| black_box(rt.block_on(async_service.handle(black_box(&b3), &ctx))))
    });
    g.finish();

    // The bare seal/open of a state the size of the resumed one.
    let sealer = Sealer::new(Keyring::parse_keys(SECRET).unwrap(), SealConfig::default());
    let binding = Binding::new(&BindingInput {
        method: "tools/call",
        target: "release",
        arguments: Some(&json!({"ticket": "REL-4522"})),
        principal: &anon,
        audience: AUDIENCE,
        protocol_version: "2026-07-28",
    });
    let state = json!({"blob": "x".repeat(state_len.saturating_sub(12))});
    let claims = Claims::first_round(binding, T0, sealer.config(), state);
    let token = UntrustedState::new(sealer.seal(&claims).unwrap());
    let mut g = c.benchmark_group("seal");
    g.throughput(Throughput::Bytes(state_len as u64));
    g.bench_function("seal_1KiB", |b| {
        b.iter(|| black_box(sealer.seal(black_box(&claims))))
    });
    g.bench_function("open_1KiB", |b| {
        b.iter(|| black_box(sealer.open::<Value>(black_box(&token), &binding, now)))
    });
    g.finish();
}

criterion_group!(benches, engine_rounds);
criterion_main!(benches);
