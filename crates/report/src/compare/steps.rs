//! The per-step rows of a comparison of streams results (`streams --count`, or the steps of a `--max` search):
//! for every stream count any run measured, the streams that stalled, the start-up p99 and the MB/s served, side
//! by side. A step has no interval series, so its noise is the stream-to-stream variation inside the step:
//!
//! - streams stalled: each stream stalls or not, so the count varies like a binomial one, √(n·p·(1−p)) with p the
//!   step's stalled share;
//! - start-up p99: the standard deviation of the streams' start-up times (none under two starts);
//! - served MB/s: the standard deviation of the streams' own MB/s times √n, the spread of a sum of n streams
//!   (none when the result kept no per-stream figures: more than 256 streams).
//!
//! The verdict then follows the one rule of `compare`. Counts a run did not measure show as missing.

use super::rows::{Measured, Row, spread};
use crate::results::{RunResult, StreamsStep};
use crate::units::{format_latency_ns, format_mbps};

type StepFigure = (&'static str, bool, fn(&StreamsStep) -> Option<Measured>, fn(f64) -> String);

const STEP_FIGURES: [StepFigure; 3] = [
    ("streams stalled", false, stalled, |v| format!("{v:.0}")),
    ("start-up p99", false, startup, format_latency_ns),
    ("served MB/s", true, served, format_mbps),
];

fn stalled(s: &StreamsStep) -> Option<Measured> {
    let n = f64::from(s.count);
    let k = f64::from(s.streams_stalled);
    let p = if n > 0.0 { (k / n).clamp(0.0, 1.0) } else { 0.0 };
    Some(Measured { value: k, noise: Some((n * p * (1.0 - p)).sqrt()), at_least: false })
}

fn startup(s: &StreamsStep) -> Option<Measured> {
    let p99 = s.startup.at(99.0)?;
    let noise = (s.startup.samples >= 2).then_some(s.startup.stddev_ns);
    Some(Measured { value: p99 as f64, noise, at_least: false })
}

fn served(s: &StreamsStep) -> Option<Measured> {
    let each: Vec<f64> =
        s.per_stream.iter().filter(|_| s.duration_s > 0.0).map(|f| f.bytes as f64 / s.duration_s / 1e6).collect();
    let noise = spread(&each).map(|sd| sd * (each.len() as f64).sqrt());
    Some(Measured { value: s.delivered_mbps, noise, at_least: false })
}

/// The step of `count` in a run's streams result (the last, should a search have measured it twice).
fn step(result: &RunResult, count: u32) -> Option<&StreamsStep> {
    result.streams.as_ref()?.steps.iter().rev().find(|s| s.count == count)
}

/// Every count measured by any run, smallest first.
fn counts(results: &[&RunResult]) -> Vec<u32> {
    let mut counts: Vec<u32> =
        results.iter().flat_map(|r| r.streams.iter().flat_map(|s| s.steps.iter().map(|x| x.count))).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The rows of every step, when every run is a streams result.
pub fn step_rows(results: &[&RunResult], rows: &mut Vec<Row>) {
    if results.iter().any(|r| r.streams.is_none()) {
        return;
    }
    for count in counts(results) {
        for (figure, higher_is_better, measure, format) in STEP_FIGURES {
            let values = results.iter().map(|r| step(r, count).and_then(measure)).collect();
            rows.push(Row {
                group: format!("{count} streams"),
                figure: figure.into(),
                higher_is_better,
                values,
                format,
            });
        }
    }
}

/// Two fixed-count runs (no search) that share no count measured different workloads.
pub fn count_difference(base: &RunResult, other: &RunResult) -> Option<String> {
    let (a, b) = (base.streams.as_ref()?, other.streams.as_ref()?);
    if a.capacity.is_some()
        || b.capacity.is_some()
        || a.steps.iter().any(|s| b.steps.iter().any(|t| t.count == s.count))
    {
        return None;
    }
    let list = |steps: &[StreamsStep]| steps.iter().map(|s| s.count.to_string()).collect::<Vec<_>>().join(", ");
    Some(format!("the stream counts differ ({} in one, {} in the other)", list(&a.steps), list(&b.steps)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::Verdict;

    fn fixture() -> RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/streams-v1.json");
        crate::results::read_result(std::path::Path::new(path)).unwrap()
    }

    #[test]
    fn stalled_streams_vary_like_a_binomial_count() {
        let mut s = fixture().streams.unwrap().steps.remove(0);
        s.count = 16;
        s.streams_stalled = 4;
        let m = stalled(&s).unwrap();
        assert_eq!((m.value, m.noise), (4.0, Some(3.0_f64.sqrt())), "√(16 · ¼ · ¾)");
        s.streams_stalled = 0;
        assert_eq!(stalled(&s).unwrap().noise, Some(0.0));
    }

    #[test]
    fn served_noise_is_the_spread_of_a_sum_of_streams() {
        let s = fixture().streams.unwrap().steps.remove(0);
        let each: Vec<f64> = s.per_stream.iter().map(|f| f.bytes as f64 / s.duration_s / 1e6).collect();
        let m = served(&s).unwrap();
        assert_eq!(m.value, s.delivered_mbps);
        assert!((m.noise.unwrap() - spread(&each).unwrap() * (each.len() as f64).sqrt()).abs() < 1e-12);
        let mut bare = s.clone();
        bare.per_stream.clear();
        assert_eq!(served(&bare).unwrap().noise, None, "no per-stream figures, no estimate");
    }

    #[test]
    fn every_count_of_either_run_gets_its_rows() {
        let a = fixture();
        let mut b = fixture();
        let streams = b.streams.as_mut().unwrap();
        streams.steps.retain(|s| s.count != 6);
        // At 9 streams, run B stalled 5 of its 9 streams: well outside √(9·5/9·4/9) ≈ 1.5.
        streams.steps.iter_mut().find(|s| s.count == 9).unwrap().streams_stalled = 5;
        let mut rows = Vec::new();
        step_rows(&[&a, &b], &mut rows);
        let groups: Vec<&str> = rows.iter().step_by(3).map(|r| r.group.as_str()).collect();
        assert_eq!(groups, ["6 streams", "9 streams", "10 streams", "11 streams", "12 streams"]);
        assert_eq!(rows[0].verdict(1), Verdict::Missing, "B never ran 6 streams");
        assert!(matches!(rows[3].verdict(1), Verdict::Worse(_)), "{:?}", rows[3].verdict(1));
        assert_eq!(rows[6].verdict(1), Verdict::NoClearDifference, "the same step, the same figures");
    }

    #[test]
    fn fixed_counts_without_a_count_in_common_differ() {
        let mut a = fixture();
        let mut b = fixture();
        for (r, count) in [(&mut a, 10), (&mut b, 12)] {
            let s = r.streams.as_mut().unwrap();
            s.capacity = None;
            s.steps.retain(|x| x.count == count);
        }
        assert_eq!(count_difference(&a, &b).as_deref(), Some("the stream counts differ (10 in one, 12 in the other)"));
        assert_eq!(count_difference(&a, &a), None);
    }
}
