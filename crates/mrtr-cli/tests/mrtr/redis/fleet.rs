//! The fleet test: three `mrtr serve` instances with one key file and one real
//! Redis replay store, as an operator deploys them.
//!
//! - 1 000 `deploy` flows with their rounds spread round-robin over the instances,
//!   then every final round replayed on every instance, concurrently: exactly one
//!   deployment per flow (read from the replies and from each instance's
//!   `mrtr_once_total` counters).
//! - The three-phase key rotation through SIGHUP while flows keep running: zero
//!   failed flows.
//! - Redis stopped mid-run: no `once` step runs while the store is down (the final
//!   round is refused, nothing is deployed), flows without `once` keep completing,
//!   and everything recovers when Redis is back, still one deployment per flow.
//!
//! It needs the `redis-server` binary (Debian's package), so it is `#[ignore]`d
//! and a plain `cargo test` reports it as ignored. `.ci/run` installs Redis
//! (`scripts/redis.sh install`) and runs it in its own step with `--ignored`;
//! a missing binary is then a failure.

use crate::support as server_support;

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server_support::*;

/// How many flows the first phase runs.
const FLOWS: u64 = 1_000;
/// Worker threads sending requests (loopback; bounded).
const WORKERS: u64 = 8;

/// Where `redis-server` is; a missing one is a failure (the test is ignored
/// where Redis is not installed).
fn redis_server() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/usr/sbin".into()])
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
        .expect("redis-server is not installed (scripts/redis.sh install)")
}

/// A free loopback port (the listener is dropped, so a server can take it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `redis-server` on a fixed loopback port, without persistence, that can be
/// stopped and started again on the same port.
struct Redis {
    bin: PathBuf,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Redis {
    fn start(bin: PathBuf, dir: &Path) -> Self {
        let mut r = Redis {
            bin,
            port: free_port(),
            dir: dir.to_owned(),
            child: None,
        };
        r.up();
        r
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn up(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &self.port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        // Ready when it answers PING (bounded).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.ping() {
                return;
            }
            assert!(Instant::now() < deadline, "redis-server did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    fn down(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.down();
    }
}

fn hangup(server: &Server) {
    let ok = Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success());
}

/// The sum over `servers` of the scraped counter `name` with `labels`
/// (e.g. `mrtr_once_total{result="claimed"}`).
fn counter(servers: &[Server], series: &str) -> u64 {
    servers
        .iter()
        .map(|s| {
            let body = request(s.metrics_addr(), "GET", "/metrics", &[], b"").text();
            body.lines()
                .find_map(|l| l.strip_prefix(series).map(str::trim))
                .map_or(0, |v| v.parse::<f64>().expect("a number") as u64)
        })
        .sum()
}

fn call(server: &Server, body: &Value) -> Value {
    server.call(body, 200)
}

/// One deploy flow: round 1 on `a`, the confirmation on `b`. Returns the final
/// round's request (for replays) and its reply.
fn deploy(servers: &[Server], id: u64, a: usize, b: usize) -> (Value, Value) {
    let service = format!("svc-{id}");
    let first = tool_call(id * 10, "deploy", Some(json!({ "service": service })));
    let r1 = call(&servers[a], &first);
    let state = state_of(&r1);
    let last = retry(&first, id * 10 + 1, Some(confirm_answer(true)), &state);
    let r2 = call(&servers[b], &last);
    (last, r2)
}

fn is_deployed(v: &Value) -> bool {
    v["result"]["isError"] != true
        && v["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Deployed "))
}

/// Runs `f(i)` for `i in 0..n` on `WORKERS` threads.
fn parallel<F>(n: u64, f: F)
where
    F: Fn(u64) + Sync,
{
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        return;
                    }
                    f(i);
                }
            });
        }
    });
}

#[test]
#[ignore = "needs redis-server (scripts/redis.sh install), --ignored"]
fn a_fleet_with_a_shared_redis_store_deploys_once_per_flow_through_rotation_and_outage() {
    let bin = redis_server();
    let dir = std::env::temp_dir().join(format!("mrtr-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut redis = Redis::start(bin, &dir);

    let (k1, k2) = (
        mrtr::seal::generate_key_string(),
        mrtr::seal::generate_key_string(),
    );
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("{k1}\n")).unwrap();
    let store = redis.url();
    let servers: Vec<Server> = (0..3)
        .map(|_| {
            Server::start(&[
                "--keys-file",
                keys.to_str().unwrap(),
                "--replay-store",
                &store,
                "--metrics-listen",
                "127.0.0.1:0",
            ])
        })
        .collect();

    // 1. 1 000 flows, round 1 on instance i, the final round on i+1; then every
    // final round replayed on every instance at once.
    let finals: Mutex<Vec<Value>> = Mutex::new(Vec::new());
    parallel(FLOWS, |i| {
        let (a, b) = ((i % 3) as usize, ((i + 1) % 3) as usize);
        let (last, reply) = deploy(&servers, i + 1, a, b);
        assert!(is_deployed(&reply), "flow {i}: {reply}");
        finals.lock().unwrap().push(last);
    });
    let finals = finals.into_inner().unwrap();
    assert_eq!(finals.len() as u64, FLOWS);
    let replays_deployed = AtomicU64::new(0);
    parallel(FLOWS, |i| {
        let last = &finals[i as usize];
        std::thread::scope(|s| {
            for server in &servers {
                let replays_deployed = &replays_deployed;
                s.spawn(move || {
                    let v = call(server, last);
                    if is_deployed(&v) {
                        replays_deployed.fetch_add(1, Ordering::SeqCst);
                    } else {
                        let t = tool_error_text(&v);
                        assert!(t.contains("already carried out"), "{t}");
                    }
                });
            }
        });
    });
    assert_eq!(
        replays_deployed.load(Ordering::SeqCst),
        0,
        "a replay deployed again"
    );
    assert_eq!(
        counter(&servers, "mrtr_once_total{result=\"claimed\"}"),
        FLOWS
    );
    assert_eq!(
        counter(&servers, "mrtr_once_total{result=\"replayed\"}"),
        3 * FLOWS
    );

    // 2. The three-phase rotation through SIGHUP while flows keep running on every
    // instance: zero failed flows.
    let stop = AtomicBool::new(false);
    let completed = AtomicU64::new(0);
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let next_id = AtomicU64::new(1_000_000);
    let reloaded = |n: usize| {
        for s in &servers {
            let lines = s.wait_for_lines("key ring reloaded", n);
            assert_eq!(
                lines.len(),
                n,
                "reload {n} not logged: {:?}",
                s.stderr_lines()
            );
        }
    };
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (servers, stop, completed, failures, next_id) =
                (&servers, &stop, &completed, &failures, &next_id);
            s.spawn(move || {
                let mut i = w;
                while !stop.load(Ordering::SeqCst) {
                    let id = next_id.fetch_add(1, Ordering::SeqCst);
                    let (a, b) = ((i % 3) as usize, ((i + 2) % 3) as usize);
                    i += 1;
                    let first = tool_call(id * 10, "deploy", Some(json!({"service": "rot"})));
                    let r1 = call(&servers[a], &first);
                    let ok = r1["result"]["resultType"] == "input_required" && {
                        let last = retry(
                            &first,
                            id * 10 + 1,
                            Some(confirm_answer(true)),
                            &state_of(&r1),
                        );
                        let r2 = call(&servers[b], &last);
                        is_deployed(&r2) || {
                            failures.lock().unwrap().push(r2.to_string());
                            false
                        }
                    };
                    if ok {
                        completed.fetch_add(1, Ordering::SeqCst);
                    } else if r1["result"]["resultType"] != "input_required" {
                        failures.lock().unwrap().push(r1.to_string());
                    }
                }
            });
        }
        let progress = |at_least: u64| {
            let deadline = Instant::now() + Duration::from_secs(60);
            while completed.load(Ordering::SeqCst) < at_least {
                assert!(Instant::now() < deadline, "traffic stalled");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        progress(50);
        // Phase 1: the new key opens everywhere.
        std::fs::write(&keys, format!("{k1}\n{k2}\n")).unwrap();
        servers.iter().for_each(hangup);
        reloaded(1);
        progress(completed.load(Ordering::SeqCst) + 50);
        // Phase 2: the new key seals everywhere.
        std::fs::write(&keys, format!("{k2}\n{k1}\n")).unwrap();
        servers.iter().for_each(hangup);
        reloaded(2);
        // Every flow sealed with the old key is done once each worker has started
        // and finished more flows than it could have had in progress (one each).
        progress(completed.load(Ordering::SeqCst) + 2 * WORKERS + 50);
        // Phase 3 too early: every instance sealed with the old key within the
        // flow lifetime (1 h), so a ring without it is refused (an ERROR, the ring
        // kept) and traffic goes on. The drop itself waits for the flow lifetime
        // or a restart (tests/server_keys_reload.rs covers both).
        std::fs::write(&keys, format!("{k2}\n")).unwrap();
        servers.iter().for_each(hangup);
        for s in &servers {
            let lines = s.wait_for_lines("key ring not reloaded", 1);
            assert_eq!(lines.len(), 1, "refusal not logged: {:?}", s.stderr_lines());
        }
        reloaded(2);
        progress(completed.load(Ordering::SeqCst) + 50);
        stop.store(true, Ordering::SeqCst);
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed flows, first: {}",
        failures.len(),
        failures[0]
    );
    let rotated = completed.load(Ordering::SeqCst);
    assert!(rotated >= 200, "{rotated}");
    assert_eq!(
        counter(&servers, "mrtr_once_total{result=\"claimed\"}"),
        FLOWS + rotated,
        "one deployment per flow across the rotation"
    );

    // 3. Redis down: the final round of a deploy is refused (nothing deployed, the
    // model told to try again), flows without `once` keep completing.
    let claimed_before = counter(&servers, "mrtr_once_total{result=\"claimed\"}");
    let pending: Vec<(Value, usize)> = (0..30)
        .map(|i| {
            let first = tool_call(5_000_000 + i, "deploy", Some(json!({"service": "outage"})));
            let r1 = call(&servers[(i % 3) as usize], &first);
            let last = retry(
                &first,
                6_000_000 + i,
                Some(confirm_answer(true)),
                &state_of(&r1),
            );
            (last, ((i + 1) % 3) as usize)
        })
        .collect();
    redis.down();
    let mut refused = 0;
    for (last, b) in &pending {
        let v = call(&servers[*b], last);
        assert!(!is_deployed(&v), "deployed while the store was down: {v}");
        let t = tool_error_text(&v);
        assert!(t.contains("could not record this step"), "{t}");
        refused += 1;
    }
    assert_eq!(refused, pending.len());
    assert_eq!(
        counter(&servers, "mrtr_once_total{result=\"claimed\"}"),
        claimed_before,
        "no step ran while the store was down"
    );
    assert!(counter(&servers, "mrtr_once_total{result=\"unavailable\"}") >= pending.len() as u64);
    // A flow without `once` (plan_trip: two rounds of forms) completes meanwhile.
    for i in 0..9u64 {
        let first = tool_call(7_000_000 + i, "plan_trip", None);
        let r1 = call(&servers[(i % 3) as usize], &first);
        let kind = json!({"kind": accept(json!({"kind": "city", "travellers": 2}))});
        let r2 = call(
            &servers[((i + 1) % 3) as usize],
            &retry(&first, 7_100_000 + i, Some(kind), &state_of(&r1)),
        );
        let city = json!({"city": accept(json!({"city": "Lyon"}))});
        let r3 = call(
            &servers[((i + 2) % 3) as usize],
            &retry(&first, 7_200_000 + i, Some(city), &state_of(&r2)),
        );
        assert!(complete_text(&r3).contains("Planned a city trip"), "{r3}");
    }

    // 4. Redis back: the refused final rounds now go through, once each; nothing
    // deployed twice, and new flows deploy again.
    redis.up();
    let mut deployed: HashMap<usize, u32> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    for (n, (last, b)) in pending.iter().enumerate() {
        loop {
            let v = call(&servers[*b], last);
            if is_deployed(&v) {
                *deployed.entry(n).or_default() += 1;
                break;
            }
            // Until each instance's connection is back, the claim is unavailable.
            assert!(
                Instant::now() < deadline,
                "no recovery after Redis came back: {v}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        for server in &servers {
            let v = call(server, last);
            assert!(!is_deployed(&v), "deployed twice after recovery: {v}");
        }
    }
    assert_eq!(deployed.len(), pending.len());
    let by_result: BTreeMap<&str, u64> = ["claimed", "replayed", "unavailable"]
        .into_iter()
        .map(|r| {
            (
                r,
                counter(&servers, &format!("mrtr_once_total{{result=\"{r}\"}}")),
            )
        })
        .collect();
    assert_eq!(
        by_result["claimed"],
        FLOWS + rotated + pending.len() as u64,
        "{by_result:?}"
    );
    let (_, fresh) = deploy(&servers, 9_000_000, 0, 2);
    assert!(is_deployed(&fresh), "{fresh}");
    eprintln!(
        "fleet: {FLOWS} flows + {} replays, {rotated} flows through the rotation, {} refused \
         while Redis was down and recovered; once results {by_result:?}",
        3 * FLOWS,
        pending.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `_meta` of a client that declares the tasks extension.
fn tasks_meta() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    meta(&caps)
}

/// A `tasks/*` request on `server`, with `Mcp-Name` naming the task.
fn task_request(server: &Server, id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = tasks_meta();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let task = params["taskId"].as_str().unwrap_or_default().to_owned();
    let r = server.rpc_with(&body, &[("Mcp-Name", &task)]);
    let v = r.json();
    // A JSON-RPC error is a 400 (or 500), a result a 200.
    assert_eq!(r.status == 200, v.get("result").is_some(), "{body}: {v}");
    v
}

/// Polls `tasks/get` on `server` until the task's status is `want` (or it
/// ended), within `limit`.
fn wait_status(server: &Server, task: &str, want: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    let mut n = 1_000;
    loop {
        n += 1;
        let got = task_request(server, n, "tasks/get", json!({"taskId": task}));
        let status = got["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if status == want || ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} after {limit:?}: {got}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The request lines of `server`'s task runs (transport `task`).
fn task_runs(server: &Server) -> usize {
    server
        .request_lines()
        .iter()
        .filter(|l| l.contains("transport=\"task\"") || l.contains("transport=task"))
        .count()
}

#[test]
#[ignore = "needs redis-server (scripts/redis.sh install), --ignored"]
fn a_fleet_shares_its_tasks_and_takes_over_the_run_of_an_instance_that_died() {
    let bin = redis_server();
    let dir = std::env::temp_dir().join(format!("mrtr-task-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let redis = Redis::start(bin, &dir);
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("{}\n", mrtr::seal::generate_key_string())).unwrap();
    let store = redis.url();
    let start = || {
        Server::start(&[
            "--keys-file",
            keys.to_str().unwrap(),
            "--replay-store",
            &store,
            "--task-lease",
            "3",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
    };
    let (a, mut b, c) = (start(), start(), start());

    // Created on A, whose run asks its question.
    let mut call = tool_call(1, "migrate", Some(json!({"seconds": 4})));
    call["params"]["_meta"] = tasks_meta();
    let created = call_on(&a, &call);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    // Read through C: the question, and no state.
    let asked = wait_status(&c, &task, "input_required", Duration::from_secs(10));
    assert_eq!(asked["result"]["status"], "input_required", "{asked}");
    assert_eq!(
        asked["result"]["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{asked}"
    );
    assert!(asked["result"].get("requestState").is_none());
    // Another caller (another principal) cannot see it: anonymous callers are
    // told apart by their address, and this one is the same, so the id of
    // another task stands in for it.
    let unknown = task_request(&c, 2, "tasks/get", json!({"taskId": "0".repeat(32)}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // C follows the task's status (the extension's notifications): told
    // whatever instance changes it, as C reads it from the store.
    let listen = json!({"jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [task]}, "_meta": tasks_meta()}});
    let mut followed = mrtr_testkit::http::EventStream::open(c.addr, &listen, &[]);
    let ack = followed.next_event().expect("the acknowledgement");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "{ack}"
    );
    let first = followed.next_event().expect("the status C finds");
    assert_eq!(first["params"]["status"], "input_required", "{first}");

    // Answered through B, which starts the run, and dies in it (before the
    // `once` step: the job takes 4 s).
    let ack = task_request(
        &b,
        3,
        "tasks/update",
        json!({"taskId": task, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": true}}}}),
    );
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    std::thread::sleep(Duration::from_millis(500));
    let working = task_request(&a, 4, "tasks/get", json!({"taskId": task}));
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(
        counter(
            std::slice::from_ref(&b),
            "mrtr_once_total{result=\"claimed\"}"
        ),
        0
    );
    b.signal("KILL");

    // Its lease lapses (3 s), A or C takes the run over, and C reads the result.
    let done = wait_status(&c, &task, "completed", Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "Migrated",
        "{done}"
    );
    // C's subscription was told each status, the last one the result.
    let mut statuses = vec!["input_required".to_owned()];
    while statuses.last().map(String::as_str) != Some("completed") {
        let told = followed.next_event().expect("a status notification");
        assert_eq!(told["method"], "notifications/tasks", "{told}");
        assert!(told["params"].get("requestState").is_none());
        statuses.push(told["params"]["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("input_required"),
        "{statuses:?}"
    );
    assert!(statuses.iter().any(|s| s == "working"), "{statuses:?}");
    eprintln!("statuses told to C's subscription: {statuses:?}");
    drop(followed);
    let survivors = [a, c];
    assert_eq!(
        counter(&survivors, "mrtr_once_total{result=\"claimed\"}"),
        1,
        "the once step ran exactly once"
    );
    assert_eq!(
        counter(&survivors, "mrtr_once_total{result=\"replayed\"}"),
        0
    );
    let runs: Vec<usize> = survivors.iter().map(task_runs).collect();
    eprintln!(
        "task runs: A {}, C {} (B was killed in its run)",
        runs[0], runs[1]
    );
    assert_eq!(
        runs.iter().sum::<usize>(),
        2,
        "A's first run, and the takeover"
    );
}

fn call_on(server: &Server, body: &Value) -> Value {
    server.call(body, 200)
}
