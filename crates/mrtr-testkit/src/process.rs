//! What the tests that spawn a server read from the process: its exit within a
//! limit, its resident set and its open file descriptors (Linux `/proc`).

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits (polling every 20 ms) at most `limit` for `child` to exit: its status,
/// or `None` when it is still running.
pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The resident set of process `pid` in KiB (`VmRSS` in `/proc/PID/status`, Linux).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many file descriptors process `pid` has open (`/proc/PID/fd`, Linux).
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}
