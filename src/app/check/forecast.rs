//! How long a check is forecast to take (`Settings::forecast_parts` builds it): its phases of fixed length, then
//! its capacity searches' steps, and what each background load (`--during`) adds. Printed before the check starts
//! and checked against the time it really took.

use std::time::Duration;

use super::profile::FORMATS;
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
    /// Steps of the three searches and their confirmations, as usually run.
    pub steps: u32,
    /// A step's usual length, the formats' mean: one that passes at the edge lasts longer than `Settings::step`'s
    /// typical (its buffers fill with little to spare), one that fails ends at its first failure.
    pub step: Duration,
}

impl Forecast {
    /// With `loads` background loads (`--during`): each runs every format's search again, from the format's edge
    /// alone and down, its edge run once: about two steps a format (one when the load costs nothing, a few when
    /// it costs much).
    pub fn beside(self, loads: usize) -> Forecast {
        Forecast { steps: self.steps + 2 * FORMATS.len() as u32 * loads as u32, ..self }
    }

    pub fn total(&self) -> Duration {
        self.fixed + self.step * self.steps
    }

    /// The forecast in words, for the plan: "about 1 min 5 s: 20 s of fixed phases and the library, then about
    /// 7 search steps of 6.3 s".
    pub fn words(&self) -> String {
        format!(
            "about {}: {} of raw, small-file and estimate phases and writing the library, then about {} capacity-search \
             steps of about {} each (arrival window + buffer fill + judged playback; a failing step ends sooner)",
            format_duration(self.total()),
            format_duration(self.fixed),
            self.steps,
            format_duration(self.step)
        )
    }
}
