//! Waiting for a due time, the one way every worker does it.
//!
//! A sleep wakes tens of microseconds late even with a 1 ns timer slack, and that delay would count as lateness
//! that is streamcap's, not the device's; so the last stretch before a due time is spun. Sleeps are cut into
//! steps of at most [`MAX_SLEEP`] so that Ctrl-C is noticed promptly even at very low rates. Nothing here runs
//! per I/O unless the work is paced.

use std::time::{Duration, Instant};

/// The last stretch before a due time is spun rather than slept: at most this much CPU per paced operation.
pub const SPIN_BEFORE_DUE: Duration = Duration::from_micros(20);

/// The longest single sleep, so that a stop request is seen within this.
pub const MAX_SLEEP: Duration = Duration::from_millis(100);

/// Sleeps one step (at most [`MAX_SLEEP`]) towards `wake`, or spins the last [`SPIN_BEFORE_DUE`] to it. The
/// caller loops, checking its stop flags between steps.
pub fn wait_until(wake: Instant, now: Instant) {
    let left = wake.saturating_duration_since(now);
    if left > SPIN_BEFORE_DUE {
        std::thread::sleep((left - SPIN_BEFORE_DUE).min(MAX_SLEEP));
    } else {
        while Instant::now() < wake {
            std::hint::spin_loop();
        }
    }
}

/// Timed waits of this thread (due times, interval boundaries) wake within 1 ns of their deadline instead of
/// the default 50 µs slack, which would otherwise be measured as the device's lateness.
pub fn fine_timer_slack() {
    // Best effort: without it waits are merely coarser.
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}
