//! How long a check is forecast to take (`Settings::forecast_parts` builds it): its phases of fixed length, then
//! its capacity searches' steps, each format's at its own length, and what each background load (`--during`)
//! adds. Printed before the check starts, and again as each format's search starts (`Forecast::once_search_starts`:
//! the time gone and the searches left), and checked against the time it really took.
//!
//! Why each format's steps apart: a step near the edge lasts as long as its viewers take to fill their buffers
//! with little bandwidth to spare, and that is the media they gain divided by the spare share: one chunk of 1080p
//! is a second of media and takes about 9 s at 90 % of the bandwidth, a chunk of a remux a tenth of that. In the
//! matrix of 2026-11-29 (docs/validation.md) a quick check's 1080p steps that passed took 11.6–18.8 s (mean 15.6),
//! its HEVC steps 7.1–9.9, its remux steps 5.3–7.6; a step that failed near the edge took as long as its fill
//! (1080p 17.6 s on btrfs raid1, 16.3–16.9 s on this VM's disk), one far above it ended at its start-up limit
//! (1080p 5–6 s, remux 3–4 s). A forecast of one mean step ran 47 s on this VM's disk where the check took 98 s:
//! four 1080p steps of 16 s.

use std::time::Duration;

use super::profile::{FORMATS, PREBUFFER, Settings, format};
use crate::app::cache::profile as cache;
use crate::spec::{Format, Load};
use crate::streams::capacity::WALK_DOWN;
use crate::units::format_duration;

/// The write rate the forecast assumes for laying out the library (an SSD of today; this VM's disk wrote the 2 GiB
/// quick library in about 1.5 s; a spinning disk takes three to five times as long; the real rate is what it is).
const ASSUMED_WRITE_BYTES_PER_SEC: f64 = 1e9;

/// The share of the bandwidth a step near the edge runs at, for the forecast: the searches end within about a
/// tenth of the bound, where a buffer gains media at L ÷ (1 − L) of the rate it plays. It fits the matrix's step
/// lengths (module documentation); `Settings::steady_within` bounds the fill at 93 % instead, the worst a
/// passing step may meet.
const EDGE_LOAD: f64 = 0.9;

impl Settings {
    /// The forecast's parts: the fixed phases, then each format's search as `search_steps` steps of
    /// `forecast_step`'s length.
    pub fn forecast_parts(&self) -> Forecast {
        let raw = (self.raw_runtime + self.raw_ramp) * 4 + self.raw_runtime + cache::RAMP + Duration::from_secs(2);
        let files = self.files_runtime * 3;
        let library = Duration::from_secs_f64(self.library.0 as f64 / ASSUMED_WRITE_BYTES_PER_SEC);
        let fixed = raw + files + library + self.estimate_time * 2;
        let counts = self.search_steps();
        let searches: [Duration; 3] = std::array::from_fn(|i| self.forecast_step(&format(FORMATS[i])) * counts[i]);
        let steps = counts.iter().sum();
        let step = searches.iter().sum::<Duration>() / steps;
        let failing_step = self.arrival + self.player.startup_target();
        let hd_step = searches[0] / counts[0];
        Forecast { fixed, steps, step, searches, hd_step, failing: 0, failing_step }
    }

    /// Steps each format's search runs, in `FORMATS`' order. With confirmations (the default, `--thorough`):
    /// about seven each (the first search three, a later one two, then two a round of confirmations and now and
    /// then a search around an edge that moved; 22–25 in all in the matrix's default checks). Without (`--quick`):
    /// the first format searched (the remux, `FORMATS`' last) three, 2–6 in the matrix, and the later two each (a
    /// scaled count and a probe above it or a step below it; 1–4).
    pub fn search_steps(&self) -> [u32; 3] {
        match self.confirmations {
            0 => [2, 2, 3],
            n => [(7 + 7 * n) / 3; 3],
        }
    }

    /// How long a step of `format` is forecast to last near the edge, as the chosen player plays: the mean of one
    /// that passes (the arrival window, the player's start threshold beyond the generic prebuffer, the media it
    /// gains to be steady fetched at `EDGE_LOAD`, the judged playback) and one that fails (the arrival window and
    /// the later of the start-up limit and that fill).
    pub fn forecast_step(&self, format: &Format) -> Duration {
        let (start, fill) = self.start_and_fill(format, EDGE_LOAD);
        let fill = fill.min(self.steady_within(format).saturating_sub(start));
        let passing = (self.arrival + self.player.start() + fill + self.judged).saturating_sub(PREBUFFER);
        let failing = self.arrival + self.player.startup_target().max(fill);
        (passing + failing) / 2
    }
}

/// What a check's time is made of (`Settings::forecast_parts`): the phases of fixed length, then the capacity
/// searches' steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forecast {
    /// The raw and small-file phases, writing the library, and the estimate's two phases.
    pub fixed: Duration,
    /// Steps of the three searches and their confirmations, as usually run, and the steps that pass beside
    /// background loads.
    pub steps: u32,
    /// A step's usual length: the searches' time over their steps (`Settings::forecast_step` says how long each
    /// format's step is).
    pub step: Duration,
    /// Each format's search alone (its steps at its own length), in `FORMATS`' order; `steps` × `step` is their
    /// sum before `beside`.
    pub searches: [Duration; 3],
    /// A 1080p step's length, the longest (its viewers gain a second of media in each chunk).
    pub hd_step: Duration,
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

    /// The forecast as the `k`-th format's search starts (searches run in `FORMATS`' reverse order, the remux
    /// first), `elapsed` after the check began: the time gone, the searches left and the steps beside loads. The
    /// searches before it took as many steps as the storage needed, not the forecast's.
    pub fn once_search_starts(&self, k: usize, elapsed: Duration) -> Duration {
        let left: Duration = self.searches.iter().rev().skip(k).sum();
        let all: Duration = self.searches.iter().sum();
        elapsed + left + self.total().saturating_sub(self.fixed + all)
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
             steps of about {} each (1080p's about {}: arrival window + buffer fill + judged playback; a failing \
             step ends sooner){failing}",
            format_duration(self.total()),
            format_duration(self.fixed),
            self.steps,
            format_duration(self.step),
            format_duration(self.hd_step),
        )
    }
}
