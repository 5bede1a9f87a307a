//! The runs of the tasks extension's tasks ([`Service::run_task`]): started by
//! the transports, off the request that made them due, each bounded by the
//! task's time to live, and each written as a request line of its own
//! (transport `task`).

use std::sync::Arc;
use std::time::Instant;

use mrtr::Timestamp;
use mrtr::service::{Reply, Service, TaskRun};

/// Starts the task run `reply` made due, if any, on a task of the runtime's.
pub(crate) fn start(service: &Arc<Service>, reply: &mut Reply) {
    if let Some(run) = reply.task.take() {
        let service = Arc::clone(service);
        tokio::spawn(async move { run_one(&service, run).await });
    }
}

/// One run, bounded by the task's time to live, and its log line.
pub(crate) async fn run_one(service: &Service, run: TaskRun) {
    let started = Instant::now();
    let corr = crate::log::correlation_id();
    let deadline = tokio::time::sleep(mrtr::defaults::TASK_TTL);
    if let Some(line) = service.run_task(run, Timestamp::now, deadline).await {
        crate::log::request(&corr, "task", &line, None, started.elapsed());
    }
}
