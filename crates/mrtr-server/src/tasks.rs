//! The runs of the tasks extension's tasks ([`Service::run_task`]): started by
//! the transports, off the request that made them due, each bounded by the
//! task's time to live.

use std::sync::Arc;

use mrtr::Timestamp;
use mrtr::service::{Reply, Service, TaskRun};

/// Starts the task run `reply` made due, if any, on a task of the runtime's.
pub(crate) fn start(service: &Arc<Service>, reply: &mut Reply) {
    if let Some(run) = reply.task.take() {
        let service = Arc::clone(service);
        tokio::spawn(async move { run_one(&service, run).await });
    }
}

/// One run, bounded by the task's time to live.
pub(crate) async fn run_one(service: &Service, run: TaskRun) {
    let deadline = tokio::time::sleep(mrtr::defaults::TASK_TTL);
    service.run_task(run, Timestamp::now, deadline).await;
}
