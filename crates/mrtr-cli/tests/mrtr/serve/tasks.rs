//! The tasks extension's status notifications on `mrtr serve --stdio`: a
//! subscription that follows a task (`notifications.taskIds`) is told each
//! status, read from the store, until the task ends.

use serde_json::{Value, json};

use crate::support::{StdioServer, all_caps, meta};

fn tasks_meta() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    meta(&caps)
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = tasks_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Reads lines until the reply to `id`, keeping the task notifications seen.
fn reply_to(stdio: &mut StdioServer, id: u64, told: &mut Vec<Value>) -> Value {
    loop {
        let line = stdio.read_reply();
        if line["id"] == id {
            return line;
        }
        if line["method"] == "notifications/tasks" {
            told.push(line);
        }
    }
}

/// Reads task notifications until one says `status`.
fn told_until(stdio: &mut StdioServer, status: &str, told: &mut Vec<Value>) {
    while !told.iter().any(|t| t["params"]["status"] == status) {
        let line = stdio.read_reply();
        if line["method"] == "notifications/tasks" {
            told.push(line);
        }
    }
}

#[test]
fn a_subscription_on_stdio_is_told_a_task_s_statuses_until_it_ends() {
    let mut stdio = StdioServer::start(&[]);
    let mut told = Vec::new();
    stdio.send(
        &request(
            1,
            "tools/call",
            json!({"name": "migrate", "arguments": {"seconds": 0}}),
        )
        .to_string(),
    );
    let created = reply_to(&mut stdio, 1, &mut told);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    stdio.send(
        &request(
            2,
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [task]}}),
        )
        .to_string(),
    );
    let ack = stdio.read_reply();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task]));
    told_until(&mut stdio, "input_required", &mut told);
    let asked = told.last().unwrap().clone();
    assert_eq!(asked["params"]["taskId"], task.as_str());
    assert_eq!(
        asked["params"]["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{asked}"
    );
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    stdio.send(
        &request(
            3,
            "tasks/update",
            json!({"taskId": task, "inputResponses": {
                "confirm": {"action": "accept", "content": {"confirm": true}}}}),
        )
        .to_string(),
    );
    let ack = reply_to(&mut stdio, 3, &mut told);
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    told_until(&mut stdio, "completed", &mut told);
    let done = told.last().unwrap();
    assert_eq!(
        done["params"]["result"]["content"][0]["text"], "Migrated",
        "{done}"
    );
    for t in &told {
        assert!(t["params"].get("requestState").is_none(), "{t}");
    }
    stdio.finish();
}
