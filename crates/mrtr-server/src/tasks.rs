//! The runs of the tasks extension's tasks ([`Service::run_task`]): started by
//! the transports, off the request that made them due, and by the sweeper,
//! which takes over the runs whose lease lapsed (their instance died or lost
//! the store: [`Service::due_tasks`]). Each run is written as a request line
//! of its own (transport `task`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mrtr::Timestamp;
use mrtr::service::{Reply, Service, TaskRun};

/// Starts the task run `reply` made due, if any, on a task of the runtime's.
pub(crate) fn start(service: &Arc<Service>, reply: &mut Reply) {
    if let Some(run) = reply.task.take() {
        let service = Arc::clone(service);
        tokio::spawn(async move { run_one(&service, run).await });
    }
}

/// One run, with its lease kept on the runtime's timer, and its log line.
pub(crate) async fn run_one(service: &Service, run: TaskRun) {
    let started = Instant::now();
    let corr = crate::log::correlation_id();
    if let Some(line) = service
        .run_task(run, Timestamp::now, tokio::time::sleep)
        .await
    {
        crate::log::request(&corr, "task", &line, None, started.elapsed());
    }
}

/// How often the sweeper looks for due tasks: twice in a lease.
pub(crate) fn sweep_every(service: &Service) -> Option<Duration> {
    service.task_lease().map(|lease| lease / 2)
}

/// The sweeper of an HTTP endpoint: looks for due tasks twice in a lease and
/// runs them, until dropped.
#[derive(Debug)]
pub(crate) struct Sweeper(tokio::task::AbortHandle);

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Sweeper {
    /// Starts the sweeper of `service` on the current runtime; `None` when
    /// the service serves no tasks or there is no runtime here.
    pub(crate) fn start(service: &Arc<Service>) -> Option<Self> {
        let every = sweep_every(service)?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let service = Arc::clone(service);
        let task = runtime.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                for run in service.due_tasks(Timestamp::now()).await {
                    let service = Arc::clone(&service);
                    tokio::spawn(async move { run_one(&service, run).await });
                }
            }
        });
        Some(Self(task.abort_handle()))
    }
}
