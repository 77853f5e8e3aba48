//! The live progress line on stderr: phase, elapsed and remaining time, current MB/s, IOPS and p99 latency.
//! Drawn only when stderr is a terminal (indicatif hides itself otherwise), so logs and pipes stay clean.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::phase::IntervalReport;
use crate::metrics::OpClass;
use crate::units::{Bytes, format_duration, format_latency_ns, format_mbps, format_rate};

pub struct ProgressLine {
    bar: ProgressBar,
    /// `--quiet`: only notices and problems are printed.
    quiet: bool,
    /// Prints no lines at all, notices neither (a rank of a multi-host run other than rank 0, which speaks for
    /// all).
    silent: bool,
    /// The phase's place among the phases ("[3/13]") before its name; off where the caller counts its own
    /// stages (a check), so the line shows one counter.
    counted: bool,
}

impl ProgressLine {
    /// `enabled` false (for `--quiet`) draws nothing at all.
    pub fn new(enabled: bool) -> ProgressLine {
        let target = if enabled { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(1000), target);
        bar.set_style(
            ProgressStyle::with_template("{prefix:.bold} [{bar:24}] {msg}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        ProgressLine { bar, quiet: !enabled, silent: false, counted: true }
    }

    /// Draws nothing and prints no line.
    pub fn silent() -> ProgressLine {
        ProgressLine { silent: true, ..ProgressLine::new(false) }
    }

    /// The line without the phase counter (see `counted`).
    pub fn uncounted(self) -> ProgressLine {
        ProgressLine { counted: false, ..self }
    }

    /// The prefix of a phase's line: "[3/13] name", or the name alone when uncounted.
    pub fn phase_prefix(&self, index: usize, phases: usize, name: &str) -> String {
        let name = crate::escape::for_terminal(name);
        if self.counted { format!("[{}/{phases}] {name}", index + 1) } else { name.into_owned() }
    }

    pub fn start_phase(&self, index: usize, phases: usize, name: &str) {
        self.bar.reset();
        self.bar.set_prefix(self.phase_prefix(index, phases, name));
        self.bar.set_message("starting");
    }

    pub fn prefill(&self, done: u64, total: u64) {
        self.bar.set_position(done * 1000 / total.max(1));
        self.bar.set_message(format!("filling data files: {} of {}", Bytes(done), Bytes(total)));
    }

    pub fn ramp(&self) {
        self.bar.set_message("warming up (not measured)");
    }

    /// Updates from an interval. `elapsed`: measured time so far; `fraction`: how far the phase is.
    pub fn interval(
        &self,
        report: &IntervalReport<'_>,
        elapsed: Duration,
        fraction: Option<f64>,
        remaining: Option<Duration>,
    ) {
        if let Some(f) = fraction {
            self.bar.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
        }
        let mut text = format_duration(elapsed);
        if let Some(left) = remaining.filter(|r| !r.is_zero()) {
            text.push_str(&format!(", {} left", format_duration(left)));
        }
        let seconds = report.length.as_secs_f64().max(1e-9);
        for class in [OpClass::Read, OpClass::Write] {
            let stats = report.recorder.stats(class);
            if stats.ops == 0 && stats.errors == 0 {
                continue;
            }
            text.push_str(&format!(
                " · {} {} MB/s {} IOPS p99 {}",
                class.name(),
                format_mbps(stats.bytes as f64 / seconds / 1e6),
                format_rate(stats.ops as f64 / seconds),
                format_latency_ns(stats.latency.percentile(99.0) as f64)
            ));
            if stats.errors > 0 {
                text.push_str(&format!(" ({} errors)", stats.errors));
            }
        }
        self.bar.set_message(text);
    }

    /// Prints a line of progress above the progress line (phase headers, stream steps, interval lines); nothing
    /// with `--quiet`.
    pub fn println(&self, text: &str) {
        if !self.quiet {
            self.notice(text);
        }
    }

    /// Prints a line the user must see even with `--quiet`: a notice or a problem.
    pub fn notice(&self, text: &str) {
        if self.silent {
            return;
        }
        // Notices and phase names come from job files: no control character reaches the terminal.
        self.bar.suspend(|| eprintln!("{}", crate::escape::for_terminal(text)));
    }

    /// Whether the line is drawn (stderr is a terminal and not --quiet).
    pub fn visible(&self) -> bool {
        !self.bar.is_hidden()
    }

    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 30): check showed two counters, its stages' "[1/5]" and the phases' "[3/13]".
    #[test]
    fn an_uncounted_line_names_the_phase_alone() {
        let counted = ProgressLine::new(false);
        assert_eq!(counted.phase_prefix(2, 13, "rand-read 4k qd1"), "[3/13] rand-read 4k qd1");
        let uncounted = ProgressLine::new(false).uncounted();
        assert_eq!(uncounted.phase_prefix(2, 13, "rand-read 4k qd1"), "rand-read 4k qd1");
    }
}
