//! The sweep's time budget (`--budget`, default `profile::BUDGET`). Sizes double, so each takes about twice as
//! long as the one before: at the end of every size but the last, the next size's time is predicted from the
//! size just done (scaled by their byte ratio) and, when it would not end within the budget, the sweep stops
//! there, between sizes, so no pass is cut short (a partial re-read would hide the cliff). It stops the run
//! through the interrupt flag (`run::execute` starts no further phase) and says so in the result; the app then
//! treats the run as complete. It must not stop a sweep in the middle of a size.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::profile::Key;
use crate::results::PhaseResult;
use crate::units::{Bytes, format_duration};

/// The budget as it runs: when the sweep began and the current size began, and whether it stopped the sweep.
pub struct Budget {
    limit: Duration,
    started: Instant,
    size_started: Instant,
    /// Phases already judged (the last save may repeat a phase).
    judged: usize,
    stop: Arc<AtomicBool>,
    /// The last size measured and the next one, once the budget stopped the sweep there (the run's interrupt
    /// flag is set then too).
    stopped: Option<(Bytes, Bytes, Duration)>,
}

impl Budget {
    /// `stop`: the run's interrupt flag.
    pub fn new(limit: Duration, stop: Arc<AtomicBool>) -> Budget {
        let now = Instant::now();
        Budget { limit, started: now, size_started: now, judged: 0, stop, stopped: None }
    }

    /// After each save: at the end of a size, stops the sweep when the next would overrun the budget. Returns
    /// the sentence for the result once it has stopped it.
    pub fn after_save(&mut self, phases: &[PhaseResult], keys: &[Key]) -> Option<String> {
        let done = phases.len();
        if done > self.judged && self.stopped.is_none() {
            self.judged = done;
            if let (Some(key), Some(next)) = (keys.get(done - 1), keys.get(done))
                && next.size != key.size
            {
                let now = Instant::now();
                let (elapsed, this) = (now - self.started, now - self.size_started);
                self.size_started = now;
                if overruns(elapsed, this, key.size, next.size, self.limit) {
                    self.stopped = Some((key.size, next.size, elapsed));
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
        }
        let (last, next, elapsed) = self.stopped?;
        Some(format!(
            "the time budget of {} stopped the sweep after the files of {last} ({} so far; {next} would have run \
             past it): give a longer --budget, or --memory to bring the cliff within reach of smaller files",
            format_duration(self.limit),
            format_duration(elapsed)
        ))
    }
}

/// Whether the next size, predicted to take `this` × its bytes over the last size's, ends past the budget.
fn overruns(elapsed: Duration, this: Duration, size: Bytes, next: Bytes, limit: Duration) -> bool {
    let ratio = next.0 as f64 / size.0.max(1) as f64;
    elapsed.as_secs_f64() + this.as_secs_f64() * ratio > limit.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_size_is_predicted_from_the_last_by_its_bytes() {
        let s = Duration::from_secs;
        let limit = s(600);
        assert!(!overruns(s(100), s(50), Bytes::mib(64), Bytes::mib(128), limit), "100 + 100 s fits in 600 s");
        assert!(overruns(s(300), s(200), Bytes::mib(64), Bytes::mib(128), limit), "300 + 400 s does not");
        assert!(overruns(s(10), s(10), Bytes::mib(1), Bytes::gib(1), limit), "a far larger next size is predicted so");
    }
}
