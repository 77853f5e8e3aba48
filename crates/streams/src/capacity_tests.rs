//! The capacity search's unit tests (a file of their own: capacity.rs neared 500 lines): made-up devices whose
//! edge is known, each test the sequence of counts the search tries on them.

use super::*;

fn settings(start: u32, limit: u32, precision: f64, confirmations: u32) -> SearchSettings {
    SearchSettings {
        start,
        limit,
        precision,
        first_step: 1.0,
        confirmations,
        derive_failing: None,
        probe: None,
        probe_up_to: None,
    }
}

fn run(start: u32, limit: u32, capacity: u32) -> (SearchOutcome, Vec<u32>) {
    let mut tried = Vec::new();
    let out = search::<()>(settings(start, limit, 0.03, 0), &mut |n| {
        tried.push(n);
        Ok(Some(n <= capacity))
    })
    .unwrap();
    (out, tried)
}

#[test]
fn ramps_then_bisects_to_the_exact_edge_when_small() {
    let (out, tried) = run(4, 1000, 37);
    assert_eq!((out.best, out.first_failing), (37, Some(38)));
    assert_eq!(&tried[..5], &[4, 8, 16, 32, 64]);
    assert_eq!(out.edges, [Edge { passed: 37, failed: Some(38) }]);
}

#[test]
fn stops_within_the_precision_when_large() {
    let (out, _) = run(4, 100_000, 5000);
    assert!(out.best <= 5000 && out.best >= 4850, "{out:?}");
}

#[test]
fn a_device_that_cannot_serve_one_stream_gives_zero() {
    let (out, tried) = run(8, 100, 0);
    assert_eq!((out.best, out.first_failing), (0, Some(1)));
    assert_eq!(tried, [8, 4, 2, 1]);
}

#[test]
fn the_limit_is_reported_as_a_lower_bound() {
    let (out, _) = run(4, 50, 1000);
    assert_eq!((out.best, out.at_limit), (50, true));
}

#[test]
fn an_interruption_stops_the_search() {
    let out = search::<()>(settings(4, 100, 0.0, 2), &mut |n| Ok(if n > 8 { None } else { Some(true) })).unwrap();
    assert!(out.stopped);
    assert_eq!(out.best, 8);
    assert!(out.edges.is_empty(), "no edge was found: {out:?}");
}

/// A stable device: every confirmation runs the found count and the next failing count again, both agree,
/// and the range is the one count.
#[test]
fn a_stable_device_confirms_its_edge_with_a_range_of_one_count() {
    let mut tried = Vec::new();
    let out = search::<()>(settings(10, 1000, 0.01, 3), &mut |n| {
        tried.push(n);
        Ok(Some(n <= 73))
    })
    .unwrap();
    assert_eq!((out.best, out.range(), out.agreed, out.edges.len()), (73, (73, 73), 3, 4), "{out:?}");
    let confirmations = &tried[tried.len() - 6..];
    assert_eq!(out.first_failing, Some(74));
    assert_eq!(confirmations, [73, 74, 73, 74, 73, 74], "each round: the edge, then the next count");
}

/// A noisy device: its answer flips at random between 68 and 79 (everything below passes, above fails). The
/// confirmations disagree with the first edge now and then, search again around it, and the range shows the
/// spread; the capacity is the median of the edges.
#[test]
fn a_noisy_device_gives_a_range_and_the_median_edge() {
    let mut rng = crate::workload::Rng::new(7);
    let out = search::<()>(settings(8, 1000, 0.03, 6), &mut |n| {
        let pass = match n {
            0..=67 => true,
            68..=79 => rng.next_u64().is_multiple_of(2),
            _ => false,
        };
        Ok(Some(pass))
    })
    .unwrap();
    let (low, high) = out.range();
    assert_eq!(out.edges.len(), 7);
    assert!(low < high, "a flipping edge gives a spread: {out:?}");
    assert!((60..=80).contains(&low) && (60..=80).contains(&high), "{out:?}");
    assert!(out.agreed < 6, "some confirmations disagreed: {out:?}");
    let mut passed: Vec<u32> = out.edges.iter().map(|e| e.passed).collect();
    passed.sort_unstable();
    assert_eq!(out.best, passed[3], "the median of seven edges");
    assert!(low <= out.best && out.best <= high);
}

/// A confirmation that finds the found count failing searches down from it; one that finds the next count
/// passing searches up from it.
#[test]
fn a_disagreeing_confirmation_searches_again_around_the_edge() {
    // The device serves 50 during the search, 40 afterwards.
    let mut calls = 0;
    let out = search::<()>(settings(50, 100, 0.03, 1), &mut |n| {
        calls += 1;
        Ok(Some(n <= if calls <= 3 { 50 } else { 40 }))
    })
    .unwrap();
    assert_eq!(out.edges[0].passed, 50, "{out:?}");
    assert_eq!(out.edges[1], Edge { passed: 40, failed: Some(41) }, "{out:?}");
    // The two runs split, so a third decides: the device serves 40 now, and the third agrees.
    assert_eq!(out.edges.len(), 3, "{out:?}");
    assert_eq!((out.agreed, out.best, out.range()), (1, 40, (40, 50)));

    // The device serves 30 during the search, 36 afterwards.
    let mut calls = 0;
    let out = search::<()>(settings(16, 100, 0.0, 1), &mut |n| {
        calls += 1;
        Ok(Some(n <= if calls <= 6 { 30 } else { 36 }))
    })
    .unwrap();
    assert_eq!(out.edges[0], Edge { passed: 30, failed: Some(31) }, "{out:?}");
    assert_eq!(out.edges[1], Edge { passed: 36, failed: Some(37) }, "{out:?}");
}

/// Regression guard of streams_throttled's flaky IOPS test: one step disturbed from outside (every viewer of 50
/// stalled at once in a busy CI, on a disk that carries 55) made the edge 46; the confirmation passed 50 and 55,
/// and the median of the two edges, the lower, kept 46. A third run of the edge breaks such a tie.
#[test]
fn one_disturbed_step_does_not_decide_the_capacity_when_the_runs_of_the_edge_split() {
    let mut disturbed = false;
    let mut tried = Vec::new();
    let out = search::<()>(settings(29, 70, 0.10, 1), &mut |n| {
        tried.push(n);
        let once = n == 50 && !disturbed;
        disturbed |= once;
        Ok(Some(n <= 55 && !once))
    })
    .unwrap();
    assert_eq!(tried, [29, 58, 43, 50, 46, 46, 50, 55, 65, 60, 55, 60], "the CI's steps, then one round more");
    let passed: Vec<u32> = out.edges.iter().map(|e| e.passed).collect();
    assert_eq!((passed, out.best, out.range()), (vec![46, 55, 55], 55, (46, 55)));
}

/// Runs that agree, or an odd number of them, need no tiebreak.
#[test]
fn runs_of_the_edge_that_agree_run_no_extra_round() {
    let out = search::<()>(settings(29, 70, 0.10, 1), &mut |n| Ok(Some(n <= 55))).unwrap();
    assert_eq!((out.edges.len(), out.agreed, out.best), (2, 1, 54), "within the 10 % precision: {out:?}");
    let mut calls = 0;
    let out = search::<()>(settings(50, 100, 0.03, 2), &mut |n| {
        calls += 1;
        Ok(Some(n <= if calls <= 3 { 50 } else { 40 }))
    })
    .unwrap();
    assert_eq!(out.edges.len(), 3, "two rounds asked, three edges, no tie: {out:?}");
}

#[test]
fn an_edge_at_the_limit_is_confirmed_by_passing_again() {
    let out = search::<()>(settings(4, 50, 0.03, 2), &mut |_| Ok(Some(true))).unwrap();
    assert_eq!((out.best, out.at_limit, out.agreed, out.edges.len()), (50, true, 2, 3));
}

#[test]
fn small_first_steps_walk_up_from_a_good_start() {
    let mut tried = Vec::new();
    let s = SearchSettings {
        start: 90,
        limit: 1000,
        precision: 0.05,
        first_step: 0.05,
        confirmations: 0,
        derive_failing: None,
        probe: None,
        probe_up_to: None,
    };
    let out = search::<()>(s, &mut |n| {
        tried.push(n);
        Ok(Some(n <= 100))
    })
    .unwrap();
    // Steps of 5 % of 90 (4), then 8: the edge is bracketed in three counts and bisected within 5 %.
    assert_eq!(&tried[..3], &[90, 94, 102]);
    assert_eq!(out.best, 98, "{tried:?}");
}

fn derived(start: u32, failing: u32, capacity: u32) -> (SearchOutcome, Vec<u32>) {
    let mut tried = Vec::new();
    let s = SearchSettings {
        start,
        limit: 1000,
        precision: 0.2,
        first_step: 0.2,
        confirmations: 0,
        derive_failing: Some(failing),
        probe: None,
        probe_up_to: None,
    };
    let out = search::<()>(s, &mut |n| {
        tried.push(n);
        Ok(Some(n <= capacity))
    })
    .unwrap();
    (out, tried)
}

/// `check --quick`'s later formats: a start scaled from an earlier edge that passes is the one step run; the
/// failing count is the earlier edge's, scaled, and said to be derived.
#[test]
fn a_passing_scaled_start_ends_the_search_with_a_derived_failing_count() {
    let (out, tried) = derived(12, 16, 13);
    assert_eq!(tried, [12], "one step");
    assert_eq!((out.best, out.first_failing, out.failing_derived, out.at_limit), (12, Some(16), true, false));
    assert_eq!(out.edges, [Edge { passed: 12, failed: Some(16) }]);
}

/// A scaled start that fails is measured on both sides: one step down, to the count whose tolerance reaches
/// back to the start, and the edge is found without a bisection (359 failed in a real check, then 288 passed
/// and 323 had to be run as well).
#[test]
fn a_failing_scaled_start_measures_both_sides_of_its_edge() {
    let (out, tried) = derived(359, 410, 310);
    assert_eq!(tried, [359, 300], "the start, then ⌈359 ÷ 1.2⌉");
    assert_eq!((out.best, out.first_failing, out.failing_derived), (300, Some(359), false));
    // Far below: the steps double from there, and the edge is bisected as usual.
    // Further below: small steps down while they fail (each ends at its first failure), so the first that
    // passes is within the precision, with no bisection (900 failed in a real check, then 720, and 360,
    // 540 and 630 passed).
    let (out, tried) = derived(900, 1100, 630);
    assert_eq!(tried, [900, 750, 625], "{tried:?}");
    assert_eq!((out.best, out.first_failing, out.failing_derived), (625, Some(750), false));
    // Far below: three small steps, then they double.
    let (out, tried) = derived(900, 1100, 200);
    assert_eq!(&tried[..5], &[900, 750, 625, 521, 313], "{tried:?}");
    assert!(out.best <= 200 && out.first_failing.unwrap() > 200, "{out:?}");
    assert!(out.first_failing.unwrap() - out.best <= out.best / 5, "{out:?}");
}

#[test]
fn the_comfortable_count_leaves_a_fifth_or_the_lowest_edge() {
    assert_eq!(plan_for(73, 68), 58);
    assert_eq!(plan_for(73, 50), 50);
    assert_eq!(plan_for(0, 0), 0);
    assert_eq!(plan_for(4, 4), 3);
}

#[test]
fn a_bound_is_the_rate_over_the_stream_rate() {
    assert!((streams_bound(100.0, 8_000_000) - 100.0).abs() < 1e-9);
    assert_eq!(streams_bound(100.0, 0), 0.0);
}

/// A derived edge with a probe: the one step more above a start that passed. Passing, it is the capacity (the
/// failing count still derived, above it); failing, both sides are measured; beyond the limit, it is not run.
#[test]
fn a_probe_above_a_passing_start_keeps_the_higher_count_that_passed() {
    let probed =
        |capacity: u32, limit: u32| tried_on(SearchSettings { limit, ..settings_from(116, 120, 128) }, capacity);
    let (out, tried) = probed(140, 1000);
    assert_eq!(tried, [116, 128]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (128, Some(129), true));
    let (out, tried) = probed(125, 1000);
    assert_eq!(tried, [116, 128]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (116, Some(128), false));
    assert_eq!(out.edges, [Edge { passed: 116, failed: Some(128) }]);
    let (out, tried) = probed(140, 127);
    assert_eq!(tried, [116]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (116, Some(120), true));
}

/// Repeated probes (`probe_up_to`): a probe that passes probes again at the same ratio, never above the cap; one
/// that fails ends the search with no step between it and the count that passed below. Every capacity is a count
/// that was measured passing.
#[test]
fn probes_that_pass_probe_again_up_to_their_cap_and_a_failing_one_ends_the_search() {
    let probed = |capacity: u32, up_to: u32| {
        tried_on(SearchSettings { probe_up_to: Some(up_to), ..settings_from(100, 120, 110) }, capacity)
    };
    // 100 and 110 pass, 121 fails: the edge is 110 / 121, both measured, and nothing runs between them.
    let (out, tried) = probed(117, 500);
    assert_eq!(tried, [100, 110, 121]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (110, Some(121), false));
    // The first probe fails: the start is the capacity, the probe its measured failing count.
    let (out, tried) = probed(105, 500);
    assert_eq!(tried, [100, 110]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (100, Some(110), false));
    // The cap is never passed: the last probe runs at it, and passing there, the failing count is derived.
    let (out, tried) = probed(1000, 125);
    assert_eq!(tried, [100, 110, 121, 125]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (125, Some(126), true));
    // Failing at the cap: measured on both sides, one step short of it.
    let (out, tried) = probed(124, 125);
    assert_eq!(tried, [100, 110, 121, 125]);
    assert_eq!((out.best, out.first_failing, out.failing_derived), (121, Some(125), false));
    // A first probe above the cap runs at the cap; a cap at or below the start runs no probe.
    assert_eq!(probed(1000, 105).1, [100, 105]);
    for up_to in [100, 90] {
        let (out, tried) = probed(1000, up_to);
        assert_eq!(tried, [100]);
        assert_eq!((out.best, out.first_failing, out.failing_derived), (100, Some(120), true));
    }
    // A stop asked for during a probe keeps what passed before it, its failing count derived.
    let mut tried = Vec::new();
    let s = SearchSettings { probe_up_to: Some(500), ..settings_from(100, 120, 110) };
    let out = search::<()>(s, &mut |n| {
        tried.push(n);
        Ok((n < 121).then_some(true))
    })
    .unwrap();
    assert_eq!(tried, [100, 110, 121]);
    assert_eq!((out.best, out.first_failing, out.failing_derived, out.stopped), (110, Some(120), true, true));
}

/// The outcome of a search on a made-up device that passes up to `capacity`, and the counts it tried.
fn tried_on(s: SearchSettings, capacity: u32) -> (SearchOutcome, Vec<u32>) {
    let mut tried = Vec::new();
    let out = search::<()>(s, &mut |n| {
        tried.push(n);
        Ok(Some(n <= capacity))
    })
    .unwrap();
    (out, tried)
}

/// A quick later format's settings: a derived failing count and one probe, within a limit of 1000.
fn settings_from(start: u32, derive_failing: u32, probe: u32) -> SearchSettings {
    SearchSettings {
        start,
        limit: 1000,
        precision: 0.2,
        first_step: 0.05,
        confirmations: 0,
        derive_failing: Some(derive_failing),
        probe: Some(probe),
        probe_up_to: None,
    }
}

/// A search beside a load that costs streams, as a what-breaks-first search runs it (`--thorough`: a start at
/// the edge alone, half of its 10 % precision as the first step, no confirmation): it walks down as
/// `WALK_DOWN` counts, on the edges a whole thorough check measured (docs/streams.md). The forecast counted
/// two steps each and a check ran 84 steps where it said 51.
#[test]
fn a_search_beside_a_costly_load_walks_down_as_walk_down_counts() {
    let walk = |alone: u32, beside: u32| {
        let mut tried = Vec::new();
        let s = SearchSettings {
            start: alone,
            limit: alone * 4,
            precision: 0.1,
            first_step: 0.05,
            confirmations: 0,
            derive_failing: Some(alone + 1),
            probe: None,
            probe_up_to: None,
        };
        search::<()>(s, &mut |n| {
            tried.push(n);
            Ok(Some(n <= beside))
        })
        .unwrap();
        let passing = tried.iter().filter(|&&n| n <= beside).count() as u32;
        (tried.clone(), Walk { failing: tried.len() as u32 - passing, passing })
    };
    let (tried, steps) = walk(41, 36);
    assert_eq!(tried, [41, 40, 39, 38, 36]);
    assert_eq!(steps, WALK_DOWN);
    // One bisection more where the doubled move lands below the tolerance of the count above it.
    let (tried, steps) = walk(13, 9);
    assert_eq!(tried, [13, 12, 11, 10, 8, 9]);
    assert_eq!(steps, Walk { passing: WALK_DOWN.passing + 1, ..WALK_DOWN });
    // A load that leaves no stream of a remux: every step fails, down to one viewer.
    let (tried, steps) = walk(4, 0);
    assert_eq!(tried, [4, 3, 2, 1]);
    assert_eq!(steps, Walk { failing: WALK_DOWN.failing, passing: 0 });
    // A load that costs nothing the search can tell: the start passes, one step.
    assert_eq!(walk(41, 41).0, [41]);
}
