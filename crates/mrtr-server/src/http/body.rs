//! The request body: its declared length, the body budget it reserves from, and
//! the deadline it must arrive by (a short allowance plus its size at a minimum
//! rate).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, header};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(super) enum BodyError {
    TooLarge,
    Timeout,
    Read,
    Busy,
}

/// The declared `Content-Length`, if there is one that parses.
pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// What [`read_body`] may buffer, where it reserves the bytes beyond the
/// allowance, and how long the body may take.
pub(super) struct BodyLimits<'a> {
    /// The body limit; the declared length is already checked against it.
    pub(super) max: usize,
    pub(super) declared: Option<usize>,
    pub(super) budget: &'a Arc<Semaphore>,
    /// [`HttpOptions::with_body_timeout`].
    pub(super) timeout: Duration,
    /// [`HttpOptions::with_body_min_rate`], at least 1.
    pub(super) min_rate: u64,
}

/// When a body read that started at `start` must have ended, given the bytes
/// that arrived: the allowance plus what they needed at the minimum rate. It
/// grows only with the bytes that arrive, so a stalled body is cut at `start +
/// timeout` and a trickle below `min_rate` soon after; no body can take longer
/// than `timeout + max / min_rate`.
pub(super) fn body_deadline(
    start: tokio::time::Instant,
    arrived: usize,
    timeout: Duration,
    min_rate: u64,
) -> tokio::time::Instant {
    let earned = Duration::from_secs_f64(arrived as f64 / min_rate.max(1) as f64);
    start + timeout + earned
}

/// Reads the body, stopping as soon as it exceeds the limit or misses its
/// deadline ([`body_deadline`]).
///
/// The first [`crate::defaults::BODY_ALLOWANCE`] bytes are free; a body that is larger
/// (declared so, or found so while reading a chunked one) first reserves its
/// declared size, or the whole limit when none was declared, from the budget, and
/// returns the reservation with the bytes so it lasts as long as they (and what is
/// parsed from them) do; a wait for the budget (at most
/// [`crate::defaults::ADMISSION_TIMEOUT`]) does not count against the body's time.
/// Nothing is allocated ahead of the bytes that arrive.
pub(super) async fn read_body(
    mut body: Body,
    limits: BodyLimits<'_>,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), BodyError> {
    let reserve = |bytes: usize| async move {
        let n = u32::try_from(bytes.saturating_sub(crate::defaults::BODY_ALLOWANCE))
            .unwrap_or(u32::MAX);
        match tokio::time::timeout(
            crate::defaults::ADMISSION_TIMEOUT,
            Arc::clone(limits.budget).acquire_many_owned(n),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(BodyError::Busy),
        }
    };
    let mut reservation = match limits.declared {
        Some(n) if n > crate::defaults::BODY_ALLOWANCE => Some(reserve(n).await?),
        _ => None,
    };
    let mut start = tokio::time::Instant::now();
    let mut buf = Vec::new();
    loop {
        let deadline = body_deadline(start, buf.len(), limits.timeout, limits.min_rate);
        let Ok(frame) = tokio::time::timeout_at(deadline, body.frame()).await else {
            return Err(BodyError::Timeout);
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|_| BodyError::Read)?;
        if let Ok(data) = frame.into_data() {
            let len = buf.len() + data.len();
            if len > limits.max {
                return Err(BodyError::TooLarge);
            }
            if len > crate::defaults::BODY_ALLOWANCE && reservation.is_none() {
                // A chunked body past the allowance: reserve the worst case,
                // without charging the wait to the body.
                let waiting = tokio::time::Instant::now();
                reservation = Some(reserve(limits.max).await?);
                start += waiting.elapsed();
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok((buf, reservation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_earns_time_only_with_the_bytes_that_arrive() {
        let start = tokio::time::Instant::now();
        let five = Duration::from_secs(5);
        // Nothing arrived: the allowance alone, whatever was declared.
        assert_eq!(body_deadline(start, 0, five, 16 * 1024), start + five);
        // 32 KiB at 16 KiB/s earned two seconds.
        assert_eq!(
            body_deadline(start, 32 * 1024, five, 16 * 1024),
            start + Duration::from_secs(7)
        );
        // A trickle of 1 byte a second earns almost nothing: cut near the allowance.
        let trickled = body_deadline(start, 60, five, 16 * 1024) - start;
        assert!(trickled < Duration::from_millis(5_010), "{trickled:?}");
        // The largest body's time is bounded.
        assert_eq!(
            body_deadline(start, 256 * 1024, five, 16 * 1024),
            start + Duration::from_secs(21)
        );
        // A zero rate is taken as 1 byte a second, never a division by zero.
        assert_eq!(
            body_deadline(start, 3, five, 0),
            start + Duration::from_secs(8)
        );
    }
}
