//! An rd's time and rate keywords: `elapsed`, `interval`, `warmup`, `pause`, the rate (`iorate=` or `fwdrate=`:
//! max, curve or operations per second), `curve=` and `stopcurve=`, and how a rate becomes one phase or a curve's
//! phases (the maximum first, then one per point).

use std::time::Duration;

use super::super::values::{Item, Units, short_number};
use super::{DEFAULT_ELAPSED, fail, items, one_number};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::Record;
use crate::spec::{MAX_PERCENT_OF_MAX, ReadOptions};

/// vdbench's default curve points (percent of the maximum).
const DEFAULT_CURVE: [f64; 6] = [10.0, 50.0, 70.0, 80.0, 90.0, 100.0];

/// Run length of an rd, after the command line's overrides.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    pub runtime: Duration,
    pub ramp: Duration,
    pub interval: Duration,
    /// Sleep this long after each run of the rd (vdbench `pause=`).
    pub pause: Option<Duration>,
}

fn duration(rec: &Record, canonical: &str, over: Option<Duration>, default: Duration) -> Result<Duration, VdbError> {
    if let Some(d) = over {
        return Ok(d);
    }
    Ok(seconds(rec, canonical, Units::Time, 1.0, "a time such as 60, 90s, 10m or 2h")?.unwrap_or(default))
}

/// A time in seconds (`scale` 1e-3 for milliseconds), refused with the value when no Duration holds it: a float
/// past about 584 billion years, or below zero, would panic in `Duration::from_secs_f64`.
fn seconds(
    rec: &Record,
    canonical: &str,
    units: Units,
    scale: f64,
    expected: &str,
) -> Result<Option<Duration>, VdbError> {
    let Some(value) = one_number(rec, canonical, units, expected)? else { return Ok(None) };
    Duration::try_from_secs_f64(value * scale).map(Some).map_err(|_| {
        let p = rec.get(canonical).expect("just read");
        fail(rec, p, format!("'{}' is out of range: expected {expected}", p.value))
    })
}

pub(super) fn timing(rd: &Record, options: &ReadOptions) -> Result<Timing, VdbError> {
    let elapsed = duration(rd, "elapsed", options.elapsed, DEFAULT_ELAPSED)?;
    // vdbench's default interval is half the elapsed time in whole seconds, at most a minute (RD_entry; the user
    // guide: "Default 'min(elapsed/2,60)'"); at least a second here, so that a too short elapsed is refused as
    // such rather than for a zero interval.
    let half = Duration::from_secs((elapsed.as_secs() / 2).clamp(1, 60));
    let interval = duration(rd, "interval", options.interval, half)?;
    let warmup = duration(rd, "warmup", options.warmup, Duration::ZERO)?;
    let pause = duration(rd, "pause", None, Duration::ZERO)?;
    // vdbench's Reporter counts whole intervals: `elapsed / interval` of them are measured, and the warm-up is
    // `warmup / interval` intervals (at least one) run *before* them. Without `warmup=` the first of the elapsed
    // intervals is the warm-up instead, so one fewer is measured and elapsed is the whole run. vdbench refuses
    // fewer than two elapsed intervals either way (RD_entry), and times that are not whole intervals, which
    // streamcap rounds down instead.
    let (elapsed_intervals, warmup_intervals) = match whole_intervals(elapsed, interval) {
        Some(n) if n >= 2 && warmup.is_zero() => (n - 1, 1),
        Some(n) if n >= 2 => (n, whole_intervals(warmup, interval).expect("the interval is above zero").max(1)),
        _ => return Err(VdbError::at(&rd.at, format!("{}: {}", rd.label(), too_short(elapsed, interval)))),
    };
    // At most the elapsed or warmup time itself, so it fits in a Duration.
    let times = |n: u128| {
        let nanos = interval.as_nanos() * n;
        Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32)
    };
    Ok(Timing {
        runtime: times(elapsed_intervals),
        ramp: times(warmup_intervals),
        interval,
        pause: (!pause.is_zero()).then_some(pause),
    })
}

/// How many whole intervals `span` holds; `None` for a zero interval.
fn whole_intervals(span: Duration, interval: Duration) -> Option<u128> {
    span.as_nanos().checked_div(interval.as_nanos())
}

/// Why an rd's times are refused.
fn too_short(elapsed: Duration, interval: Duration) -> String {
    if interval.is_zero() {
        return "interval must be above zero".to_string();
    }
    format!(
        "elapsed ({}s) must be at least twice the interval ({}s), as vdbench requires: without warmup= it leaves \
         the first interval out as warm-up",
        elapsed.as_secs_f64(),
        interval.as_secs_f64()
    )
}

/// A rate: `max`, `curve` or operations per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Rate {
    Max,
    Curve,
    PerSecond(f64),
}

pub(super) fn rate_of(item: &Item) -> Option<Rate> {
    match item {
        Item::Word(w) if w.eq_ignore_ascii_case("max") => Some(Rate::Max),
        Item::Word(w) if w.eq_ignore_ascii_case("curve") => Some(Rate::Curve),
        Item::Num(v) if *v > 0.0 => Some(Rate::PerSecond(*v)),
        _ => None,
    }
}

/// The rd's rate keyword (`iorate` or `fwdrate`) as a single value, or `None` when a loop carries it.
pub(super) fn rd_rate(rd: &Record, canonical: &str) -> Result<Option<Rate>, VdbError> {
    let Some((items, p)) = items(rd, canonical, Units::Size)? else {
        let example = if canonical == "iorate" { "iorate=max" } else { "fwdrate=max" };
        return Err(VdbError::at(&rd.at, format!("{}: {canonical}= is missing; add {example}", rd.label())));
    };
    if items.len() > 1 {
        return Ok(None);
    }
    rate_of(&items[0])
        .map(Some)
        .ok_or_else(|| fail(rd, p, "expected max, curve or operations per second (e.g. 500)".into()))
}

/// The curve's points and its stopcurve response time.
pub(super) fn curve(rd: &Record) -> Result<(Vec<f64>, Option<Duration>), VdbError> {
    let points = match items(rd, "curve", Units::Size)? {
        None => DEFAULT_CURVE.to_vec(),
        Some((points, p)) => points
            .iter()
            .map(|i| match i {
                // vdbench takes points above 100 (more than the maximum: the run goes as fast as it can).
                Item::Num(v) if *v > 0.0 && *v <= MAX_PERCENT_OF_MAX => Ok(*v),
                _ => Err(fail(
                    rd,
                    p,
                    format!(
                        "expected percentages of the maximum rate up to {MAX_PERCENT_OF_MAX}, as in curve=(10,50,90)"
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    let stop = seconds(rd, "stopcurve", Units::Size, 1e-3, "a response time in milliseconds (e.g. 5.0)")?;
    Ok((points, stop))
}

/// What one phase of a rate gets: its name, and the rate (`None` for a curve point) or the curve percent.
pub(super) struct RatedPhase {
    pub name: String,
    pub rate: Option<Rate>,
    pub percent: Option<f64>,
    /// A curve point: its stopcurve limit.
    pub stop: Option<Duration>,
}

/// One phase, or a curve's phases: the maximum first, then one per point.
pub(super) fn rated(
    name: String,
    rate: Rate,
    (points, stop): &(Vec<f64>, Option<Duration>),
    label: &str,
) -> Vec<RatedPhase> {
    match rate {
        Rate::Curve => {
            let max =
                RatedPhase { name: format!("{name} {label}=max"), rate: Some(Rate::Max), percent: None, stop: None };
            let points = points.iter().map(|&pct| RatedPhase {
                name: format!("{name} {label}={}%", short_number(pct)),
                rate: None,
                percent: Some(pct),
                stop: *stop,
            });
            std::iter::once(max).chain(points).collect()
        }
        other => vec![RatedPhase { name, rate: Some(other), percent: None, stop: None }],
    }
}
