//! Where a capacity search starts and how it moves: the edge an earlier search of the same raw rates found
//! (`Priors`, a check's next format, or the same format alone for a search beside loads), the share of the
//! estimate a later format starts at (`Prior::start_share`) and the search's settings from them
//! (`search_settings`). Pure: the runner measures, this only decides where.

use crate::plan::{EstimatePlan, SearchPlan, StreamsPlan};
use ::streams::SearchSettings;

/// Where the last capacity search of a run found its edge, as its capacity ÷ its estimate, with the raw-rate
/// phases behind that estimate: a later search on the same raw rates (a check's next format) starts at that share
/// of its own estimate, in steps of its precision, rather than doubling from half of it. Without confirmations
/// (`check --quick`) the later search's failing count is the edge's failing share of its estimate, derived,
/// when its first count passes (`SearchSettings::derive_failing`).
#[derive(Debug, Default)]
pub struct Priors {
    /// The last search's edge without background loads.
    last: Option<Prior>,
    /// Each format's edge without loads, by its label: where its search beside loads (`--during`) starts. A
    /// load can only take streams away, so that search starts at the count that passed alone and walks down
    /// (and when it passes there, the load cost nothing the search can tell).
    alone: Vec<Prior>,
}

impl Priors {
    /// Keeps a search's edge for the next format, as shares of `exact` (the unrounded estimate). A derived edge is
    /// not passed on: the next format scales the measured one it came from. An edge found beside loads is kept
    /// for nothing: neither a search alone nor one beside other loads says where its edge lies.
    pub(super) fn remember(
        &mut self,
        plan: &StreamsPlan,
        exact: Option<f64>,
        found: &::streams::SearchOutcome,
        served: f64,
    ) {
        let edge = !found.edges.is_empty() && !found.at_limit && found.best > 0 && !found.failing_derived;
        let alone = plan.during.is_empty();
        if let (Some(estimate), Some(b), Some(failed), true, true) =
            (plan.estimate, exact, found.first_failing, edge, alone)
        {
            let share = |n: u32| f64::from(n) / b;
            let label = plan.config.mix.label();
            let served = served / stream_byte_rate(plan) / b;
            let (passed, failed) = (share(found.best), share(failed));
            let prior = Prior { estimate, passed, failed, served, label, beside: false };
            self.alone.retain(|p| p.label != prior.label);
            self.alone.push(prior.clone());
            self.last = Some(prior);
        }
    }

    /// Where a search starts: without loads, from the last edge without them; beside loads, from the same
    /// format's edge alone. Only an edge measured on the same raw rates (the same estimate) counts.
    pub(super) fn prior_for(&self, plan: &StreamsPlan) -> Option<Prior> {
        let prior = match plan.during.is_empty() {
            true => self.last.clone(),
            false => self
                .alone
                .iter()
                .find(|p| p.label == plan.config.mix.label())
                .map(|p| Prior { beside: true, ..p.clone() }),
        };
        prior.filter(|p| plan.estimate == Some(p.estimate))
    }
}

/// The share of its bound at which a step of viewers can still prove steady state within the check's bound on
/// it (`check::profile`'s fill at 93 % of the bandwidth), less a little: where a one-step search of a later
/// format starts when the earlier edge's bracket reaches that high.
const PROVABLE_SHARE: f64 = 0.92;

/// Just below the top of an earlier edge's bracket: its failing share less 3 %.
const BELOW_TOP: f64 = 0.97;

#[derive(Debug, Clone)]
pub(super) struct Prior {
    estimate: EstimatePlan,
    /// The edge's passing and failing counts ÷ the estimate's streams.
    passed: f64,
    failed: f64,
    /// The highest rate a step of the search served its whole audience evenly at (`even_rate`: the slowest
    /// viewer's rate × the viewers), in streams of that format ÷ the estimate's streams: what the storage
    /// delivered to every viewer alike, whole viewers per device or not.
    served: f64,
    /// The format it was found for, in words ("2160p remux (80 Mbit/s)").
    pub(super) label: String,
    /// Taken by the same format's search beside loads: it starts at the count that passed, never above it.
    beside: bool,
}

impl Prior {
    /// Where a one-step search of a later format starts, as a share of its estimate: the earlier edge's passing
    /// share, or higher when its bracket is coarse. Counts are whole, so a low count's edge says little: a
    /// remux edge of 3 passed and 4 failed against an estimate of 3.93 brackets the share between 0.76 and 1.02,
    /// and 0.76 of 39.3 × 1080p is 29, where 36 pass. The start is then just below the top of the bracket, at
    /// most `PROVABLE_SHARE`; a step that fails there walks down as any first step does. (The top less 8 % put
    /// 1080p at 36 of 40 after a remux edge of 3 beside a failing 4 of 4.19, and 40 after an edge of 4: three
    /// quick checks of one disk then gave 36, 36 and 40.)
    ///
    /// An edge of few viewers of a high bitrate says less still where the storage is several devices, each
    /// viewer's reads landing on one (btrfs raid1 picks a member by title and thread): a member of 39.3 MB/s
    /// carries 3 remux viewers of 10 MB/s, not 3.93, so the remux edge of four such members was 0.76 of what they
    /// deliver, and 1080p scaled from it (116 of 141.8 × 1080p, where a member carries 39 of 39.3). The rate its
    /// steps served every viewer alike at is what the devices delivered as the busiest of them allows, whatever
    /// the split into whole viewers: the start is at least `PROVABLE_SHARE` of it (and never above
    /// `PROVABLE_SHARE` of the estimate).
    pub(super) fn start_share(&self) -> f64 {
        if self.beside {
            return self.passed;
        }
        let top = (self.failed * BELOW_TOP).min(PROVABLE_SHARE);
        let served = (self.served * PROVABLE_SHARE).min(PROVABLE_SHARE);
        self.passed.max(top).max(served)
    }
}

/// Where the search starts, how it moves and where it stops: from the estimate's `bound` (a share of it, or the
/// `prior` share an earlier search found, then in steps of the precision), or from the plan's first count.
/// Without confirmations (`check --quick`: one run of each edge, so every step saved counts) the estimate is
/// trusted as a prior is, in steps of the precision from its share. A start from a prior that passes probes
/// `PROBE_UP` of the precision above it, and again above each probe that passes, never above `PROBE_TOP` of the
/// format's own estimate; the highest count that passed is the capacity, its failing count derived from the
/// prior's when no probe failed, and measured when one did (the failing probe). A start that fails walks down in
/// `WALK_DOWN` of the precision. `bound`: the estimate's streams, and unrounded.
pub(super) fn search_settings(s: &SearchPlan, bound: Option<(u32, f64)>, prior: Option<&Prior>) -> SearchSettings {
    // A share carried back to the estimate it came from must give the same count (40 ÷ 41.94 × 41.94 is 39.999…).
    let scaled = |b: f64, share: f64| ((b * share + 1e-6) as u32).max(1);
    let once = s.confirmations == 0;
    let (start, first_step) = match (bound, prior) {
        // Beside loads, half the precision down from where the format passed alone (a load only takes away).
        (Some((_, exact)), Some(p)) if once && p.beside => (scaled(exact, p.start_share()), s.precision / 2.0),
        (Some((_, exact)), Some(p)) if once => (scaled(exact, p.start_share()), s.precision * WALK_DOWN),
        (Some((_, exact)), Some(p)) => (scaled(exact, p.passed), s.precision),
        (Some((b, _)), None) => (scaled(f64::from(b), s.start_factor), if once { s.precision } else { 1.0 }),
        (None, _) => (s.start, 1.0),
    };
    let derive_failing = match (bound, prior) {
        (Some((_, exact)), Some(p)) if once => Some(((exact * p.failed).ceil() as u32).max(start + 1)),
        _ => None,
    };
    // Up from a start that passed: ⌈start × 1.1⌉ at 20 %, at least one stream more, and again from each probe
    // that passes, never above `PROBE_TOP` of the format's own estimate.
    let probe = derive_failing
        .filter(|_| !prior.is_some_and(|p| p.beside))
        .map(|_| ((f64::from(start) * (1.0 + s.precision * PROBE_UP)).ceil() as u32).max(start + 1));
    let probe_up_to = probe.and(bound).map(|(_, exact)| scaled(exact, PROBE_TOP));
    let bound = bound.map(|(b, _)| b);
    let by_estimate = match (bound, s.limit_factor) {
        (Some(b), Some(f)) => ((f64::from(b) * f).ceil() as u32).max(start).max(4),
        _ => u32::MAX,
    };
    SearchSettings {
        start,
        limit: s.limit.min(by_estimate).max(1),
        precision: s.precision,
        first_step,
        confirmations: s.confirmations,
        derive_failing,
        probe,
        probe_up_to,
    }
}

/// How far above a passing start from a prior the one step more goes, as a share of the precision (10 % at
/// `--quick`'s 20 %). A prior's start errs low as often as high: on btrfs raid1 the even-rate start put 1080p at
/// 0.79–0.86 of its bound, and each passed and was the answer (docs/validation.md, "After the even-rate start").
const PROBE_UP: f64 = 0.5;

/// The highest share of its own estimate a probe goes to. A count above it cannot prove its buffers full within
/// the step's bound, which is sized to fill them at 93 % of the bandwidth (`check::profile`'s `FILL_AT_LOAD`),
/// unless the estimate errs low; and a failing probe near the edge runs that whole bound (16–18 s for 1080p),
/// longer than any other step. 0.93 and the stream a floored count loses: ext4 over a loop device throttled to
/// 41.9 MB/s, whose 1080p estimate came out at 38.3–43.1 streams from check to check, carried 1080p at up to 0.94
/// of the estimate (39 of 42.5–43.1 with io_uring, 36–37 of 38.3–39.4 with sync) and failed every probe above
/// 0.94 of it (40–41 with io_uring, 38 of 40.3 with sync; HEVC 13 of 13.6–13.8). Where the estimate lies above what the
/// storage carries (a btrfs raid1's: about 1.1 times its bound by bytes), the cap is above the edge and the probes
/// climb to it.
const PROBE_TOP: f64 = 0.94;

/// The small steps down from a failing start from a prior, as a share of the precision (5 % at `--quick`'s
/// 20 %): such a start lies just above the edge (ext4's sync 1080p failed at 38 of 39.3), and a step of 10 %
/// (to 35, 0.89) overshot it in all three quick checks of the matrix. A failing step ends at its first failure,
/// so a smaller step costs little.
const WALK_DOWN: f64 = 0.25;

/// Bytes per second one viewer of the phase's mix takes (its formats' bitrates by their weights).
fn stream_byte_rate(plan: &StreamsPlan) -> f64 {
    let mix = &plan.config.mix.0;
    let total: f64 = mix.iter().map(|(_, w)| f64::from(*w)).sum();
    let rate: f64 = mix.iter().map(|(f, w)| f64::from(*w) / total * f.bitrate.byte_rate().bytes_per_sec()).sum();
    rate.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior(passed: f64, failed: f64) -> Prior {
        let estimate = EstimatePlan { random_phase: 0, sequential_phase: 1 };
        Prior { estimate, passed, failed, served: 0.0, label: "2160p remux (80 Mbit/s)".into(), beside: false }
    }

    #[test]
    fn the_next_format_starts_below_what_the_busiest_member_allows_not_at_the_members_sum() {
        // A sync quick check of a btrfs raid1 (scripts/validate, 2026-11-28): remux estimated at 16.33 streams,
        // 9 passed and 10 failed; its failing steps were served at up to 127.6 MB/s over their span, but evenly
        // at 101.0 MB/s at most. HEVC (52.25 estimated, its bound 36.8) started at 0.92 of the span's rate, 37,
        // above its bound, and failed; from the even rate it starts at 31, where the top of the remux bracket
        // (10 × 0.97) puts it.
        let remux = Prior { served: 10.10 / 16.33, ..prior(9.0 / 16.33, 10.0 / 16.33) };
        assert_eq!(((52.25 * remux.start_share()) + 1e-6) as u32, 31);
        let from_span = Prior { served: 12.76 / 16.33, ..remux.clone() };
        assert_eq!(((52.25 * from_span.start_share()) + 1e-6) as u32, 37);
    }

    #[test]
    fn a_quick_search_from_a_prior_probes_half_its_precision_up_and_walks_down_in_a_quarter() {
        let plan = quick_plan();
        // Remux 4 passed, 5 failed against 4.19; 1080p's estimate 41.94: a start at 0.95 of it (the passing share,
        // above 0.92), then 5 % steps down; the failing count 5 ÷ 4.19 of it, derived; ⌈40 × 1.1⌉ probed above.
        let from_prior = search_settings(&plan, Some((41, 41.94)), Some(&prior(4.0 / 4.19, 5.0 / 4.19)));
        assert_eq!((from_prior.start, from_prior.first_step), (40, 0.05));
        assert_eq!((from_prior.derive_failing, from_prior.probe), (Some(51), Some(44)));
        // No probe goes above 0.94 of the estimate, 39: a start above it runs none.
        assert_eq!(from_prior.probe_up_to, Some(39));
        // The first format (no prior) moves in whole precision steps from its estimate.
        let first = search_settings(&plan, Some((41, 41.94)), None);
        assert_eq!((first.start, first.first_step), (41, 0.2));
        // With confirmations the prior's passing share is the start, in steps of the precision.
        let confirmed = SearchPlan { confirmations: 2, precision: 0.15, ..plan };
        let from_prior = search_settings(&confirmed, Some((41, 41.94)), Some(&prior(4.0 / 4.19, 5.0 / 4.19)));
        assert_eq!((from_prior.start, from_prior.first_step, from_prior.derive_failing), (40, 0.15, None));
        assert_eq!(from_prior.probe, None);
    }

    /// `check --quick`'s search: from the estimate, capped at 1.25× it, 20 %, no confirmation.
    fn quick_plan() -> SearchPlan {
        SearchPlan {
            start: 1,
            start_factor: 1.0,
            limit: 10_000,
            limit_factor: Some(1.25),
            precision: 0.2,
            confirmations: 0,
        }
    }

    /// The counts a quick search from a prior tries, on a made-up device that passes up to `capacity`.
    fn tried(settings: SearchSettings, capacity: u32) -> (Vec<u32>, ::streams::SearchOutcome) {
        let mut tried = Vec::new();
        let out = ::streams::search::<()>(settings, &mut |n| {
            tried.push(n);
            Ok(Some(n <= capacity))
        })
        .expect("the made-up device never errs");
        (tried, out)
    }

    #[test]
    fn a_quick_later_format_probes_up_from_a_low_start_and_walks_down_in_small_steps_from_a_high_one() {
        let plan = quick_plan();
        // btrfs raid1 (docs/validation.md, "After the even-rate start", #2): 1080p estimated at 163.7, started
        // from the even rate at 116 (0.79 of a bound of 146.1). It passed and was the answer; with one probe,
        // ⌈116 × 1.1⌉ = 128 passed and was (0.88). Now a probe that passes probes again: on a pool that carries
        // 136 (0.93 of its bound), 142 fails and 128 stays, both sides measured.
        let lumpy = Prior { served: 13.8 / 16.37 * 116.0 / 126.0, ..prior(10.0 / 16.37, 12.0 / 16.37) };
        let s = search_settings(&plan, Some((163, 163.7)), Some(&lumpy));
        assert_eq!((s.probe, s.probe_up_to), (Some(128), Some(153)));
        let (counts, out) = tried(s, 136);
        assert_eq!(counts, [116, 128, 142]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (128, Some(142), false));
        // On one that carries 145, 142 passes too, and the next probe stops at 0.94 of the estimate (153).
        let (counts, out) = tried(s, 145);
        assert_eq!(counts, [116, 128, 142, 153]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (142, Some(153), false));
        // Where the first probe fails, the start stays, with no step between (it would pass near the edge and
        // last a whole passing step).
        let (counts, out) = tried(s, 125);
        assert_eq!(counts, [116, 128]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (116, Some(128), false));
        // The four raid1 1080p searches of "After quick24b" whose start passed (77, 118, 104 and 110: one probe
        // gave 77, 118, 104 and 122, 0.83–0.88 of their bounds), on pools that carry 0.93 of their bound and whose
        // estimate lies above it (a raid1's does): each now ends within one 10 % probe of what the pool carries,
        // in at most four steps.
        for (start, bound) in [(77u32, 87.5f64), (118, 135.6), (104, 119.5), (110, 147.0)] {
            let (carries, estimate) = ((bound * 0.93) as u32, bound * 1.12);
            let low = Prior { served: f64::from(start) / 0.92 / estimate, ..prior(0.3, 0.35) };
            let s = search_settings(&plan, Some((estimate as u32, estimate)), Some(&low));
            assert_eq!(s.start, start);
            let (counts, out) = tried(s, carries);
            assert!(f64::from(out.best) * 1.11 > f64::from(carries) && out.best <= carries, "{counts:?}");
            assert!(counts.len() <= 4 && !out.failing_derived, "{counts:?}");
        }
        // Never above 0.94 of the format's own estimate: a pool that carries everything stops at 153, its failing
        // count derived.
        let (counts, out) = tried(s, 10_000);
        assert_eq!(counts, [116, 128, 142, 153]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (153, Some(154), true));
        // ext4, sync engine: remux 3 passed, 4 failed against 4.19; 1080p (41.94) starts at 0.92 of it, 38, where
        // the device carries 37 (39.3 × 0.95). It fails, and the steps down are 5 %: ⌈38 ÷ 1.05⌉ = 37 passes
        // (0.94), where a step of 10 % gave 35 (0.89) in all three quick checks of the matrix.
        let s = search_settings(&plan, Some((41, 41.94)), Some(&prior(3.0 / 4.19, 4.0 / 4.19)));
        let (counts, out) = tried(s, 37);
        assert_eq!(counts, [38, 37]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (37, Some(38), false));
        // Further below: three small steps, each failing step short, before the steps double.
        let (counts, out) = tried(s, 30);
        assert_eq!(&counts[..4], &[38, 37, 36, 35], "{counts:?}");
        assert!(out.best <= 30 && out.first_failing.is_some_and(|f| f > 30), "{out:?}");
    }

    #[test]
    fn a_quick_later_format_probes_no_higher_than_its_step_can_prove_steady() {
        let plan = quick_plan();
        let remux = prior(3.0 / 4.19, 4.0 / 4.19);
        // ext4 over a loop device throttled to 41.9 MB/s, io_uring (docs/validation.md, "After quick24c"): 1080p
        // estimated at 42.5–43.1 starts at 39 and passes; the probe ⌈39 × 1.1⌉ = 43 (1.0 of the estimate) failed
        // in every check, and so did 40 and 41, each running its whole 16 s bound. Now 0.94 of the estimate: 40
        // from 43.12 (measured, failing), none from 42.53 (39 is the capacity, its failing count derived).
        for (exact, counts, best, derived) in [(43.12, &[39, 40][..], 39, false), (42.53, &[39], 39, true)] {
            let s = search_settings(&plan, Some((exact as u32, exact)), Some(&remux));
            let (tried, out) = tried(s, 39);
            assert_eq!((&tried[..], out.best, out.failing_derived), (counts, best, derived), "{exact}");
        }
        // ext4, sync: the estimate is the viewers' own bound, 38–40 × 1080p, and the device carries 37 (36 and
        // 37 passed, 38 failed). From 35 the probe stops at 36 (0.94 of 38.33), from 36 at 37 (of 39.41); from
        // 37 (of 40.37) none runs.
        for (exact, counts) in [(38.33, &[35, 36][..]), (39.41, &[36, 37]), (40.37, &[37])] {
            let s = search_settings(&plan, Some((exact as u32, exact)), Some(&remux));
            let (tried, out) = tried(s, 37);
            assert_eq!(tried, counts, "{exact}");
            assert_eq!((out.best, out.failing_derived), (*counts.last().unwrap(), true), "{exact}");
        }
        // HEVC (13.4–13.8) from 1080p's measured edge 39 / 40: 12, and 13 (0.94–0.97, failed in every check)
        // never runs.
        for exact in [13.4, 13.8] {
            let hevc = search_settings(&plan, Some((13, exact)), Some(&prior(39.0 / 43.12, 40.0 / 43.12)));
            assert_eq!((hevc.start, hevc.probe_up_to), (12, Some(12)), "{exact}");
            assert_eq!(tried(hevc, 13).0, [12]);
        }
    }

    #[test]
    fn a_search_beside_loads_starts_at_its_formats_edge_alone() {
        let plan = SearchPlan {
            start: 1,
            start_factor: 0.5,
            limit: 10_000,
            limit_factor: None,
            precision: 0.1,
            confirmations: 0,
        };
        // 2160p remux alone: 12 passed, 13 failed against 14.7. Beside a load, at once 12 (not the top of the
        // bracket a later format would start near), then 5 % steps down.
        let beside = Prior { beside: true, ..prior(12.0 / 14.7, 13.0 / 14.7) };
        let s = search_settings(&plan, Some((14, 14.7)), Some(&beside));
        assert_eq!((s.start, s.first_step, s.derive_failing), (12, 0.05, Some(13)));
    }

    #[test]
    fn a_coarse_edge_starts_the_next_format_near_the_top_of_its_bracket() {
        // Remux 3 passed, 4 failed against 3.93: 1080p (39.3) starts at 36, not 29.
        let coarse = prior(3.0 / 3.93, 4.0 / 3.93);
        assert!((coarse.start_share() - 0.92).abs() < 1e-9);
        // 3 passed, 4 failed against 4.19 (io_uring): at the cap too, 38 of 41.9 × 1080p, not 36.
        assert!((prior(3.0 / 4.19, 4.0 / 4.19).start_share() - 0.92).abs() < 1e-9);
        // An edge above the share a step can prove steady at starts where it passed.
        assert_eq!(prior(0.95, 1.19).start_share(), 0.95);
        // A low edge (a seek-bound pool) stays low: passed 0.49, failed 0.57 starts just below 0.57.
        assert!((prior(0.49, 0.57).start_share() - 0.57 * 0.97).abs() < 1e-9);
    }

    #[test]
    fn a_lumpy_edge_of_few_viewers_starts_the_next_format_at_the_rate_the_storage_served() {
        // btrfs raid1 of four 39.32 MB/s members, estimate 16.37 × remux: 10 passed, 12 failed (three per member
        // at most), while a step served its viewers alike at 138 MB/s. 1080p (163.7 estimated) starts at 0.92 of
        // 13.8 ÷ 16.37 (126 × 1080p), not at 0.71 (116 passed where the pool carries 141.8).
        let lumpy = Prior { served: 13.8 / 16.37, ..prior(10.0 / 16.37, 12.0 / 16.37) };
        assert!((lumpy.start_share() - 0.92 * 13.8 / 16.37).abs() < 1e-9);
        assert_eq!(((163.7 * lumpy.start_share()) + 1e-6) as u32, 126);
        // Never above what a step can prove steady at, whatever the rate served (memory can serve anything).
        assert_eq!(Prior { served: 3.0, ..prior(0.5, 0.6) }.start_share(), PROVABLE_SHARE);
        // Beside loads: where it passed alone, whatever was served.
        assert_eq!(Prior { served: 0.9, beside: true, ..prior(0.6, 0.7) }.start_share(), 0.6);
    }
}
