//! The guard without a Redis: URLs and their options, keys, the policy reply,
//! and claims outside a runtime or against a store that never answers.

use ::redis::Value;

use super::policy::policy_of;
use super::*;
use mrtr::Timestamp;
use mrtr::replay::{ClaimOutcome, PrincipalKey, ReplayGuard};

fn claim(step: &str) -> Claim {
    let t = Timestamp::from_unix_secs(1_800_000_000);
    Claim::new(
        [9; 16],
        step,
        t,
        t.add_secs(660),
        t,
        PrincipalKey::from_bytes([1; 16]),
    )
}

#[test]
fn urls_are_checked_and_never_echoed() {
    for bad in [
        "http://x",
        "localhost:6379",
        "unix:///tmp/r.sock",
        "redis://:pw@[::1",
    ] {
        let e = RedisReplayGuard::new(bad, "aud").unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
    }
    assert!(RedisReplayGuard::new("redis://127.0.0.1:6379/2", "aud").is_ok());
    assert!(RedisReplayGuard::new("REDIS://127.0.0.1", "aud").is_ok());
    // TLS is compiled in: the client accepts the scheme.
    assert!(RedisReplayGuard::new("rediss://redis.example:6380", "aud").is_ok());
    let g = RedisReplayGuard::new("redis://:secret@127.0.0.1:6379", "aud").unwrap();
    assert!(!format!("{g:?}").contains("secret"));
}

#[test]
fn wait_options_are_the_guards_and_checked() {
    let (url, wait) = take_wait_options("redis://:pw@h:1/2?wait=2&wait_timeout_ms=30").unwrap();
    assert_eq!(url, "redis://:pw@h:1/2");
    assert_eq!(
        wait,
        Some(Replicas {
            count: 2,
            timeout: Duration::from_millis(30)
        })
    );
    // The client's own options stay; the default WAIT timeout applies.
    let (url, wait) = take_wait_options("redis://h/0?protocol=resp3&wait=1").unwrap();
    assert_eq!(url, "redis://h/0?protocol=resp3");
    assert_eq!(wait.unwrap().timeout, crate::defaults::REDIS_WAIT_TIMEOUT);
    assert_eq!(
        take_wait_options("redis://h").unwrap(),
        ("redis://h".into(), None)
    );
    for bad in [
        "redis://:hunter2@h?wait=0",
        "redis://:hunter2@h?wait=65",
        "redis://:hunter2@h?wait=two",
        "redis://:hunter2@h?wait=",
        "redis://:hunter2@h?wait=1&wait=2",
        "redis://:hunter2@h?wait=1&wait_timeout_ms=0",
        "redis://:hunter2@h?wait=1&wait_timeout_ms=10001",
        "redis://:hunter2@h?wait_timeout_ms=50",
    ] {
        let e = RedisReplayGuard::new(bad, "aud").unwrap_err().to_string();
        assert!(e.contains("wait"), "{bad}: {e}");
        assert!(!e.contains("hunter2") && !e.contains("two"), "{e}");
    }
    let g = RedisReplayGuard::new("redis://h?wait=1&wait_timeout_ms=40", "aud").unwrap();
    assert_eq!(
        g.claim_timeout(),
        crate::defaults::REDIS_COMMAND_TIMEOUT + Duration::from_millis(40)
    );
}

#[test]
fn the_policy_is_read_from_either_reply_shape() {
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let resp2 = Value::Array(vec![bulk("maxmemory-policy"), bulk("allkeys-lru")]);
    assert_eq!(policy_of(resp2).as_deref(), Some("allkeys-lru"));
    let resp3 = Value::Map(vec![(bulk("maxmemory-policy"), bulk("noeviction"))]);
    assert_eq!(policy_of(resp3).as_deref(), Some("noeviction"));
    assert_eq!(policy_of(Value::Array(vec![])), None);
    let odd = Value::Array(vec![bulk("maxmemory-policy"), bulk("evil\nline")]);
    assert_eq!(policy_of(odd).as_deref(), Some("an unrecognized policy"));
}

#[test]
fn only_an_opt_in_lets_an_evicting_store_take_claims() {
    let evicting = |allowed| StoreCheck::Evicting {
        policy: "volatile-lru".into(),
        allowed,
    };
    assert!(evicting(false).refuses_claims());
    assert!(!evicting(true).refuses_claims());
    let unverified = |allowed| StoreCheck::Unverified {
        reason: "NOPERM".into(),
        allowed,
    };
    assert!(unverified(false).refuses_claims());
    assert!(!unverified(true).refuses_claims());
    assert!(!StoreCheck::NoEviction.refuses_claims());
    assert!(evicting(false).to_string().contains("volatile-lru"));
}

#[test]
fn keys_are_prefixed_by_audience_and_hashed() {
    let a = RedisReplayGuard::new("redis://127.0.0.1", "https://a.example").unwrap();
    let b = RedisReplayGuard::new("redis://127.0.0.1", "https://b.example").unwrap();
    assert_ne!(a.key_prefix(), b.key_prefix());
    let key = a.key(&claim("deploy-to-production"));
    let rest = key.strip_prefix(a.key_prefix()).unwrap();
    assert_eq!(a.key_prefix().len(), "mrtr:".len() + 32 + 1);
    assert_eq!(rest.len(), 64);
    assert!(rest.bytes().all(|c| c.is_ascii_hexdigit()));
    assert!(!key.contains("deploy"));
    assert!(!key.contains(&hex(&[9; 16])), "no flow id in clear");
}

#[test]
fn outside_a_runtime_a_claim_is_unavailable() {
    let g = RedisReplayGuard::new("redis://127.0.0.1:1", "aud").unwrap();
    let outcome = futures_util::FutureExt::now_or_never(g.claim(&claim("s")));
    assert_eq!(outcome, Some(ClaimOutcome::Unavailable));
}

/// A server that accepts connections and never answers: the claim gives up
/// after the command timeout. The clock is tokio's paused clock, so the
/// check does not depend on the machine's speed.
#[tokio::test(start_paused = true)]
async fn a_silent_store_is_unavailable_after_the_command_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let g = RedisReplayGuard::new(&format!("redis://{addr}"), "aud")
        .unwrap()
        .command_timeout(Duration::from_millis(250));
    let start = tokio::time::Instant::now();
    assert_eq!(g.claim(&claim("s")).await, ClaimOutcome::Unavailable);
    assert!(start.elapsed() <= Duration::from_millis(250) + Duration::from_millis(1));
    hold.abort();
}
