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
    let (span, own) = crate::span::task_run(run.parent());
    let run = match own {
        Some(own) => run.in_span(own),
        None => run,
    };
    let ran = service.run_task(run, Timestamp::now, tokio::time::sleep);
    if let Some(line) = tracing::Instrument::instrument(ran, span.clone()).await {
        crate::span::conclude(&span, &line, crate::span::error_code(&line));
        let _in_span = span.enter();
        crate::log::request(&corr, "task", &line, None, started.elapsed());
    }
}

/// How often the sweeper looks for due tasks: twice in a lease.
pub(crate) fn sweep_every(service: &Service) -> Option<Duration> {
    service.task_lease().map(|lease| lease / 2)
}

/// A timer that waits out the ticks it missed rather than firing them at once.
pub(crate) fn interval(every: Duration) -> tokio::time::Interval {
    let mut i = tokio::time::interval(every);
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    i
}

/// The sweeper of an HTTP endpoint: looks for due tasks twice in a lease and
/// runs them, and tells the subscriptions that follow tasks their status
/// changes ([`Service::tell_task_status`]), until dropped.
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
            let mut sweep = interval(every);
            let mut tell = interval(mrtr::defaults::TASK_POLL_INTERVAL);
            loop {
                tokio::select! {
                    _ = sweep.tick() => {
                        for run in service.due_tasks(Timestamp::now()).await {
                            let service = Arc::clone(&service);
                            tokio::spawn(async move { run_one(&service, run).await });
                        }
                    }
                    _ = tell.tick() => service.tell_task_status(Timestamp::now()).await,
                }
            }
        });
        Some(Self(task.abort_handle()))
    }
}
