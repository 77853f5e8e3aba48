//! The rows of a comparison: each headline figure with its value and its noise in every run, and the verdict of
//! each run against the baseline (the rule is in `compare`'s header). Figures per matched phase: IOPS, MB/s, p50
//! and p99 latency of each operation class, and the rate of each file-system operation; the capacity answer of a
//! streams result and, per stream count, its step (`steps`); the streams sustained per format of a check.

use super::Run;
use crate::results::{CapacityAnswer, ClassPoint, IntervalPoint, OpResult, PhaseResult, RunResult};
use crate::units::{format_latency_ns, format_mbps, format_rate};

/// One figure of one run.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub value: f64,
    /// How much the figure moves by itself (same unit as `value`); `None`: no estimate.
    pub noise: Option<f64>,
    /// The value is a lower bound (a capacity search that reached its limit).
    pub at_least: bool,
}

/// One figure across the runs.
pub struct Row {
    /// The phase, or "streams", or the video format.
    pub group: String,
    /// "read IOPS", "read p99", "streams sustained".
    pub figure: String,
    pub higher_is_better: bool,
    /// One per run, in the comparison's order; `None` when a run lacks the figure.
    pub values: Vec<Option<Measured>>,
    /// Displays a value.
    pub format: fn(f64) -> String,
}

/// A run against the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Better by this many percent.
    Better(f64),
    Worse(f64),
    NoClearDifference,
    /// A run had too few intervals (or a single measurement) to say how much the figure moves by itself.
    NoNoiseEstimate,
    /// A run lacks the figure.
    Missing,
}

impl Row {
    /// `run`'s value over the baseline's.
    pub fn ratio(&self, run: usize) -> Option<f64> {
        let (a, b) = (self.values[0]?, self.values.get(run).copied()??);
        (a.value != 0.0).then(|| b.value / a.value)
    }

    pub fn verdict(&self, run: usize) -> Verdict {
        let (Some(a), Some(Some(b))) = (self.values[0], self.values.get(run).copied()) else { return Verdict::Missing };
        let diff = b.value - a.value;
        if diff == 0.0 {
            return Verdict::NoClearDifference;
        }
        let (Some(na), Some(nb)) = (a.noise, b.noise) else { return Verdict::NoNoiseEstimate };
        let band = na.max(nb);
        // A lower bound cannot be beaten by a larger value, nor a larger lower bound shown worse.
        let unknowable = (a.at_least && diff > 0.0) || (b.at_least && diff < 0.0);
        if diff.abs() <= band || unknowable {
            return Verdict::NoClearDifference;
        }
        let pct = if a.value != 0.0 { (diff / a.value).abs() * 100.0 } else { 100.0 };
        if (diff > 0.0) == self.higher_is_better { Verdict::Better(pct) } else { Verdict::Worse(pct) }
    }

    /// `run` against the baseline as hyperfine says it: the factor by which it is better or worse (the larger
    /// value over the smaller, ≥ 1), its uncertainty, and the word for the direction ("faster", "more"). The
    /// uncertainty is the verdict's own band (the larger of the two runs' variations) over the smaller value, so
    /// "f ± u" with f − u ≤ 1 is exactly "no clear difference" and the words never disagree with the verdict.
    pub fn factor(&self, run: usize) -> Option<(f64, Option<f64>, &'static str)> {
        let (a, b) = (self.values[0]?, self.values.get(run).copied()??);
        let (low, high) = (a.value.min(b.value), a.value.max(b.value));
        if low <= 0.0 {
            return None;
        }
        let better = (b.value > a.value) == self.higher_is_better;
        let band = a.noise.zip(b.noise).map(|(na, nb)| na.max(nb) / low);
        let word = match (self.figure.starts_with("streams"), better) {
            (true, true) => "more",
            (true, false) => "fewer",
            (false, true) => "faster",
            (false, false) => "slower",
        };
        Some((high / low, band, word))
    }

    /// The ratio column: `run`'s value over the baseline's, with ± the verdict's band over the baseline (a ratio
    /// within 1 ± it is no clear difference).
    pub fn ratio_words(&self, run: usize) -> String {
        let Some(ratio) = self.ratio(run) else { return "—".into() };
        let (a, b) = (self.values[0], self.values.get(run).copied().flatten());
        match a.zip(b).and_then(|(a, b)| Some(a.noise?.max(b.noise?) / a.value)) {
            Some(band) if band.is_finite() => format!("{ratio:.2} ± {band:.2}"),
            _ => format!("{ratio:.2}"),
        }
    }

    /// The verdict in words, for run `key` against the baseline `base`: "B 1.15 ± 0.03 times faster" (as
    /// hyperfine says it), "no clear difference", or which run lacks the figure.
    pub fn verdict_words(&self, run: usize, key: &str, base: &str) -> String {
        let factor = |f: f64, sigma: Option<f64>, word: &str| match sigma {
            Some(s) => format!("{key} {f:.2} ± {s:.2} times {word}"),
            None => format!("{key} {f:.2} times {word}"),
        };
        match (self.verdict(run), self.factor(run)) {
            (Verdict::Better(_) | Verdict::Worse(_), Some((f, sigma, word))) => factor(f, sigma, word),
            (Verdict::Better(p), None) => format!("{key} better by {p:.0} %"),
            (Verdict::Worse(p), None) => format!("{key} worse by {p:.0} %"),
            (Verdict::NoClearDifference, _) => "no clear difference".into(),
            (Verdict::NoNoiseEstimate, _) => "cannot judge (see below)".into(),
            (Verdict::Missing, _) if self.values[0].is_none() => format!("{base} lacks it"),
            (Verdict::Missing, _) => format!("{key} lacks it"),
        }
    }

    /// A value as shown: "≥ 40" for a lower bound, "—" when missing.
    pub fn shown(&self, run: usize) -> String {
        match self.values.get(run).copied().flatten() {
            Some(m) if m.at_least => format!("≥ {}", (self.format)(m.value)),
            Some(m) => (self.format)(m.value),
            None => "—".into(),
        }
    }
}

/// Sample standard deviation; `None` under two values.
pub fn spread(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

fn class<'a>(point: &'a IntervalPoint, op: &str) -> Option<&'a ClassPoint> {
    match op {
        "read" => point.read.as_ref(),
        "write" => point.write.as_ref(),
        _ => None,
    }
}

type OpFigure = (&'static str, bool, fn(&OpResult) -> f64, fn(&ClassPoint) -> f64, fn(f64) -> String);

const OP_FIGURES: [OpFigure; 4] = [
    ("IOPS", true, |o| o.iops, |c| c.iops, format_rate),
    ("MB/s", true, |o| o.mbps, |c| c.mbps, format_mbps),
    ("p50", false, |o| o.latency.at(50.0).unwrap_or(0) as f64, |c| c.lat_p50_ns as f64, format_latency_ns),
    ("p99", false, |o| o.latency.at(99.0).unwrap_or(0) as f64, |c| c.lat_p99_ns as f64, format_latency_ns),
];

fn op<'a>(phase: &'a PhaseResult, name: &str) -> Option<&'a OpResult> {
    match name {
        "read" => phase.read.as_ref(),
        "write" => phase.write.as_ref(),
        _ => phase.sync.as_ref(),
    }
    .filter(|o| o.ops > 0)
}

fn phase_rows(phases: &[&PhaseResult], rows: &mut Vec<Row>) {
    let base = phases[0];
    for name in ["read", "write", "sync"] {
        if op(base, name).is_none() {
            continue;
        }
        for (figure, higher, total, interval, format) in OP_FIGURES {
            let values = phases
                .iter()
                .map(|p| {
                    let o = op(p, name)?;
                    let series: Vec<f64> = p.intervals.iter().filter_map(|i| class(i, name)).map(interval).collect();
                    Some(Measured { value: total(o), noise: spread(&series), at_least: false })
                })
                .collect();
            rows.push(Row {
                group: base.name.clone(),
                figure: format!("{name} {figure}"),
                higher_is_better: higher,
                values,
                format,
            });
        }
    }
    let Some(files) = &base.file_ops else { return };
    for f in files.ops.iter().filter(|o| o.op != "read" && o.op != "write") {
        let values = phases
            .iter()
            .map(|p| {
                let o = p.file_ops.as_ref()?.ops.iter().find(|o| o.op == f.op)?;
                let series: Vec<f64> = p
                    .intervals
                    .iter()
                    .filter_map(|i| i.file_ops.iter().find(|x| x.op == f.op))
                    .map(|x| x.rate)
                    .collect();
                Some(Measured { value: o.rate, noise: spread(&series), at_least: false })
            })
            .collect();
        rows.push(Row {
            group: base.name.clone(),
            figure: format!("{} per s", f.op),
            higher_is_better: true,
            values,
            format: format_rate,
        });
    }
}

/// A capacity answer as a figure: its noise is the search's step, or the range of its runs of the edge when that
/// is wider.
fn capacity(answer: &CapacityAnswer) -> Measured {
    let spread = answer.range().map_or(0, |(low, high)| high - low);
    let step = answer.first_failing.map_or(1, |f| f.saturating_sub(answer.streams).max(1)).max(spread);
    // A search stopped by its limit or by Ctrl-C found only a lower bound.
    Measured {
        value: f64::from(answer.streams),
        noise: Some(f64::from(step)),
        at_least: answer.at_limit || answer.interrupted,
    }
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn stream_rows(runs: &[&RunResult], rows: &mut Vec<Row>) {
    // A check's streams result is its search: its formats' rows below say the same (issue 30: the 1080p row twice).
    if let Some(s) = runs[0].streams.as_ref().filter(|_| runs[0].check.is_none())
        && s.capacity.is_some()
    {
        let values = runs.iter().map(|r| r.streams.as_ref()?.capacity.as_ref().map(capacity)).collect();
        rows.push(Row {
            group: s.label.clone(),
            figure: "streams sustained".into(),
            higher_is_better: true,
            values,
            format: count,
        });
    }
    let Some(check) = &runs[0].check else { return };
    for v in &check.verdict {
        let values = runs
            .iter()
            .map(|r| {
                let w = r.check.as_ref()?.verdict.iter().find(|w| w.name == v.name)?;
                // A format a check did not measure has no figure: "—", not a capacity of 0.
                w.capacity.measured().then(|| capacity(&w.capacity))
            })
            .collect();
        rows.push(Row {
            group: v.label.clone(),
            figure: "streams sustained".into(),
            higher_is_better: true,
            values,
            format: count,
        });
    }
}

/// Every row of a comparison: capacity first (the answer people look for), then the phases. Checks are compared
/// in a short table (`compact`): the verdict's formats, then the one or two figures each measuring phase is there
/// for, without the search's steps and phases (the formats' rows are their answer).
pub fn rows(runs: &[Run]) -> Vec<Row> {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let compact = results.iter().all(|r| r.check.is_some());
    let mut out = Vec::new();
    stream_rows(&results, &mut out);
    if !compact {
        super::steps::step_rows(&results, &mut out);
    }
    for phase in &results[0].phases {
        if compact && (phase.streams.is_some() || phase.name.starts_with("estimate")) {
            continue;
        }
        let matched: Vec<&PhaseResult> = results
            .iter()
            .filter_map(|r| {
                r.phases.iter().find(|q| q.name == phase.name && super::phase_kind(q) == super::phase_kind(phase))
            })
            .collect();
        if matched.len() == results.len() {
            let start = out.len();
            phase_rows(&matched, &mut out);
            if compact {
                let keep = |figure: &str| match figure.split_once(' ') {
                    Some((_, "MB/s")) => !phase.rw.starts_with("rand") && phase.file_ops.is_none(),
                    Some((_, "IOPS" | "p99")) => phase.rw.starts_with("rand") || phase.file_ops.is_some(),
                    Some((_, "p50")) => false,
                    _ => true,
                };
                let mut added = out.split_off(start);
                added.retain(|row| keep(&row.figure));
                out.extend(added);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(a: f64, na: Option<f64>, b: f64, nb: Option<f64>, higher: bool) -> Row {
        let m = |value, noise| Some(Measured { value, noise, at_least: false });
        Row {
            group: "g".into(),
            figure: "f".into(),
            higher_is_better: higher,
            values: vec![m(a, na), m(b, nb)],
            format: count,
        }
    }

    #[test]
    fn a_difference_inside_the_noise_is_no_clear_difference() {
        assert_eq!(row(100.0, Some(5.0), 104.0, Some(2.0), true).verdict(1), Verdict::NoClearDifference);
        assert!(
            matches!(row(100.0, Some(5.0), 106.0, Some(2.0), true).verdict(1), Verdict::Better(p) if (p - 6.0).abs() < 1e-9)
        );
        // Lower is better for latency: a larger value is worse.
        assert!(
            matches!(row(100.0, Some(1.0), 120.0, Some(1.0), false).verdict(1), Verdict::Worse(p) if (p - 20.0).abs() < 1e-9)
        );
        assert_eq!(row(100.0, None, 200.0, Some(1.0), true).verdict(1), Verdict::NoNoiseEstimate);
    }

    /// hyperfine's "1.15 ± 0.03 times faster", with the verdict's own band as the ±, so the words and the
    /// verdict agree: a factor within its band is no clear difference.
    #[test]
    fn a_verdict_says_how_many_times_better_as_hyperfine_does() {
        let r = row(100.0, Some(1.0), 115.0, Some(3.0), true);
        assert_eq!(r.verdict_words(1, "B", "A"), "B 1.15 ± 0.03 times faster");
        assert_eq!(r.ratio_words(1), "1.15 ± 0.03");
        // Latency: lower is better, and the factor is the larger over the smaller.
        let r = row(200.0, Some(10.0), 100.0, Some(5.0), false);
        assert_eq!(r.verdict_words(1, "B", "A"), "B 2.00 ± 0.10 times faster");
        let r = row(100.0, Some(10.0), 200.0, Some(5.0), false);
        assert_eq!(r.verdict_words(1, "B", "A"), "B 2.00 ± 0.10 times slower");
        let r = row(100.0, Some(20.0), 115.0, Some(3.0), true);
        assert_eq!(
            (r.verdict_words(1, "B", "A").as_str(), r.ratio_words(1).as_str()),
            ("no clear difference", "1.15 ± 0.20")
        );
        let streams = Row { figure: "streams sustained".into(), ..row(100.0, Some(1.0), 80.0, Some(1.0), true) };
        assert_eq!(streams.verdict_words(1, "C", "A"), "C 1.25 ± 0.01 times fewer");
        assert_eq!(row(100.0, None, 200.0, Some(1.0), true).verdict_words(1, "B", "A"), "cannot judge (see below)");
    }

    /// Regression (issue 30): "B lacks it" where A lacked it.
    #[test]
    fn the_run_that_lacks_a_figure_is_the_one_named() {
        let m = Some(Measured { value: 5.0, noise: Some(1.0), at_least: false });
        let r = Row { values: vec![None, m], ..row(1.0, None, 1.0, None, true) };
        assert_eq!(r.verdict_words(1, "B", "A"), "A lacks it");
        let r = Row { values: vec![m, None], ..r };
        assert_eq!(r.verdict_words(1, "B", "A"), "B lacks it");
    }

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        assert_eq!(spread(&[1.0]), None);
        assert!((spread(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138).abs() < 1e-3);
    }

    #[test]
    fn a_search_at_its_limit_is_a_lower_bound() {
        let limit = CapacityAnswer {
            streams: 40,
            first_failing: None,
            failing_reason: None,
            at_limit: true,
            interrupted: false,
            words: String::new(),
            ..CapacityAnswer::default()
        };
        let found = CapacityAnswer {
            streams: 20,
            first_failing: Some(22),
            failing_reason: None,
            at_limit: false,
            interrupted: false,
            words: String::new(),
            ..CapacityAnswer::default()
        };
        let (a, b) = (capacity(&limit), capacity(&found));
        assert_eq!((a.noise, b.noise), (Some(1.0), Some(2.0)));
        let r = Row {
            group: "g".into(),
            figure: "f".into(),
            higher_is_better: true,
            values: vec![Some(b), Some(a)],
            format: count,
        };
        assert!(matches!(r.verdict(1), Verdict::Better(p) if (p - 100.0).abs() < 1e-9), "at least 40 against 20");
        assert_eq!(r.shown(1), "≥ 40");
        let r = Row { values: vec![Some(a), Some(b)], ..r };
        assert!(matches!(r.verdict(1), Verdict::Worse(_)));
    }
}
