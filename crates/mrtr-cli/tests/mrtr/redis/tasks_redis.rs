//! The tasks extension's Redis store against a real Redis: two stores (two
//! instances) on one Redis share the tasks, their caps and their versions.
//! `#[ignore]`d as the replay guard's Redis tests are, and run by `.ci/run`
//! with `MRTR_TEST_REDIS_URL`; the fleet test (`fleet.rs`) runs it under
//! `mrtr serve`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mrtr::Timestamp;
use mrtr::service::tasks::{StoredTask, TaskLimits, TaskStore, TaskStoreError};
use mrtr_redis::{RedisReplayGuard, RedisTaskStore};

fn redis_url() -> String {
    std::env::var("MRTR_TEST_REDIS_URL").unwrap_or_else(|_| {
        panic!("MRTR_TEST_REDIS_URL is not set: start a Redis with `scripts/redis.sh start`")
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A store on its own guard (its own connection), for `audience`.
fn store(url: &str, audience: &str) -> RedisTaskStore {
    let guard = RedisReplayGuard::new(url, audience)
        .unwrap()
        .command_timeout(Duration::from_secs(2));
    RedisTaskStore::new(Arc::new(guard))
}

fn unique(label: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("https://{label}-{}-{nanos}.example", std::process::id())
}

fn task(owner: &str, now: Timestamp, due: Option<Timestamp>) -> StoredTask {
    StoredTask {
        record: format!(r#"{{"owner":"{owner}","n":1}}"#),
        owner: owner.repeat(64 / owner.len()),
        expires_at: now.add_secs(3600),
        due_at: due,
    }
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn two_stores_on_one_redis_share_tasks_caps_versions_and_due_runs() {
    let url = redis_url();
    let audience = unique("tasks");
    let (one, two) = (store(&url, &audience), store(&url, &audience));
    let other_service = store(&url, &unique("other"));
    runtime().block_on(async {
        let now = Timestamp::now();
        let limits = TaskLimits {
            total: 3,
            per_owner: 2,
        };
        let t1 = task("a", now, Some(now));
        one.create("t1", &t1, now, limits).await.unwrap();
        assert_eq!(
            one.create("t1", &t1, now, limits).await,
            Err(TaskStoreError::Exists)
        );
        // Created on one, read on two; another audience's store does not see it.
        let read = two.load("t1", now).await.unwrap().unwrap();
        assert_eq!(
            (read.record.as_str(), read.version),
            (t1.record.as_str(), 1)
        );
        assert!(other_service.load("t1", now).await.unwrap().is_none());
        // Compare-and-set: the first replacement from version 1 wins.
        let changed = StoredTask {
            record: r#"{"n":2}"#.into(),
            due_at: None,
            ..t1.clone()
        };
        assert!(two.replace("t1", 1, &changed).await.unwrap());
        assert!(!one.replace("t1", 1, &t1).await.unwrap(), "stale");
        let read = one.load("t1", now).await.unwrap().unwrap();
        assert_eq!((read.record.as_str(), read.version), (r#"{"n":2}"#, 2));
        assert!(!one.replace("gone", 1, &t1).await.unwrap());
        // The caps hold across both stores.
        two.create("t2", &task("a", now, None), now, limits)
            .await
            .unwrap();
        assert_eq!(
            one.create("t3", &task("a", now, None), now, limits).await,
            Err(TaskStoreError::Full { per_owner: true })
        );
        one.create("t3", &task("b", now, None), now, limits)
            .await
            .unwrap();
        assert_eq!(
            two.create("t4", &task("c", now, None), now, limits).await,
            Err(TaskStoreError::Full { per_owner: false })
        );
        // Expired tasks do not count, and are not read.
        let later = now.add_secs(3600);
        assert!(one.load("t1", later).await.unwrap().is_none());
        two.create("t4", &task("c", later, None), later, limits)
            .await
            .unwrap();
        // Due runs: a task due now, then one whose lease runs to later.
        let soon = now.add_secs(30);
        assert!(
            one.replace("t3", 1, &task("b", now, Some(soon)))
                .await
                .unwrap()
        );
        assert!(one.due(now, 10).await.unwrap().is_empty());
        assert_eq!(two.due(soon, 10).await.unwrap(), ["t3"]);
        assert!(one.replace("t3", 2, &task("b", now, None)).await.unwrap());
        assert!(two.due(soon, 10).await.unwrap().is_empty());
    });
}

#[test]
#[ignore = "needs a Redis: MRTR_TEST_REDIS_URL=$(scripts/redis.sh start), --ignored"]
fn a_task_s_keys_expire_with_it_and_name_nobody_in_clear() {
    let url = redis_url();
    let audience = unique("expiry");
    let s = store(&url, &audience);
    let rt = runtime();
    rt.block_on(async {
        let now = Timestamp::now();
        let limits = TaskLimits {
            total: 10,
            per_owner: 10,
        };
        s.create("t1", &task("d", now, Some(now)), now, limits)
            .await
            .unwrap();
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("mrtr:*task*")
            .query_async(&mut c)
            .await
            .unwrap();
        let prefix = RedisReplayGuard::new(&url, &audience)
            .unwrap()
            .key_prefix()
            .to_owned();
        let mine: Vec<&String> = keys.iter().filter(|k| k.starts_with(&prefix)).collect();
        assert_eq!(mine.len(), 4, "the task and its three indexes: {mine:?}");
        for key in &mine {
            assert!(!key.contains("https://"), "no audience in clear: {key}");
        }
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("{prefix}task:t1"))
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(ttl > 3_500_000 && ttl <= 3_600_000, "{ttl}");
    });
}

#[test]
fn a_store_that_cannot_be_reached_is_unavailable_not_empty() {
    let s = RedisTaskStore::new(Arc::new(
        RedisReplayGuard::new("redis://127.0.0.1:1", "x")
            .unwrap()
            .command_timeout(Duration::from_millis(200))
            .connect_timeout(Duration::from_millis(100)),
    ));
    runtime().block_on(async {
        let now = Timestamp::now();
        assert_eq!(s.load("t", now).await, Err(TaskStoreError::Unavailable));
        assert_eq!(s.due(now, 1).await, Err(TaskStoreError::Unavailable));
        let limits = TaskLimits {
            total: 1,
            per_owner: 1,
        };
        assert_eq!(
            s.create("t", &task("e", now, None), now, limits).await,
            Err(TaskStoreError::Unavailable)
        );
    });
}
