//! Keys reloaded without a restart: `mrtr serve --keys-file F` re-reads F on
//! SIGHUP. The three-phase rotation of the README on a live fleet of two
//! processes with flows in flight across every phase; broken files that keep the
//! ring in force; SIGHUP with nothing to reload; the reload function without
//! signals.
#![cfg(unix)]

use crate::support as server_support;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mrtr::seal::{Key, Keyring, Kid, SealConfig, Sealer, generate_key_string};
use mrtr_cli::serve::{KeyReload, KeySource, reload_keys};
use serde_json::{Value, json};
use server_support::{
    MULTI, Server, StdioServer, accept, asked_keys, complete_text, result, retry, state_of,
    tool_call,
};

const RELOADED: &str = "key ring reloaded";
const NOT_RELOADED: &str = "key ring not reloaded";

/// A fresh directory for one test's key file, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mrtr-reload-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a key file: the keys one per line, the first seals.
fn write_keys(path: &Path, keys: &[&str]) {
    let mut text = String::from("# mrtr keys: the first one seals\n");
    for k in keys {
        text.push_str(k);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn kid(key: &str) -> Kid {
    Key::from_base64url(key).unwrap().kid()
}

/// The kid a `requestState` names in clear: byte 0 is the format version (1),
/// bytes 1..5 the kid (see `mrtr::manual::token_format`).
fn kid_of_state(state: &str) -> Kid {
    let raw = URL_SAFE_NO_PAD.decode(state).unwrap();
    assert_eq!(raw[0], 1, "token format version");
    Kid::from_be_bytes([raw[1], raw[2], raw[3], raw[4]])
}

/// Sends SIGHUP to a process, which must still be running.
fn hangup(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success());
}

/// Waits (at most 10 s) until `lines` holds at least `n` lines containing
/// `needle`, and returns those lines.
fn wait_for(lines: &Mutex<Vec<String>>, needle: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found: Vec<String> = lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect();
        if found.len() >= n || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGHUPs `server` and waits for its `n`-th line containing `needle`; returns it.
fn hangup_and_wait(server: &Server, needle: &str, n: usize) -> String {
    hangup(server.child.id());
    let lines = wait_for(&server.stderr, needle, n);
    assert_eq!(
        lines.len(),
        n,
        "expected {n} lines with {needle:?}; stderr: {:?}",
        server.stderr_lines()
    );
    lines[n - 1].clone()
}

/// One run of the reference server's three-round tool (`step1`, `step2`, then
/// complete), whose rounds may go to different instances.
struct Flow {
    name: String,
    first: Value,
    /// The `requestState` of the last round, once round 1 is sealed.
    state: Option<String>,
    /// Rounds answered so far: 0 before round 1 is sealed, 3 once complete.
    rounds: u8,
    /// The kid of every state this flow was handed, in order.
    kids: Vec<Kid>,
}

/// The fleet's flows, their JSON-RPC ids, and every failure.
#[derive(Default)]
struct Flows {
    flows: Vec<Flow>,
    next_id: u64,
    failed: Vec<String>,
}

impl Flows {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Starts a flow on `server` (round 1) and returns its index.
    fn start(&mut self, server: &Server, name: &str) -> usize {
        let first = tool_call(self.id(), MULTI, None);
        let mut flow = Flow {
            name: name.to_owned(),
            first,
            state: None,
            rounds: 0,
            kids: Vec::new(),
        };
        let reply = server.rpc(&flow.first);
        match reply_state(reply.status, &reply.json(), "step1") {
            Ok(state) => {
                flow.kids.push(kid_of_state(&state));
                flow.state = Some(state);
                flow.rounds = 1;
            }
            Err(e) => self.failed.push(format!("{name} round 1: {e}")),
        }
        self.flows.push(flow);
        self.flows.len() - 1
    }

    /// Answers the pending round of flow `i` on `server`.
    fn advance(&mut self, i: usize, server: &Server) {
        let id = self.id();
        let flow = &mut self.flows[i];
        let (Some(state), rounds @ 1..=2) = (flow.state.clone(), flow.rounds) else {
            return; // failed or complete
        };
        let answers = if rounds == 1 {
            json!({"step1": accept(json!({"name": flow.name}))})
        } else {
            json!({"step2": accept(json!({"color": "green"}))})
        };
        let body = retry(&flow.first, id, Some(answers), &state);
        let reply = server.rpc(&body);
        let outcome = if rounds == 1 {
            reply_state(reply.status, &reply.json(), "step2").map(Some)
        } else {
            reply_complete(
                reply.status,
                &reply.json(),
                &format!("{} likes green", flow.name),
            )
            .map(|()| None)
        };
        match outcome {
            Ok(next) => {
                flow.kids.extend(next.as_deref().map(kid_of_state));
                flow.state = next;
                flow.rounds += 1;
            }
            Err(e) => {
                flow.state = None;
                self.failed
                    .push(format!("{} round {}: {e}", flow.name, rounds + 1));
            }
        }
    }

    fn last_kid(&self, i: usize) -> Kid {
        *self.flows[i].kids.last().expect("a sealed round")
    }

    fn complete(&self, i: usize) -> bool {
        self.flows[i].rounds == 3
    }
}

/// The `requestState` of an `InputRequiredResult` asking `key`, or what went wrong.
fn reply_state(status: u16, reply: &Value, key: &str) -> Result<String, String> {
    if status != 200 || reply.get("error").is_some() {
        return Err(format!("HTTP {status}: {reply}"));
    }
    if asked_keys(reply) != [key] {
        return Err(format!("expected a question {key}: {reply}"));
    }
    Ok(state_of(reply))
}

fn reply_complete(status: u16, reply: &Value, want: &str) -> Result<(), String> {
    if status != 200 || reply.get("error").is_some() {
        return Err(format!("HTTP {status}: {reply}"));
    }
    if result(reply)["resultType"] != "complete" || complete_text(reply) != want {
        return Err(format!("expected {want:?}: {reply}"));
    }
    Ok(())
}

/// The README's rotation on a live fleet of two instances, each with its own
/// key file, reloaded one after the other (a rolling change) with flows in flight
/// whose rounds alternate between the instances: no flow fails.
#[test]
fn three_phase_rotation_on_a_live_fleet_fails_no_flow() {
    let dir = TempDir::new("fleet");
    let (old, new) = (generate_key_string(), generate_key_string());
    let (old_kid, new_kid) = (kid(&old), kid(&new));
    let (file_a, file_b) = (dir.path("a.keys"), dir.path("b.keys"));
    write_keys(&file_a, &[&old]);
    write_keys(&file_b, &[&old]);
    let a = Server::start(&["--keys-file", file_a.to_str().unwrap()]);
    let b = Server::start(&["--keys-file", file_b.to_str().unwrap()]);
    let mut f = Flows::default();

    // Before: flows sealed with the old key.
    let f1 = f.start(&a, "Ada");
    let f2 = f.start(&b, "Bea");
    assert_eq!(f.last_kid(f1), old_kid);
    let stale = f.flows[f1].state.clone().unwrap();
    f.advance(f1, &b);

    // Phase 1, rolling: the new key is added second (open-only), A first.
    write_keys(&file_a, &[&old, &new]);
    let line = hangup_and_wait(&a, RELOADED, 1);
    let kids = format!("kids={old_kid},{new_kid}");
    assert!(line.contains(&kids) && line.contains("keys=2"), "{line}");
    assert!(line.contains(&format!("sealing={old_kid}")), "{line}");
    let f3 = f.start(&a, "Cy");
    assert_eq!(
        f.last_kid(f3),
        old_kid,
        "phase 1 still seals with the old key"
    );
    f.advance(f2, &a);
    f.advance(f3, &b);
    write_keys(&file_b, &[&old, &new]);
    hangup_and_wait(&b, RELOADED, 1);
    f.advance(f1, &a); // complete

    // Phase 2, rolling: the new key moves first (sealing). While A seals with it
    // and B does not yet, B must open A's states: phase 1 made sure it can.
    write_keys(&file_a, &[&new, &old]);
    let line = hangup_and_wait(&a, RELOADED, 2);
    assert!(
        line.contains(&format!("kids={new_kid},{old_kid}")),
        "{line}"
    );
    assert!(line.contains(&format!("sealing={new_kid}")), "{line}");
    let f4 = f.start(&a, "Dee");
    assert_eq!(f.last_kid(f4), new_kid, "phase 2 seals with the new key");
    f.advance(f4, &b);
    assert_eq!(f.last_kid(f4), old_kid, "B still seals with the old key");
    f.advance(f4, &a); // complete
    f.advance(f2, &b); // complete: an old-key state on B
    let f5 = f.start(&b, "Eve");
    write_keys(&file_b, &[&new, &old]);
    hangup_and_wait(&b, RELOADED, 2);
    let f6 = f.start(&b, "Fay");
    assert_eq!(f.last_kid(f6), new_kid);
    f.advance(f5, &a); // an old-key state opened on A after phase 2
    assert_eq!(f.last_kid(f5), new_kid);
    f.advance(f3, &a); // complete
    f.advance(f5, &b); // complete
    f.advance(f6, &a);

    // Phase 3 waits out the flow lifetime plus the skew (1 h and 60 s): before
    // that, each instance sealed with the old key too recently to drop it, so a
    // file without it is refused and the ring in force kept, even though the
    // flows this test knows of have completed. (The unit tests of
    // `mrtr::seal::keyring` run phase 3 on explicit time.)
    assert!(
        [f1, f2, f3, f4, f5].iter().all(|&i| f.complete(i)),
        "failures: {:?}",
        f.failed
    );
    assert_eq!(f.last_kid(f6), new_kid);
    for (file, s) in [(&file_a, &a), (&file_b, &b)] {
        write_keys(file, &[&new]);
        let line = hangup_and_wait(s, NOT_RELOADED, 1);
        assert!(line.contains("ERROR"), "{line}");
        assert!(line.contains(&format!("in_use={old_kid}")), "{line}");
    }
    f.advance(f6, &b); // complete
    let f7 = f.start(&a, "Gus");
    f.advance(f7, &b);
    f.advance(f7, &a); // complete

    assert!(f.failed.is_empty(), "failed flows: {:?}", f.failed);
    assert!((0..f.flows.len()).all(|i| f.complete(i)));
    for s in [&a, &b] {
        let lines = s.stderr_lines();
        assert!(
            !lines.iter().any(|l| l.contains("reject_reason")),
            "{lines:?}"
        );
        // The phases were followed: no key sealed before every instance held it.
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("was not in the previous ring")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains(&old) || l.contains(&new)),
            "key bytes logged"
        );
    }

    let (mut a, mut b) = (a, b);
    for s in [&mut a, &mut b] {
        assert!(running(s), "every SIGHUP left the server running");
    }

    // A restart starts with no record of what the process sealed: A comes back
    // with the new key only, and the old key is gone for real there. A state it
    // sealed (round 1 of the first flow, replayed) no longer opens.
    a.terminate();
    let a = Server::start(&["--keys-file", file_a.to_str().unwrap()]);
    let f8 = f.start(&a, "Hal");
    assert_eq!(f.last_kid(f8), new_kid);
    f.advance(f8, &b);
    f.advance(f8, &a); // complete
    assert!(f.failed.is_empty(), "failed flows: {:?}", f.failed);
    let id = f.id();
    let replay = retry(
        &f.flows[f1].first,
        id,
        Some(json!({"step1": accept(json!({"name": "Ada"}))})),
        &stale,
    );
    assert_eq!(a.rpc(&replay).status, 400);
    let line = a.log_line_for(id);
    assert!(line.contains("reject_reason=\"unknown_key\""), "{line}");
}

/// A rotation file (`new` then `old`) caught after its first line parses as a
/// ring of the new key alone: it is refused with an ERROR that names the old key
/// (never key bytes), the ring in force is kept, and the flow sealed under the
/// old key finishes. Once the file is whole it is taken, and a file that drops
/// the old key while it is still in use is refused in turn.
#[test]
fn a_rotation_file_caught_after_its_first_line_breaks_no_flow() {
    let dir = TempDir::new("partial");
    let (old, new) = (generate_key_string(), generate_key_string());
    let (old_kid, new_kid) = (kid(&old), kid(&new));
    let file = dir.path("keys");
    std::fs::write(&file, format!("{old}\n")).unwrap();
    let mut s = Server::start(&["--keys-file", file.to_str().unwrap()]);
    let mut f = Flows::default();
    let flow = f.start(&s, "Ada");
    assert_eq!(f.last_kid(flow), old_kid);

    // The writer of `{new}\n{old}\n` has got as far as its first line.
    std::fs::write(&file, format!("{new}\n")).unwrap();
    let line = hangup_and_wait(&s, NOT_RELOADED, 1);
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains(&format!("in_use={old_kid}")), "{line}");
    assert!(
        line.contains(file.to_str().unwrap()),
        "names the file: {line}"
    );
    assert!(
        line.contains("rename"),
        "says how to write the file: {line}"
    );
    assert!(
        !line.contains(&old) && !line.contains(&new),
        "key bytes: {line}"
    );
    assert!(running(&mut s));
    // The ring in force is kept: the flow goes on, and the old key still seals.
    f.advance(flow, &s);
    assert_eq!(f.last_kid(flow), old_kid);
    let other = f.start(&s, "Bo");
    assert_eq!(f.last_kid(other), old_kid);

    // The whole file: a proper rotation (new key first, old one kept) is taken,
    // and the flows begun under the old key finish.
    std::fs::write(&file, format!("{new}\n{old}\n")).unwrap();
    let line = hangup_and_wait(&s, RELOADED, 1);
    assert!(
        line.contains(&format!("kids={new_kid},{old_kid}")),
        "{line}"
    );
    f.advance(flow, &s); // complete: its last state was sealed with the old key
    f.advance(other, &s);
    assert_eq!(f.last_kid(other), new_kid);
    f.advance(other, &s); // complete
    assert!(f.failed.is_empty(), "failed flows: {:?}", f.failed);
    assert!(f.complete(flow) && f.complete(other));

    // Dropping the old key within the flow lifetime of its last seal is refused too.
    std::fs::write(&file, format!("{new}\n")).unwrap();
    let line = hangup_and_wait(&s, NOT_RELOADED, 2);
    assert!(line.contains(&format!("in_use={old_kid}")), "{line}");
    let g = f.start(&s, "Cy");
    assert_eq!(f.last_kid(g), new_kid, "the rotated ring is in force");
    let lines = s.stderr_lines();
    assert_eq!(
        lines.iter().filter(|l| l.contains(RELOADED)).count(),
        1,
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("reject_reason")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(&old) || l.contains(&new)),
        "key bytes logged"
    );
}

/// Whether the server process is still running.
fn running(s: &mut Server) -> bool {
    s.child.try_wait().unwrap().is_none()
}

/// A key file that cannot be read or does not parse keeps the ring in force; the
/// error is logged, never the file's contents.
#[test]
fn a_broken_key_file_keeps_the_ring_in_force() {
    let dir = TempDir::new("broken");
    let (old, new) = (generate_key_string(), generate_key_string());
    let file = dir.path("keys");
    write_keys(&file, &[&old]);
    let mut s = Server::start(&["--keys-file", file.to_str().unwrap()]);
    let mut f = Flows::default();
    let flow = f.start(&s, "Ada");

    // A half-written file: the new key cut short after a good one.
    let half = &new[..20];
    let cases = ["garbage", "empty", "half written", "missing", "a directory"];
    for (n, what) in cases.into_iter().enumerate() {
        if file.is_dir() {
            std::fs::remove_dir(&file).unwrap();
        } else if file.exists() {
            std::fs::remove_file(&file).unwrap();
        }
        match what {
            "garbage" => std::fs::write(&file, "not a key ring at all\n").unwrap(),
            "empty" => std::fs::write(&file, "").unwrap(),
            "half written" => write_keys(&file, &[&new, half]),
            "a directory" => std::fs::create_dir(&file).unwrap(),
            _ => {} // missing
        }
        let line = hangup_and_wait(&s, NOT_RELOADED, n + 1);
        assert!(line.contains("ERROR"), "{what}: {line}");
        assert!(
            line.contains(file.to_str().unwrap()),
            "{what}: names the file: {line}"
        );
        for secret in [old.as_str(), new.as_str(), half, "not a key ring"] {
            assert!(
                !line.contains(secret),
                "{what}: file contents logged: {line}"
            );
        }
        assert!(running(&mut s), "{what}: still running");
        // Flows go on under the ring in force: the old key seals and opens.
        let g = f.start(&s, "Bo");
        assert_eq!(f.last_kid(g), kid(&old), "{what}");
        f.advance(g, &s);
        f.advance(g, &s);
        assert!(f.complete(g), "{what}: {:?}", f.failed);
    }
    let lines = s.stderr_lines();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    assert!(has("no key found"), "{lines:?}");
    assert!(
        has("key entry 2"),
        "the half-written entry, by position: {lines:?}"
    );
    assert!(has("cannot read key file"), "{lines:?}");
    assert!(!has(RELOADED), "{lines:?}");

    // Fixed, the file is taken again, and the flow begun before all that finishes.
    std::fs::remove_dir(&file).unwrap();
    write_keys(&file, &[&new, &old]);
    hangup_and_wait(&s, RELOADED, 1);
    f.advance(flow, &s);
    assert_eq!(f.last_kid(flow), kid(&new));
    f.advance(flow, &s);
    assert!(f.failed.is_empty(), "failed flows: {:?}", f.failed);
    assert!(f.complete(flow));
}

/// SIGHUP with keys from `MRTR_KEYS` (HTTP and stdio) or an ephemeral key: logged
/// as nothing to reload; the process keeps running and its flows keep working.
#[test]
fn sighup_without_a_key_file_changes_nothing() {
    let key = generate_key_string();
    let servers = [
        (Server::start_with_keys(&[], &key), "MRTR_KEYS"),
        (Server::start(&[]), "an ephemeral key"),
    ];
    for (mut s, from) in servers {
        let mut f = Flows::default();
        let flow = f.start(&s, "Ada");
        let sealing = f.last_kid(flow);
        for n in 1..=2 {
            let line = hangup_and_wait(&s, "nothing to reload", n);
            assert!(line.contains("WARN"), "{line}");
            assert!(line.contains(&format!("keys_from=\"{from}\"")), "{line}");
            assert!(!line.contains(&key), "{line}");
            assert!(running(&mut s), "still running");
            f.advance(flow, &s);
        }
        assert!(f.complete(flow), "{:?}", f.failed);
        let g = f.start(&s, "Bo");
        assert_eq!(f.last_kid(g), sealing, "the same ring");
        assert!(!s.stderr_lines().iter().any(|l| l.contains(RELOADED)));
    }

    // stdio: the handler is installed there too, before the first request is read.
    let mut stdio = StdioServer::start_with_keys(&[], &key);
    let irr = stdio.call(&tool_call(1, MULTI, None));
    let state = state_of(&irr);
    hangup(stdio.child.id());
    let lines = wait_for(&stdio.stderr, "nothing to reload", 1);
    assert_eq!(lines.len(), 1, "{:?}", stdio.stderr.lock().unwrap());
    let next = retry(
        &tool_call(1, MULTI, None),
        2,
        Some(json!({"step1": accept(json!({"name": "Ada"}))})),
        &state,
    );
    assert_eq!(asked_keys(&stdio.call(&next)), ["step2"]);
    let (_, stderr) = stdio.finish();
    assert!(
        stderr.iter().any(|l| l.contains("stdin closed")),
        "{stderr:?}"
    );
}

/// stdio with `--keys-file`: SIGHUP swaps the ring there as over HTTP.
#[test]
fn sighup_reloads_the_key_file_over_stdio() {
    let dir = TempDir::new("stdio");
    let (old, new) = (generate_key_string(), generate_key_string());
    let file = dir.path("keys");
    write_keys(&file, &[&old]);
    let mut s = StdioServer::start(&["--keys-file", file.to_str().unwrap()]);
    let first = tool_call(1, MULTI, None);
    let state = state_of(&s.call(&first));
    assert_eq!(kid_of_state(&state), kid(&old));

    write_keys(&file, &[&new, &old]);
    hangup(s.child.id());
    let lines = wait_for(&s.stderr, RELOADED, 1);
    assert_eq!(lines.len(), 1, "{:?}", s.stderr.lock().unwrap());
    assert!(
        lines[0].contains(&format!("sealing={}", kid(&new))),
        "{}",
        lines[0]
    );
    // The warning of a key that seals before every instance could open it.
    assert_eq!(
        wait_for(&s.stderr, "was not in the previous ring", 1).len(),
        1
    );

    let second = retry(
        &first,
        2,
        Some(json!({"step1": accept(json!({"name": "Ada"}))})),
        &state,
    );
    let irr = s.call(&second);
    assert_eq!(asked_keys(&irr), ["step2"]);
    assert_eq!(kid_of_state(&state_of(&irr)), kid(&new));
    let (_, stderr) = s.finish();
    assert!(!stderr.iter().any(|l| l.contains(&old) || l.contains(&new)));
}

/// The reload itself, without signals: what an embedding server calls.
#[test]
fn reload_keys_without_signals() {
    let dir = TempDir::new("fn");
    let (old, new) = (generate_key_string(), generate_key_string());
    let file = dir.path("keys");
    write_keys(&file, &[&old]);
    let source = KeySource::File(file.clone());
    let sealer = Sealer::new(source.keyring().unwrap(), SealConfig::default());
    let engine_side = sealer.clone();

    write_keys(&file, &[&new, &old]);
    assert_eq!(
        reload_keys(&source, &sealer),
        KeyReload::Reloaded {
            kids: vec![kid(&new), kid(&old)]
        }
    );
    assert_eq!(engine_side.keyring().sealing_kid(), kid(&new));

    std::fs::write(&file, format!("{new}\n{}\n", &old[..10])).unwrap();
    match reload_keys(&source, &sealer) {
        KeyReload::Kept { error } => {
            let e = error.to_string();
            assert!(e.starts_with("--keys-file: key entry 2"), "{e}");
            assert!(!e.contains(&old[..10]) && !e.contains(&new), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(engine_side.keyring().kids(), vec![kid(&new), kid(&old)]);

    let env = KeySource::Env(old.clone());
    assert_eq!(reload_keys(&env, &sealer), KeyReload::NothingToReload);
    let ephemeral = Sealer::new(Keyring::ephemeral(), SealConfig::default());
    let before = ephemeral.keyring().sealing_kid();
    assert_eq!(
        reload_keys(&KeySource::Ephemeral, &ephemeral),
        KeyReload::NothingToReload
    );
    assert_eq!(ephemeral.keyring().sealing_kid(), before);
}
