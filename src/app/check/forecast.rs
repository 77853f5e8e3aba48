//! How long a check is forecast to take (`Settings::forecast_parts` builds it): its phases of fixed length, then
//! its capacity searches' steps, and what each background load (`--during`) adds. Printed before the check starts
//! and checked against the time it really took.

use std::time::Duration;

use super::profile::FORMATS;
use crate::spec::Load;
use crate::streams::capacity::WALK_DOWN;
use crate::units::format_duration;

/// The write rate the forecast assumes for laying out the library (an SSD of today; this VM's disk wrote the 2 GiB
/// quick library in about 1.5 s; a spinning disk takes three to five times as long; the real rate is what it is).
pub(super) const ASSUMED_WRITE_BYTES_PER_SEC: f64 = 1e9;

/// What a check's time is made of (`Settings::forecast_parts`): the phases of fixed length, then the capacity
/// searches' steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forecast {
    /// The raw and small-file phases, writing the library, and the estimate's two phases.
    pub fixed: Duration,
    /// Steps of the three searches and their confirmations, as usually run, and the steps that pass beside
    /// background loads.
    pub steps: u32,
    /// A step's usual length, the formats' mean: one that passes at the edge lasts longer than `Settings::step`'s
    /// typical (its buffers fill with little to spare), one that fails ends at its first failure.
    pub step: Duration,
    /// Steps beside background loads that fail: a search beside a load that takes streams away starts at the
    /// format's edge alone and walks down (`WALK_DOWN`).
    pub failing: u32,
    /// A failing step's length: it ends at its first failure, about when the last viewer has arrived and its
    /// start-up limit has passed (the arrival window + the player's start-up target).
    pub failing_step: Duration,
}

impl Forecast {
    /// With background loads (`--during`): each runs every format's search again, from the format's edge alone
    /// and down, its edge run once. A load that reads takes the bandwidth the viewers leave (`Load::reads`), so
    /// the start fails and the search walks down as the search's own rule does (`WALK_DOWN`: four failing steps,
    /// one passing); a recording's few MB/s of writes cost less than the search's first step, so its start
    /// passes and ends the search: one step.
    pub fn beside(self, loads: &[Load]) -> Forecast {
        let formats = FORMATS.len() as u32;
        let costly = loads.iter().filter(|l| l.reads()).count() as u32;
        let cheap = loads.len() as u32 - costly;
        Forecast {
            steps: self.steps + formats * (costly * WALK_DOWN.passing + cheap),
            failing: self.failing + formats * costly * WALK_DOWN.failing,
            ..self
        }
    }

    pub fn total(&self) -> Duration {
        self.fixed + self.step * self.steps + self.failing_step * self.failing
    }

    /// The forecast in words, for the plan: "about 1 min 5 s: 20 s of fixed phases and the library, then about
    /// 7 search steps of 6.3 s", and beside loads the failing steps apart.
    pub fn words(&self) -> String {
        let failing = match self.failing {
            0 => String::new(),
            n => format!(
                ", and about {n} failing steps beside the background loads (their searches walk down from each \
                 format's capacity alone), of about {} each (a failing step ends at its first failure: arrival \
                 window + start-up limit)",
                format_duration(self.failing_step)
            ),
        };
        format!(
            "about {}: {} of raw, small-file and estimate phases and writing the library, then about {} capacity-search \
             steps of about {} each (arrival window + buffer fill + judged playback; a failing step ends sooner){failing}",
            format_duration(self.total()),
            format_duration(self.fixed),
            self.steps,
            format_duration(self.step)
        )
    }
}
