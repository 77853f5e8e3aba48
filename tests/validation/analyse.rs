//! One check of a bench, judged: for each format the capacity against the physical bound of the steps that
//! measured it, and every step that counts checked for bytes delivered against bytes the devices (or the link)
//! moved.
//!
//! The bound of a format is what the layout of the steps that ran its capacity could carry (where no step ran
//! it, the lowest failing count's above it; every step's when the watcher caught no window of those), from what
//! the throttle charged each member in their windows: the busiest member's share of those steps' reads. Not over
//! every step of the search: on btrfs the members a step reads depend on where its viewers' titles lie and on
//! its threads' pid parity, and steps that loaded different members, added up, give shares that no one step had
//! (before viewers' titles were spread over the library, a sync check's remux steps loaded one pair of members
//! each, and their sum a bound of 15.1 remux where each step's own was 7.3–12.9). Each step's own bound is also
//! given, as a range. Over sshfs the bound is the link's (raw.rs).

use serde_json::Value;

use crate::bench::{Bench, Layout};
use crate::bound::{Bound, MemberReads, agree, passes, pool_bound};
use crate::check_run::{CheckRun, Engine, Profile};
use crate::raw::{Raw, member_reads};
use crate::startup::StartUp;

/// The formats of the verdict and their bitrates.
pub const FORMATS: [(&str, f64); 3] = [("1080p", 8e6), ("2160p-hevc", 25e6), ("2160p-remux", 80e6)];

/// Targets known to fall short of their storage's bound, why (docs/validation.md, "Findings"), and the least
/// share of the bound they are still held to, so that a regression below it fails. Their cells read "short" in
/// the table, never "pass".
pub fn known_shortfall(layout: Layout) -> Option<(&'static str, f64)> {
    match layout {
        Layout::Raid1 | Layout::Raid10 => Some((
            "btrfs puts each data chunk on two of the four members and a check's library where free space was \
             (80–87 % on one pair in a fresh pool's first check, about half in later ones), and a step's viewers \
             fall on the members by their titles' chunks and their threads' pid parity: a few viewers of a high \
             bitrate seldom spread evenly, and a step fails when one member gets more whole viewers than it \
             carries (the bound is the layout of the capacity's own steps, in whole viewers per member)",
            0.5,
        )),
        Layout::Ext4 | Layout::Sshfs => None,
    }
}

/// Steps read less than this (in a window) are too short to show a member's share.
const MIN_WINDOW_BYTES: u64 = 8 << 20;

/// Bytes delivered against bytes the devices beneath read, over the steps that count.
#[derive(Debug, Clone, Default)]
pub struct BytesCheck {
    /// Steps that count: passed, and not marked cache-served.
    pub counted: usize,
    /// The lowest and highest device ÷ viewer ratio among them.
    pub low: f64,
    pub high: f64,
    /// Steps that count whose ratio is more than 5 % from 1, in words.
    pub off: Vec<String>,
    /// Steps streamcap marked cache-served (they do not count).
    pub cache_served: usize,
    /// Figures estimated (no per-step byte counts in the result: delivered MB/s × duration).
    pub estimated: bool,
    /// On loop devices, the same ratio from the throttle's own byte counts over each step's window (a check
    /// of streamcap's per-step device figures that does not go through /proc/diskstats): lowest and highest.
    pub throttle: Option<(f64, f64)>,
}

/// One format of one check.
#[derive(Debug, Clone)]
pub struct FormatCell {
    pub format: &'static str,
    pub measured: f64,
    pub low: f64,
    pub high: f64,
    pub plan_for: f64,
    pub limited_by: String,
    /// The bound's arithmetic in words: the device's or the link's, and the start-up's.
    pub bound_words: String,
    /// The storage's bound in streams: the lower of the steady bound (the device's rate ÷ the bitrate) and the
    /// start-up bound (startup.rs); and the lowest and highest of the steps' own steady bounds.
    pub bound_streams: f64,
    pub step_bounds: Option<(f64, f64)>,
    /// The low end of the bound, where it has one: on a pool the bound in whole viewers per member
    /// (`Bound::whole_streams`: a member carries 3 remux viewers steadily, 3.93 by its bytes, and a step's judged
    /// seconds cannot tell a deficit of under a viewer, 40 of 39.32 MB/s, from none, so a count anywhere from 10 %
    /// below it to 10 % above the bytes' bound passes); or the sync engine's start-up with few threads (startup.rs).
    pub engine_bound: Option<f64>,
    /// Which limit set the bound, in words.
    pub bound_set_by: String,
    pub pass: bool,
    /// Outside the bound but a known shortfall (`known_shortfall`) above its floor: why.
    pub short: Option<&'static str>,
    pub bytes: BytesCheck,
}

/// One check.
#[derive(Debug, Clone)]
pub struct CheckCell {
    pub layout: &'static str,
    pub engine: Engine,
    pub profile: Profile,
    pub run: u32,
    pub elapsed_s: f64,
    pub formats: Vec<FormatCell>,
    /// The bound follows where this check's library lay (a btrfs pool: which members hold the chunks its titles
    /// were written to), so checks of one target are compared by their shares of their own bounds too.
    pub placed: bool,
}

fn number(value: &Value) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

/// Bytes the viewers received in a step, and whether that is estimated.
fn viewer_bytes(step: &Value) -> (f64, bool) {
    match step["read_bytes"].as_f64() {
        Some(bytes) if bytes > 0.0 => (bytes, false),
        _ => (number(&step["delivered_mbps"]) * number(&step["duration_s"]) * 1e6, true),
    }
}

/// Bytes the devices beneath read in a step, as streamcap recorded them: its own figure, or the layer that read
/// the most (a loop device's backing disk left out).
fn device_bytes(step: &Value) -> Option<f64> {
    if let Some(bytes) = step["device_read_bytes"].as_f64() {
        return Some(bytes);
    }
    let mut by_role: Vec<(String, f64)> = Vec::new();
    for d in step["devices"].as_array()?.iter().filter(|d| d["role"] != "loop backing store") {
        let role = d["role"].as_str().unwrap_or("").to_string();
        let bytes = number(&d["activity"]["read_bytes"]);
        match by_role.iter_mut().find(|(r, _)| *r == role) {
            Some((_, b)) => *b += bytes,
            None => by_role.push((role, bytes)),
        }
    }
    by_role.into_iter().map(|(_, b)| b).reduce(f64::max)
}

/// Judges one finished check.
pub fn judge(bench: &Bench, run: &CheckRun, engine: Engine, profile: Profile, n: u32, link: Option<&Raw>) -> CheckCell {
    let verdict = run.result["check"]["verdict"].as_array().cloned().unwrap_or_default();
    let phases = run.result["phases"].as_array().cloned().unwrap_or_default();
    let mut formats = Vec::new();
    for (name, bitrate) in FORMATS {
        let Some(v) = verdict.iter().find(|v| v["name"] == name) else { continue };
        let phase = phases
            .iter()
            .position(|p| p["name"].as_str() == Some(&format!("streams {}", v["label"].as_str().unwrap_or(""))));
        formats.push(format_cell(bench, run, (name, v), phase.map(|i| &phases[i]), bitrate, link));
    }
    let elapsed_s = run.elapsed.as_secs_f64();
    let placed = matches!(bench.layout, Layout::Raid1 | Layout::Raid10);
    CheckCell { layout: bench.layout.name(), engine, profile, run: n, elapsed_s, formats, placed }
}

fn format_cell(
    bench: &Bench,
    run: &CheckRun,
    (format, v): (&'static str, &Value),
    phase: Option<&Value>,
    bitrate: f64,
    link: Option<&Raw>,
) -> FormatCell {
    let capacity = &v["capacity"];
    let empty = Vec::new();
    let steps = phase.and_then(|p| p["streams"]["steps"].as_array()).unwrap_or(&empty);
    let label = phase.and_then(|p| p["streams"]["label"].as_str());
    let windows: Vec<_> = run.windows.iter().filter(|w| Some(w.label.as_str()) == label).collect();
    let (bound, step_bounds) = match link {
        Some(link) => (Some(link.bound.clone()), None),
        None => {
            let edge = edge_steps(steps, number(&v["streams"]));
            let at_edge: Vec<_> = windows.iter().copied().filter(|w| edge.contains(&w.step)).collect();
            let (bound, _) = local_bound(bench, if at_edge.is_empty() { &windows } else { &at_edge }, bitrate);
            (bound, local_bound(bench, &windows, bitrate).1)
        }
    };
    let startup = phase.and_then(|p| StartUp::of(p, bitrate));
    let part = viewer_part(bench.layout);
    let (bound_streams, engine_bound, bound_set_by) = bounds(bound.as_ref(), startup, bitrate, part);
    let bound_words = match (&bound, startup) {
        (Some(b), Some(s)) => format!("{}; {}", b.words, s.words(b.bytes_per_s)),
        (Some(b), None) => b.words.clone(),
        (None, _) => "no reads seen".into(),
    };
    let measured = number(&v["streams"]);
    let not_measured = capacity["not_measured"].is_string();
    let pass = !not_measured && passes(measured, engine_bound.unwrap_or(bound_streams), bound_streams);
    let mut bytes = BytesCheck { low: f64::INFINITY, high: 0.0, ..BytesCheck::default() };
    for (i, step) in steps.iter().enumerate() {
        let window = windows.iter().find(|w| w.step == i);
        // Over sshfs: the file data in what the link received over the step's window.
        let link_bytes = match (link.and_then(|l| l.efficiency), window) {
            (Some(efficiency), Some(w)) => Some(w.counters[0] as f64 * efficiency),
            _ => None,
        };
        if check_step(step, i, link_bytes, &mut bytes)
            && let Some(w) = window.filter(|_| link.is_none())
        {
            // The throttle's bytes: every other counter is a member's bytes.
            let throttled: u64 = w.counters.iter().skip(1).step_by(2).sum();
            let ratio = throttled as f64 / viewer_bytes(step).0;
            let (lo, hi) = bytes.throttle.unwrap_or((f64::INFINITY, 0.0));
            bytes.throttle = Some((lo.min(ratio), hi.max(ratio)));
        }
    }
    FormatCell {
        format,
        measured,
        low: number(&capacity["low"]),
        high: number(&capacity["high"]),
        plan_for: number(&capacity["plan_for"]),
        limited_by: v["limited_by"].as_str().unwrap_or("").to_string(),
        pass,
        short: known_shortfall(bench.layout)
            .filter(|(_, floor)| !pass && !not_measured && measured >= floor * bound_streams)
            .filter(|_| measured <= 1.1 * bound_streams)
            .map(|(why, _)| why),
        bound_words,
        bound_streams,
        step_bounds,
        engine_bound,
        bound_set_by,
        bytes,
    }
}

/// The storage's bound in streams (the lower of the steady and the start-up bound), its low end if any (whole
/// viewers per member on a pool, the sync engine's start-up), and which set the bound.
fn bounds(
    bound: Option<&Bound>,
    startup: Option<StartUp>,
    bitrate: f64,
    part: Option<f64>,
) -> (f64, Option<f64>, String) {
    let Some(bound) = bound else { return (f64::NAN, None, "—".into()) };
    let steady = bound.streams(bitrate);
    let whole = part.map(|p| bound.whole_streams(bitrate, p)).filter(|w| *w < steady - 0.05);
    let binding = match whole {
        Some(w) => format!("{}; in whole viewers per member {w:.1}", bound.binding),
        None => bound.binding.clone(),
    };
    let Some(startup) = startup else { return (steady, whole, binding) };
    let at_start = startup.storage_bound(bound.bytes_per_s);
    let engine = match (startup.engine_bound(bound.bytes_per_s), whole) {
        (Some(e), Some(w)) => Some(e.min(w)),
        (e, w) => e.or(w),
    };
    let mut set_by = if at_start < steady {
        format!(
            "start-up ({:.0} × {:.2} MB in {:.0} s) at {}",
            startup.chunks,
            startup.prebuffer_bytes / 1e6 / startup.chunks,
            startup.max_startup_s,
            bound.binding
        )
    } else {
        binding
    };
    if let Some(engine) = startup.engine_bound(bound.bytes_per_s) {
        set_by += &format!("; sync: {:.0} threads × 1 read start {engine:.0}", startup.threads);
    }
    (steady.min(at_start), engine, set_by)
}

/// The part of a viewer's bytes one member serves, where a viewer's reads land on members whole (btrfs: its
/// title's chunk and its thread's pid pick them): raid1 all, raid10 half (one member of each stripe half).
fn viewer_part(layout: Layout) -> Option<f64> {
    match layout {
        Layout::Raid1 => Some(1.0),
        Layout::Raid10 => Some(0.5),
        Layout::Ext4 | Layout::Sshfs => None,
    }
}

/// The steps whose layout the capacity `measured` is judged against: those that ran that count (at a step that
/// passed every viewer got its bitrate, so the members' shares of its reads are the shares of the demand, where
/// a failing step's busiest member, saturated, shows less than its viewers asked); where none ran it, those of
/// the lowest failing count above it.
fn edge_steps(steps: &[Value], measured: f64) -> Vec<usize> {
    let count = |s: &Value| number(&s["count"]);
    let at: Vec<usize> = (0..steps.len()).filter(|&i| count(&steps[i]) == measured).collect();
    if !at.is_empty() {
        return at;
    }
    let failing_above = steps
        .iter()
        .filter(|s| count(s) > measured && s["meets_target"].as_bool() != Some(true))
        .map(count)
        .fold(f64::INFINITY, f64::min);
    (0..steps.len()).filter(|&i| count(&steps[i]) == failing_above).collect()
}

fn local_bound(
    bench: &Bench,
    windows: &[&crate::check_run::Window],
    bitrate: f64,
) -> (Option<Bound>, Option<(f64, f64)>) {
    let zero = vec![0u64; bench.members.len() * 2];
    let mut total: Vec<MemberReads> = member_reads(bench, &zero, &zero);
    let mut each = Vec::new();
    for w in windows {
        let reads = member_reads(bench, &zero, &w.counters);
        for (t, r) in total.iter_mut().zip(&reads) {
            t.requests += r.requests;
            t.bytes += r.bytes;
        }
        if reads.iter().map(|r| r.bytes).sum::<u64>() >= MIN_WINDOW_BYTES {
            each.extend(pool_bound(&reads).map(|b| b.streams(bitrate)));
        }
    }
    let range = each.iter().copied().reduce(f64::min).zip(each.iter().copied().reduce(f64::max));
    (pool_bound(&total), range)
}

/// Checks one step's bytes if it counts (passed, not cache-served); says whether it counted.
fn check_step(step: &Value, index: usize, link_bytes: Option<f64>, bytes: &mut BytesCheck) -> bool {
    if step["cache_served"].as_bool() == Some(true) {
        bytes.cache_served += 1;
        return false;
    }
    if step["meets_target"].as_bool() != Some(true) {
        return false;
    }
    let (viewers, estimated) = viewer_bytes(step);
    let Some(devices) = link_bytes.or_else(|| device_bytes(step)) else { return false };
    bytes.estimated |= estimated;
    bytes.counted += 1;
    let ratio = devices / viewers;
    bytes.low = bytes.low.min(ratio);
    bytes.high = bytes.high.max(ratio);
    if (ratio - 1.0).abs() > 0.05 {
        bytes.off.push(format!(
            "step {index} ({} viewers): devices {:.1} MB, viewers {:.1} MB ({:.3})",
            step["count"],
            devices / 1e6,
            viewers / 1e6,
            ratio
        ));
    }
    true
}

/// Whether the checks of one format agree: their counts within ±10 % (`agree`); or, on a pool whose bound
/// follows where each check's library lay (`CheckCell::placed`), their counts as shares of each one's own bound
/// within one search step of each other (`search_step`). Each check writes its library afresh, and btrfs puts
/// it where free space is: 85 % on one pair of members in one check and 47 % in the next on one pool (a bound of
/// 92 × 1080p against 148), so the counts of two honest checks can differ by more than the search can tell.
/// Returns the counts, each check's own bound, and the judgment.
pub fn formats_agree(cells: &[&CheckCell], format: &str) -> (Vec<f64>, Vec<f64>, bool) {
    let found: Vec<&FormatCell> = cells.iter().filter_map(|c| c.formats.iter().find(|f| f.format == format)).collect();
    let counts: Vec<f64> = found.iter().map(|f| f.measured).collect();
    let bounds: Vec<f64> = found.iter().map(|f| f.bound_streams).collect();
    let placed = cells.iter().all(|c| c.placed);
    let step = cells.first().map_or(0.1, |c| search_step(c.profile));
    let ok = agree(&counts) || (placed && shares_agree(&counts, &bounds, step));
    (counts, bounds, ok)
}

/// The precision of a check's capacity search (src/app/check/profile.rs): `--quick` 20 %, the default 15 %.
pub fn search_step(profile: Profile) -> f64 {
    match profile {
        Profile::Quick => 0.20,
        Profile::Default => 0.15,
    }
}

/// Counts as shares of their own bounds agree when the highest share is within one search step of the lowest.
pub fn shares_agree(counts: &[f64], bounds: &[f64], step: f64) -> bool {
    let shares: Vec<f64> = counts.iter().zip(bounds).map(|(c, b)| c / b).collect();
    let low = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let high = shares.iter().copied().fold(0.0, f64::max);
    !shares.is_empty() && low.is_finite() && low > 0.0 && high <= low * (1.0 + step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(count: u32, passed: bool) -> Value {
        serde_json::json!({ "count": count, "meets_target": passed })
    }

    /// A sync check's remux search on btrfs raid1 before the viewers' titles were spread: 13 and 11 failed, 10
    /// passed, 6 passed, 8 and 7 failed; the capacity 6 is judged against the layout of the step that ran 6.
    #[test]
    fn the_bound_is_the_capacity_steps_layout_or_the_lowest_failing_count_above_it() {
        let steps = [step(13, false), step(11, false), step(10, true), step(6, true), step(8, false), step(7, false)];
        assert_eq!(edge_steps(&steps, 6.0), vec![3]);
        // A capacity with no step of its own: the lowest failing count above it (11 above 9; 6 passed, so not 6).
        assert_eq!(edge_steps(&steps, 9.0), vec![1]);
        assert_eq!(edge_steps(&steps, 5.0), vec![5]);
    }

    /// Three checks of one pool whose libraries lay 85 % and 53 % on one pair: 77 against 98.4 and 121 against
    /// 141.5 × 1080p are one search step apart as shares of their bounds (0.78 and 0.86), not as counts.
    #[test]
    fn checks_of_a_pool_agree_by_their_shares_of_their_own_bounds() {
        assert!(!agree(&[77.0, 121.0, 116.0]));
        assert!(shares_agree(&[77.0, 121.0, 116.0], &[98.4, 141.5, 145.1], 0.20));
        assert!(!shares_agree(&[67.0, 121.0], &[137.7, 141.5], 0.20), "0.49 against 0.86");
        assert!(!shares_agree(&[], &[], 0.20));
    }
}
