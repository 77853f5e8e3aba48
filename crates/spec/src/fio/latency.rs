//! fio's latency profiling options: `latency_target` (µs when no unit is given; 0 turns the search off, as in
//! fio), `latency_window` (µs), `latency_percentile` (0–100, default 100) and `latency_run`, read into a
//! `LatencyTarget`. The search itself is the run's (`run::depth_search`).
//!
//! Unlike fio, a target without a window is refused: fio's window defaults to 0, which judges the depth after
//! every completion and so never holds a depth long enough to say anything about it.
//!
//! Must not: decide anything about the depth; the options without a target are ignored, as fio ignores them.

use super::job::fail;
use super::mapping::Job;
use super::options::Problems;
use crate::spec::LatencyTarget;

/// The job's latency target, `None` when it has none (or has problems, which are recorded). A bad
/// latency_percentile is a problem even without a target, as fio checks it when it reads it.
pub(super) fn latency_target(job: &Job, problems: &mut Problems) -> Option<LatencyTarget> {
    let o = &job.options;
    let percentile = match o.get("latency_percentile") {
        None => Some(100.0),
        Some(p) => {
            let value = parse_percentile(&p.raw);
            if value.is_none() {
                let why = format!("'{}' is not a percentage from 0 to 100 (for example 99.9)", p.raw.trim());
                problems.push(fail(p, "latency_percentile", why));
            }
            value
        }
    };
    let said = o.get("latency_target")?;
    let target = o.time("latency_target").filter(|t| !t.is_zero())?;
    let window = o.time("latency_window").filter(|w| !w.is_zero());
    if window.is_none() {
        let why = "needs latency_window, the time each queue depth is tried before it is judged (for example \
                   latency_window=5s); fio's default of 0 judges the depth after every completion";
        problems.push(fail(said, "latency_target", why));
    }
    let keep_adjusting = o.flag("latency_run");
    Some(LatencyTarget { target, window: window?, percentile: percentile?, keep_adjusting })
}

/// A percentage as fio's float option takes it (a `%` after it is allowed).
fn parse_percentile(raw: &str) -> Option<f64> {
    let text = raw.trim();
    let value: f64 = text.strip_suffix('%').unwrap_or(text).trim().parse().ok()?;
    (value.is_finite() && (0.0..=100.0).contains(&value)).then_some(value)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use crate::spec::LatencyTarget;
    use crate::spec::fio::parse_fio_job;

    fn targets(text: &str) -> Result<Vec<Option<LatencyTarget>>, String> {
        let spec = parse_fio_job(Path::new("j.fio"), text).map_err(|e| e.to_string())?;
        Ok(spec.phases.iter().map(|p| p.fio.info.as_ref().and_then(|f| f.latency_target)).collect())
    }

    #[test]
    fn target_and_window_in_microseconds_percentile_and_run() {
        let text = "[global]\nsize=1m\nrw=randread\niodepth=8\n[a]\nlatency_target=500000\nlatency_window=5000000\n\
                    latency_percentile=99.9\n[b]\nlatency_target=2ms\nlatency_window=1s\nlatency_run=1\n[c]\n";
        let got = targets(text).unwrap();
        let a = LatencyTarget {
            target: Duration::from_millis(500),
            window: Duration::from_secs(5),
            percentile: 99.9,
            keep_adjusting: false,
        };
        let b = LatencyTarget {
            target: Duration::from_millis(2),
            window: Duration::from_secs(1),
            percentile: 100.0,
            keep_adjusting: true,
        };
        assert_eq!(got, [Some(a), Some(b), None]);
    }

    #[test]
    fn a_zero_target_is_no_search_as_in_fio() {
        assert_eq!(targets("[a]\nsize=1m\nrw=read\nlatency_target=0\nlatency_window=1s\n").unwrap(), [None]);
    }

    #[test]
    fn bad_values_name_the_option_and_the_fix() {
        let err = targets("[a]\nsize=1m\nrw=read\nlatency_target=1ms\nlatency_percentile=120\n").unwrap_err();
        assert!(err.contains("line 4: option 'latency_target': needs latency_window"), "{err}");
        assert!(err.contains("line 5: option 'latency_percentile': '120' is not a percentage from 0 to 100"), "{err}");
        let err = targets("[a]\nsize=1m\nrw=read\nlatency_target=fast\nlatency_window=1s\n").unwrap_err();
        assert!(err.contains("option 'latency_target'"), "{err}");
        let err = targets("[a]\nsize=1m\nrw=read\nlatency_percentile=high\n").unwrap_err();
        assert!(err.contains("line 4: option 'latency_percentile': 'high' is not a percentage"), "{err}");
    }
}
