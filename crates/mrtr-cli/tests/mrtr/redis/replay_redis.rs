//! The Redis replay guard against a real Redis (feature `redis`).
//!
//! The tests that need a Redis are `#[ignore]`d, so that a plain `cargo test`
//! reports them as ignored rather than passed; `.ci/run` runs them with
//! `--ignored` and `MRTR_TEST_REDIS_URL=$(scripts/redis.sh start)`. Run without
//! that variable, or with a Redis that does not answer, they fail: a Redis test
//! never passes by skipping. The tests that stop or configure a Redis start one
//! of their own (the `redis-server` on `PATH`, which scripts/redis.sh installs).
//!
//! Without any Redis: `mrtr serve --replay-store` pointed at a closed port starts,
//! and its `once` steps fail closed.

use crate::support as server_support;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mrtr::Timestamp;
use mrtr::ToolResult;
use mrtr::engine::{Elicited, Engine, Form, Outcome, Round};
use mrtr::principal::Principal;
use mrtr::replay::{Claim, ClaimOutcome, PrincipalKey, ReplayGuard};
use mrtr_redis::{RedisReplayGuard, StoreCheck};
use redis::aio::MultiplexedConnection;
use serde_json::json;
use server_support::common::{Counter, Req, accept, complete, engine, irr, text, tool, tool_error};
use server_support::{Server, confirm_answer, retry, state_of, tool_call, tool_error_text};

/// Why the Redis tests are ignored in a plain `cargo test`.
const NEEDS_REDIS: &str = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored";

/// The Redis under test. Panics when none was given or it does not answer: these
/// tests are `#[ignore]`d, and run only where a Redis is.
fn redis_url() -> String {
    let Ok(url) = std::env::var("MRTR_TEST_REDIS_URL") else {
        panic!(
            "MRTR_TEST_REDIS_URL is not set: start a Redis with `scripts/redis.sh start` and \
             export its URL ({NEEDS_REDIS})"
        );
    };
    let rt = runtime();
    rt.block_on(async {
        let mut c = raw(&url).await;
        let pong: String = redis::cmd("PING")
            .query_async(&mut c)
            .await
            .unwrap_or_else(|e| {
                panic!("MRTR_TEST_REDIS_URL is set but Redis does not answer PING: {e}")
            });
        assert_eq!(pong, "PONG");
    });
    url
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A raw connection, for looking at what the guard wrote.
async fn raw(url: &str) -> MultiplexedConnection {
    let client = redis::Client::open(url).expect("MRTR_TEST_REDIS_URL is a Redis URL");
    let connect = client.get_multiplexed_async_connection();
    match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!("MRTR_TEST_REDIS_URL is set but Redis is unreachable: {e}"),
        Err(_) => panic!("MRTR_TEST_REDIS_URL is set but Redis did not accept a connection"),
    }
}

/// Fresh per run, so tests never see each other's keys or an earlier run's.
fn unique(label: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{label}-{}-{nanos}", std::process::id())
}

fn flow_id(seed: &str) -> [u8; 16] {
    use sha2::Digest;
    let d = sha2::Sha256::digest(unique(seed).as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&d[..16]);
    id
}

fn claim(flow: [u8; 16], step: &str, ttl: u64) -> Claim {
    let now = Timestamp::now();
    Claim::new(
        flow,
        step,
        now,
        now.add_secs(ttl),
        now,
        PrincipalKey::from_bytes([7; 16]),
    )
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn two_guards_on_one_redis_grant_a_claim_once() {
    let url = redis_url();
    let audience = unique("aud");
    // Two processes of one fleet: two guards, one store.
    let a = RedisReplayGuard::new(&url, &audience).unwrap();
    let b = RedisReplayGuard::new(&url, &audience).unwrap();
    runtime().block_on(async {
        let c = claim(flow_id("f"), "deploy", 60);
        assert_eq!(a.claim(&c).await, ClaimOutcome::Claimed);
        assert_eq!(b.claim(&c).await, ClaimOutcome::AlreadyClaimed);
        assert_eq!(a.claim(&c).await, ClaimOutcome::AlreadyClaimed);
        let other_step = claim(*c.flow_id(), "notify", 60);
        assert_eq!(b.claim(&other_step).await, ClaimOutcome::Claimed);

        // A race: sixteen claims of one pair at once, half through each guard.
        let race = claim(flow_id("race"), "deploy", 60);
        let answers = futures_util::future::join_all((0..16).map(|i| {
            if i % 2 == 0 {
                a.claim(&race)
            } else {
                b.claim(&race)
            }
        }))
        .await;
        let granted = answers
            .iter()
            .filter(|o| **o == ClaimOutcome::Claimed)
            .count();
        assert_eq!(granted, 1, "{answers:?}");
        assert!(
            answers.iter().all(|o| *o != ClaimOutcome::Unavailable),
            "{answers:?}"
        );

        // Another service on the same Redis has its own keys.
        let elsewhere = RedisReplayGuard::new(&url, &unique("other-aud")).unwrap();
        assert_eq!(elsewhere.claim(&c).await, ClaimOutcome::Claimed);
    });
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn keys_are_prefixed_hashed_and_expire() {
    let url = redis_url();
    let g = RedisReplayGuard::new(&url, &unique("aud")).unwrap();
    let flow = flow_id("keys");
    let step = "step-name-in-clear";
    runtime().block_on(async {
        let c = claim(flow, step, 90);
        assert_eq!(g.claim(&c).await, ClaimOutcome::Claimed);
        let mut conn = raw(&url).await;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", g.key_prefix()))
            .query_async(&mut conn)
            .await
            .unwrap();
        let [key] = keys.as_slice() else {
            panic!("one key under the prefix: {keys:?}")
        };
        // mrtr:<32 hex of the audience>:<64 hex of flow and step>
        let parts: Vec<&str> = key.split(':').collect();
        assert_eq!(parts.len(), 3, "{key}");
        assert_eq!(parts[0], "mrtr");
        assert_eq!(parts[1].len(), 32, "{key}");
        assert_eq!(parts[2].len(), 64, "{key}");
        assert!(
            parts[1..]
                .iter()
                .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
        );
        assert!(!key.contains("step"), "no step name in clear: {key}");
        let flow_hex: String = flow.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!key.contains(&flow_hex[..8]), "no flow id in clear: {key}");
        let value: String = redis::cmd("GET")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(value, "1", "nothing but a marker is stored");
        // PX set from `until`: through its second, 91 s, counting down.
        let pttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(pttl > 90_000 && pttl <= 91_000, "PTTL {pttl}");
        // A claim whose until has come is kept through that second, then Redis drops it.
        let short = claim(flow_id("short"), "s", 0);
        assert_eq!(g.claim(&short).await, ClaimOutcome::Claimed);
        let pttl: i64 = redis::cmd("PTTL")
            .arg(g.key(&short))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(pttl > 0 && pttl <= 1000, "PTTL {pttl}");
    });
}

/// A confirm-then-deploy handler with `once_async`; `runs` counts deployments.
async fn deploy(r: Round, runs: &Counter) -> Result<ToolResult, mrtr::Flow> {
    match r.elicit("confirm", Form::confirm("Deploy?"))? {
        Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
            let n: u32 = r
                .once_async("deploy", || async {
                    runs.set(runs.get() + 1);
                    Ok(runs.get())
                })
                .await?;
            Ok(ToolResult::text(format!("deployment #{n}")))
        }
        _ => Ok(ToolResult::text("not deployed")),
    }
}

fn run(rt: &tokio::runtime::Runtime, e: &Engine, req: &Req, runs: &Counter) -> Outcome {
    let now = Timestamp::now();
    let anonymous = Principal::anonymous();
    let run = e.run_until::<ToolResult, _, _, _, _>(
        req.build(),
        &anonymous,
        now,
        |r| deploy(r, runs),
        std::future::pending(),
    );
    rt.block_on(run).into_json()
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_fleet_sharing_redis_deploys_once() {
    let url = redis_url();
    let audience = unique("fleet");
    let guard = |url: &str| -> Arc<dyn ReplayGuard> {
        Arc::new(RedisReplayGuard::new(url, &audience).unwrap())
    };
    // Two instances: the same keys (common::engine), each with its own guard on one Redis.
    let a = engine().with_replay_guard(guard(&url));
    let b = engine().with_replay_guard(guard(&url));
    let (runs_a, runs_b) = (Counter::new(0), Counter::new(0));
    // One runtime, as in a server: each guard's connection lives on it. The clock
    // is the real one, since Redis expires keys by its own.
    let rt = runtime();
    let r1 = irr(run(&rt, &a, &tool("deploy"), &runs_a));
    let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    assert_eq!(
        text(&complete(run(&rt, &a, &last, &runs_a))),
        "deployment #1"
    );
    // The replay goes to the other instance: refused there.
    let (replayed, _) = tool_error(run(&rt, &b, &last, &runs_b));
    assert!(text(&replayed).contains("already carried out"));
    assert_eq!((runs_a.get(), runs_b.get()), (1, 0));
}

/// A `redis-server` of this test's own, on a loopback port, without persistence.
struct OwnRedis {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl OwnRedis {
    fn start_on(port: u16, dir: std::path::PathBuf) -> Self {
        Self::start_with(port, dir, &[])
    }

    /// A `redis-server` with extra configuration directives (`--maxmemory-policy
    /// allkeys-lru`, `--user …`, `--replicaof …`).
    fn start_with(port: u16, dir: std::path::PathBuf, extra: &[&str]) -> Self {
        let me = Self::spawn(port, dir, extra);
        me.wait_ready();
        me
    }

    /// [`OwnRedis::start_with`] without waiting for it (a server behind a password
    /// is waited for with [`OwnRedis::wait_ready_at`]).
    fn spawn(port: u16, dir: std::path::PathBuf, extra: &[&str]) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("MRTR_TEST_REDIS_URL is set, but redis-server cannot be started ({e}): run scripts/redis.sh start, which installs it")
            });
        Self { child, port, dir }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) {
        self.wait_ready_at(&self.url());
    }

    /// Waits until `url` (this server, perhaps as another user) answers PING.
    fn wait_ready_at(&self, url: &str) {
        let limit = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = runtime().block_on(async {
                let Ok(client) = redis::Client::open(url) else {
                    return false;
                };
                match tokio::time::timeout(
                    Duration::from_millis(500),
                    client.get_multiplexed_async_connection(),
                )
                .await
                {
                    Ok(Ok(mut c)) => redis::cmd("PING")
                        .query_async::<String>(&mut c)
                        .await
                        .is_ok(),
                    _ => false,
                }
            });
            if ok {
                return;
            }
            assert!(Instant::now() < limit, "own redis-server did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_stopped_redis_is_unavailable_and_claims_resume_when_it_is_back() {
    redis_url();
    let dir = std::env::temp_dir().join(unique("mrtr-own-redis"));
    let port = free_port();
    let mut redis = OwnRedis::start_on(port, dir.clone());
    let timeout = Duration::from_millis(250);
    let g = RedisReplayGuard::new(&redis.url(), "stop-test")
        .unwrap()
        .command_timeout(timeout);
    // One runtime for the whole test, as in a server: the guard's connection
    // and its reconnection tasks live on it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let before = claim(flow_id("before"), "deploy", 60);
    assert_eq!(rt.block_on(g.claim(&before)), ClaimOutcome::Claimed);

    redis.stop();
    let started = Instant::now();
    let down = rt.block_on(g.claim(&claim(flow_id("down"), "deploy", 60)));
    let took = started.elapsed();
    assert_eq!(
        down,
        ClaimOutcome::Unavailable,
        "fail closed while Redis is down"
    );
    eprintln!(
        "claim against a stopped Redis: Unavailable after {took:?} (command timeout {timeout:?})"
    );
    // Down for good: every claim is refused, none is granted.
    for i in 0..3 {
        let c = claim(flow_id(&format!("down-{i}")), "deploy", 60);
        assert_eq!(rt.block_on(g.claim(&c)), ClaimOutcome::Unavailable);
    }

    let _redis = OwnRedis::start_on(port, dir);
    // Back: the guard reconnects on its own. Bounded retries, not a timing check.
    let mut recovered = None;
    for attempt in 0..200 {
        let c = claim(flow_id(&format!("back-{attempt}")), "deploy", 60);
        match rt.block_on(g.claim(&c)) {
            ClaimOutcome::Claimed => {
                recovered = Some(attempt);
                break;
            }
            ClaimOutcome::Unavailable => std::thread::sleep(Duration::from_millis(100)),
            other => panic!("{other:?}"),
        }
    }
    let attempt = recovered.expect("the guard reconnected once Redis was back");
    eprintln!("claims resumed after {attempt} refused attempts");
    // A Redis restarted without persistence forgot the claim made before it stopped
    // (documented: a shared store is only as durable as its data).
    assert_eq!(rt.block_on(g.claim(&before)), ClaimOutcome::Claimed);
}

#[test]
fn serve_starts_while_redis_is_down_and_once_steps_fail_closed() {
    // A loopback port nothing listens on.
    let url = format!("redis://127.0.0.1:{}", free_port());
    let s = Server::start(&["--replay-store", &url]);
    let first = tool_call(1, "deploy", Some(json!({"service": "web"})));
    let state = state_of(&s.call(&first, 200));
    let last = retry(&first, 2, Some(confirm_answer(true)), &state);
    let text = tool_error_text(&s.call(&last, 200));
    assert!(text.contains("could not record this step"), "{text}");
    assert!(
        text.contains("Retrying the same call may succeed"),
        "{text}"
    );
    let lines = s.wait_for_lines("Redis replay store", 1);
    assert!(!lines.is_empty(), "{:?}", s.stderr_lines());
    let prefix = RedisReplayGuard::new(&url, mrtr::defaults::AUDIENCE).unwrap();
    let prefix = prefix.key_prefix();
    assert!(
        s.stderr_lines().iter().all(|l| !l.contains(prefix)),
        "no key in the log"
    );
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_fleet_of_mrtr_serve_sharing_redis_deploys_once() {
    let url = redis_url();
    let key = mrtr::seal::generate_key_string();
    let args = ["--replay-store", url.as_str()];
    let a = Server::start_with_keys(&args, &key);
    let b = Server::start_with_keys(&args, &key);
    let first = tool_call(1, "deploy", Some(json!({"service": "fleet"})));
    let state = state_of(&a.call(&first, 200));
    let last = retry(&first, 2, Some(confirm_answer(true)), &state);
    let done = a.call(&last, 200);
    assert_eq!(
        server_support::complete_text(&done),
        "Deployed fleet (deployment #1)."
    );
    // The same final round sent to the other instance: refused there.
    let mut replay = last.clone();
    replay["id"] = json!(3);
    let refused = tool_error_text(&b.call(&replay, 200));
    assert!(refused.contains("already carried out"), "{refused}");
    // And b has deployed nothing: its first deployment is #1.
    let first = tool_call(4, "deploy", Some(json!({"service": "fleet"})));
    let state = state_of(&b.call(&first, 200));
    let done = b.call(&retry(&first, 5, Some(confirm_answer(true)), &state), 200);
    assert_eq!(
        server_support::complete_text(&done),
        "Deployed fleet (deployment #1)."
    );
}

/// A Redis of this test's own with `extra` directives (the environment must
/// have a Redis, as for [`redis_url`]).
fn own_redis(extra: &[&str]) -> OwnRedis {
    redis_url();
    let dir = std::env::temp_dir().join(unique("mrtr-own-redis"));
    OwnRedis::start_with(free_port(), dir, extra)
}

/// Sends one command on a raw connection (CONFIG SET, INFO …) and returns its reply.
fn redis_cmd(url: &str, args: &[&str]) -> redis::Value {
    runtime().block_on(async {
        let mut c = raw(url).await;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query_async(&mut c).await.unwrap()
    })
}

/// Claims `claim` on `guard` on a runtime of its own.
fn claim_on(rt: &tokio::runtime::Runtime, guard: &RedisReplayGuard, c: &Claim) -> ClaimOutcome {
    rt.block_on(guard.claim(c))
}

/// Keys under the guard's prefix.
fn keys_of(url: &str, guard: &RedisReplayGuard) -> Vec<String> {
    let v = redis_cmd(url, &["KEYS", &format!("{}*", guard.key_prefix())]);
    redis::from_redis_value(v).unwrap()
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn two_instances_clocks_apart_on_redis_run_the_step_once() {
    // The review's reproduction on a real Redis: two engines with the same keys,
    // one Redis; B's clock is 3 s behind A's; TTL 2 s, skew 3 s, and a flow whose
    // deadline is its first state's expiry (so only the second skew in the
    // claim's hold keeps B from running the step again). Redis expires the claim
    // by its own clock.
    let url = redis_url();
    let config = mrtr::seal::SealConfig::default()
        .with_ttl(Duration::from_secs(2))
        .unwrap()
        .with_flow_lifetime(Duration::from_secs(2))
        .unwrap()
        .with_clock_skew(Duration::from_secs(3));
    let audience = unique("skew");
    let guard =
        || -> Arc<dyn ReplayGuard> { Arc::new(RedisReplayGuard::new(&url, &audience).unwrap()) };
    let a = engine()
        .with_seal_config(config.clone())
        .with_replay_guard(guard());
    let b = engine().with_seal_config(config).with_replay_guard(guard());
    let rt = runtime();
    let runs = Counter::new(0);
    let at = |e: &Engine, req: &Req, now: Timestamp| {
        let anonymous = Principal::anonymous();
        let run = e.run_until::<ToolResult, _, _, _, _>(
            req.build(),
            &anonymous,
            now,
            |r| deploy(r, &runs),
            std::future::pending(),
        );
        rt.block_on(run).into_json()
    };
    // Start on a fresh second, so that real time and the whole-second clocks
    // line up: real time n0 + x s reads n0 + x on A and n0 + x - 3 on B.
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let n0 = Timestamp::from_unix_secs(start.as_secs() + 1);
    let wait_until = |offset_ms: u64| {
        let target = Duration::from_millis(n0.unix_secs() * 1000 + offset_ms);
        while SystemTime::now().duration_since(UNIX_EPOCH).unwrap() < target {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_until(0);
    let r1 = irr(at(&a, &tool("deploy"), n0));
    let last = tool("deploy").reply(&r1, json!({"confirm": accept(json!({"confirm": true}))}));
    assert_eq!(text(&complete(at(&a, &last, n0))), "deployment #1");
    let (refused, _) = tool_error(at(&b, &last, n0.sub_secs(3)));
    assert!(text(&refused).contains("already carried out"), "{refused}");
    // Real n0+6.5 s and n0+8.5 s: A no longer opens the state (n0+6 > exp + skew =
    // n0+5), B reads n0+3 and n0+5 (= deadline + skew) and still does: the claim
    // must still be in Redis. The second probe is within the last second B opens
    // the state in, which a TTL counted from A's truncated `now` without the
    // extra second would miss.
    for (real_ms, b_secs) in [(6_500, 3), (8_500, 5)] {
        wait_until(real_ms);
        let (expired, _) = tool_error(at(&a, &last, n0.add_secs(real_ms / 1000)));
        assert!(text(&expired).contains("lapsed"), "{expired}");
        let (refused, _) = tool_error(at(&b, &last, n0.add_secs(b_secs)));
        assert!(
            text(&refused).contains("already carried out"),
            "B at n0+{b_secs}: {refused}"
        );
    }
    assert_eq!(runs.get(), 1, "deployed once, not twice");
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn an_evicting_redis_is_refused_unless_allowed_and_noeviction_works() {
    let redis = own_redis(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]);
    let url = redis.url();
    let rt = runtime();
    // Configured at start (allkeys-lru), then each other policy by CONFIG SET; a
    // fresh guard reads the policy when it connects.
    for policy in [
        "allkeys-lru",
        "volatile-lru",
        "allkeys-lfu",
        "volatile-ttl",
        "allkeys-random",
    ] {
        redis_cmd(&url, &["CONFIG", "SET", "maxmemory-policy", policy]);
        let g = RedisReplayGuard::new(&url, &unique("evict")).unwrap();
        let found = rt.block_on(g.check_store());
        assert_eq!(
            found,
            StoreCheck::Evicting {
                policy: policy.into(),
                allowed: false
            }
        );
        let c = claim(flow_id(policy), "deploy", 60);
        assert_eq!(
            claim_on(&rt, &g, &c),
            ClaimOutcome::Unavailable,
            "{policy}: fail closed"
        );
        assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::Unavailable, "{policy}");
        assert!(keys_of(&url, &g).is_empty(), "{policy}: nothing written");
        // The operator's explicit opt-in: claims are made (with a WARN at connect).
        let allowed = RedisReplayGuard::new(&url, &unique("evict-ok"))
            .unwrap()
            .allow_eviction(true);
        assert_eq!(
            rt.block_on(allowed.check_store()),
            StoreCheck::Evicting {
                policy: policy.into(),
                allowed: true
            }
        );
        assert_eq!(
            claim_on(&rt, &allowed, &c),
            ClaimOutcome::Claimed,
            "{policy}"
        );
        assert_eq!(claim_on(&rt, &allowed, &c), ClaimOutcome::AlreadyClaimed);
    }
    redis_cmd(&url, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let g = RedisReplayGuard::new(&url, &unique("noevict")).unwrap();
    assert_eq!(rt.block_on(g.check_store()), StoreCheck::NoEviction);
    let c = claim(flow_id("noevict"), "deploy", 60);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::Claimed);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::AlreadyClaimed);
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_policy_changed_live_or_across_a_reconnect_is_noticed() {
    let mut redis = own_redis(&[]);
    let url = redis.url();
    let g = RedisReplayGuard::new(&url, &unique("recheck"))
        .unwrap()
        .policy_recheck(Duration::from_millis(100));
    // One runtime for the whole test: the guard's connection task lives on it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fresh = |label: &str| claim(flow_id(label), "deploy", 60);
    assert_eq!(claim_on(&rt, &g, &fresh("before")), ClaimOutcome::Claimed);
    // Until the first claim refused: bounded attempts, not a timing check.
    let until = |want: ClaimOutcome, label: &str| {
        (0..100).find(|i| {
            let got = claim_on(&rt, &g, &fresh(&format!("{label}-{i}")));
            if got != want {
                std::thread::sleep(Duration::from_millis(50));
            }
            got == want
        })
    };
    redis_cmd(&url, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    until(ClaimOutcome::Unavailable, "live-evicting").expect("refused once the policy changed");
    redis_cmd(&url, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    until(ClaimOutcome::Claimed, "live-back").expect("claims resume with noeviction");

    // The same port, a new Redis that evicts: the reconnect reads the policy
    // before any claim goes over it.
    let port = redis.port;
    let dir = redis.dir.clone();
    redis.stop();
    let evicting = OwnRedis::start_with(port, dir, &["--maxmemory-policy", "volatile-lru"]);
    for i in 0..30 {
        let got = claim_on(&rt, &g, &fresh(&format!("reconnected-{i}")));
        assert_eq!(got, ClaimOutcome::Unavailable, "attempt {i}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        rt.block_on(g.check_store()),
        StoreCheck::Evicting {
            policy: "volatile-lru".into(),
            allowed: false
        }
    );
    assert!(keys_of(&evicting.url(), &g).is_empty(), "nothing written");
    redis_cmd(
        &evicting.url(),
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    until(ClaimOutcome::Claimed, "reconnected-back").expect("claims resume with noeviction");
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_redis_that_forbids_config_is_refused_unless_allowed() {
    // Two ways managed services keep CONFIG from their users: an ACL (NOPERM) and
    // a renamed command (ERR unknown command).
    let acl = own_redis(&[
        "--user",
        "mrtr",
        "on",
        ">s3cret-pw",
        "~*",
        "&*",
        "+@all",
        "-config",
    ]);
    let dir = std::env::temp_dir().join(unique("mrtr-own-redis"));
    let renamed = OwnRedis::start_with(free_port(), dir, &["--rename-command", "CONFIG", ""]);
    let acl_url = format!("redis://mrtr:s3cret-pw@127.0.0.1:{}", acl.port);
    let rt = runtime();
    for (url, why) in [
        (acl_url.as_str(), "NOPERM"),
        (&renamed.url(), "unknown command"),
    ] {
        let g = RedisReplayGuard::new(url, &unique("noconfig")).unwrap();
        let found = rt.block_on(g.check_store());
        let StoreCheck::Unverified {
            reason,
            allowed: false,
        } = &found
        else {
            panic!("{why}: {found:?}")
        };
        assert!(reason.contains(why), "{reason}");
        assert!(!reason.contains("s3cret"), "{reason}");
        let c = claim(flow_id(why), "deploy", 60);
        assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::Unavailable, "{why}");
        let allowed = RedisReplayGuard::new(url, &unique("noconfig-ok"))
            .unwrap()
            .allow_eviction(true);
        assert_eq!(claim_on(&rt, &allowed, &c), ClaimOutcome::Claimed, "{why}");
        assert_eq!(claim_on(&rt, &allowed, &c), ClaimOutcome::AlreadyClaimed);
    }
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn wait_counts_a_claim_only_once_replicas_acknowledge_it() {
    let primary = own_redis(&[]);
    let url = format!("{}?wait=1&wait_timeout_ms=50", primary.url());
    let rt = runtime();
    let g = RedisReplayGuard::new(&url, &unique("wait")).unwrap();
    // No replica: the claim reaches the primary but is not acknowledged, so it is
    // refused, and the step of that flow is refused from then on (zero times).
    let c = claim(flow_id("no-replica"), "deploy", 60);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::Unavailable);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::AlreadyClaimed);
    assert_eq!(keys_of(&primary.url(), &g).len(), 1, "on the primary");

    let dir = std::env::temp_dir().join(unique("mrtr-own-redis"));
    let port = primary.port.to_string();
    let replica = OwnRedis::start_with(free_port(), dir, &["--replicaof", "127.0.0.1", &port]);
    let linked = (0..200).any(|_| {
        let info = redis_cmd(&replica.url(), &["INFO", "replication"]);
        let info: String = redis::from_redis_value(info).unwrap();
        let up = info.contains("master_link_status:up");
        if !up {
            std::thread::sleep(Duration::from_millis(50));
        }
        up
    });
    assert!(linked, "the replica synced with the primary");
    // With a replica, WAIT returns as soon as it acknowledges: a timeout of
    // seconds costs nothing here, and keeps a busy machine (CI builds beside the
    // tests) from turning a late acknowledgement into a refusal.
    let url = format!("{}?wait=1&wait_timeout_ms=5000", primary.url());
    let g = RedisReplayGuard::new(&url, &unique("wait-replica")).unwrap();
    let c = claim(flow_id("replica"), "deploy", 60);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::Claimed);
    assert_eq!(claim_on(&rt, &g, &c), ClaimOutcome::AlreadyClaimed);
    // The claim is on the replica too.
    let on_replica: i64 =
        redis::from_redis_value(redis_cmd(&replica.url(), &["EXISTS", &g.key(&c)])).unwrap();
    assert_eq!(on_replica, 1);
}

/// Runs `mrtr serve --anonymous ARGS` to its exit (at most 20 s): (code, stderr).
fn serve_exit(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(server_support::bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--anonymous"])
        .args(args)
        .env_remove("MRTR_KEYS")
        .env_remove("MRTR_REPLAY_STORE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = server_support::wait_timeout(&mut child, Duration::from_secs(20));
    if status.is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.and_then(|s| s.code()), err)
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn serve_refuses_to_start_on_an_evicting_redis_unless_allowed() {
    let redis = own_redis(&[
        "--maxmemory-policy",
        "allkeys-lru",
        "--user",
        "mrtr",
        "on",
        ">hunter2-pw",
        "~*",
        "&*",
        "+@all",
    ]);
    let url = format!("redis://mrtr:hunter2-pw@127.0.0.1:{}/0", redis.port);
    let (code, err) = serve_exit(&["--replay-store", &url]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("allkeys-lru"), "{err}");
    assert!(err.contains("--replay-store-allow-eviction"), "{err}");
    assert!(!err.contains("hunter2"), "no password: {err}");
    assert!(!err.contains("listening on"), "{err}");

    // Opted in: it starts, says so, and claims.
    let s = Server::start(&["--replay-store", &url, "--replay-store-allow-eviction"]);
    let warned = s.wait_for_lines("eviction was allowed explicitly", 1);
    assert!(!warned.is_empty(), "{:?}", s.stderr_lines());
    let first = tool_call(1, "deploy", Some(json!({"service": "web"})));
    let state = state_of(&s.call(&first, 200));
    let done = s.call(&retry(&first, 2, Some(confirm_answer(true)), &state), 200);
    assert_eq!(
        server_support::complete_text(&done),
        "Deployed web (deployment #1)."
    );
    assert!(
        s.stderr_lines().iter().all(|l| !l.contains("hunter2")),
        "no password in the log"
    );

    // A Redis whose policy cannot be read: refused too, saying why.
    let dir = std::env::temp_dir().join(unique("mrtr-own-redis"));
    let renamed = OwnRedis::start_with(free_port(), dir, &["--rename-command", "CONFIG", ""]);
    let (code, err) = serve_exit(&["--replay-store", &renamed.url()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be read"), "{err}");
    assert!(err.contains("--replay-store-allow-eviction"), "{err}");
}
