//! Tests of planning phases with parts (`plan/mix.rs`): shares, held shares, own rates, streams, bounds.
use super::*;

fn part(skew: Option<f64>) -> PhaseSpec {
    PhaseSpec { skew, ..PhaseSpec::default() }
}

#[test]
fn unsaid_skews_share_what_is_left() {
    // vdbench's example: five workloads, one with skew=60, the other four 10 each.
    let parts = vec![part(Some(60.0)), part(None), part(None), part(None), part(None)];
    assert_eq!(shares(&parts).unwrap(), [60.0, 10.0, 10.0, 10.0, 10.0]);
    assert_eq!(shares(&[part(None), part(None)]).unwrap(), [50.0, 50.0]);
    assert!(shares(&[part(Some(60.0)), part(Some(30.0))]).unwrap_err().contains("add up to 90"));
    assert!(shares(&[part(Some(0.0))]).is_err());
}

/// Parts on the ranks of several hds hold their shares (across the ranks, `run::cluster::shares`); so do
/// parts of no rank (each rank holds its own); a mix of both, a rate, or no skew said does not.
#[test]
fn shares_are_held_at_max_with_a_skew_said_whatever_the_ranks() {
    let on = |rank: Option<u32>, skew| PhaseSpec { rank, skew, ..PhaseSpec::default() };
    let phase = |parts: Vec<PhaseSpec>| PhaseSpec { parts: Some(parts), ..PhaseSpec::default() };
    assert!(holds_shares(&phase(vec![on(Some(0), Some(80.0)), on(Some(1), Some(20.0))]), 2));
    assert!(holds_shares(&phase(vec![on(None, Some(80.0)), on(None, Some(20.0))]), 2));
    assert!(!holds_shares(&phase(vec![on(Some(0), Some(80.0)), on(None, Some(20.0))]), 2));
    assert!(!holds_shares(&phase(vec![on(Some(0), None), on(Some(1), None)]), 2));
    let paced = PhaseSpec { rate_iops: Some(100), ..phase(vec![on(Some(0), Some(80.0)), on(Some(1), Some(20.0))]) };
    assert!(!holds_shares(&paced, 2));
}

fn planned(parts: Vec<PhaseSpec>, rate_iops: Option<u64>) -> Result<RawPlan, String> {
    use crate::plan::{Facts, RunOptions, TargetFacts, build_plan};
    use crate::spec::{JobSpec, SpecOrigin};
    let target = TargetFacts::Directory { path: "/srv".into(), free: Some(Bytes::gib(50)), dio_align: Some(512) };
    let facts = Facts { target, ..Facts::directory(None) };
    let phase = PhaseSpec { size: Some(Bytes::mib(16)), rate_iops, parts: Some(parts), ..PhaseSpec::default() };
    let job = JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![phase], notices: vec![] };
    let options = RunOptions { run_id: "run-test".into(), ..Default::default() };
    let phase = build_plan(&job, &facts, &options).map(|mut p| p.phases.remove(0)).map_err(|e| e.to_string())?;
    phase.raw().cloned().ok_or_else(|| "not a raw phase".to_string())
}

#[test]
fn a_part_with_its_own_rate_runs_alone_at_it_and_the_others_share_what_it_leaves() {
    // vdbench: rd iorate=300 with wd1 iorate=100 and two wds without on the same sd: wd1 does 100/s, the two
    // others 100/s each (WG_entry.wg_set_interarrival).
    let part = |rw, rate_iops| PhaseSpec { rw: Some(rw), rate_iops, queue: Some("sd1".into()), ..part(None) };
    let parts = vec![part(RwMode::RandRead, Some(100)), part(RwMode::RandWrite, None), part(RwMode::RandWrite, None)];
    let phase = planned(parts.clone(), Some(300)).unwrap();
    assert_eq!(phase.workers.len(), 2, "the part with its own rate has a worker of its own");
    let own = phase.workers[0].mixed.as_ref().unwrap();
    assert_eq!(own.own_rate.map(|r| r.ops_per_sec), Some(100.0));
    assert_eq!((own.share, own.weights.as_slice(), own.others.len()), (0.0, [1.0].as_slice(), 0));
    let shared = phase.workers[1].mixed.as_ref().unwrap();
    assert_eq!((shared.own_rate, shared.share, shared.weights.as_slice()), (None, 1.0, [50.0, 50.0].as_slice()));
    assert_eq!(phase.pacing.map(|p| p.ops_per_sec), Some(200.0), "the rate the others share");
    assert_eq!(phase.parts[0].own_rate_iops, Some(100.0));
    assert!(phase.writes() && phase.read_percent > 0, "a read part and write parts: {}", phase.read_percent);
    // Unpaced, the part keeps its rate and the others run as fast as they go.
    let phase = planned(parts.clone(), None).unwrap();
    assert_eq!(phase.pacing, None);
    assert_eq!(phase.workers[0].mixed.as_ref().unwrap().own_rate.map(|r| r.ops_per_sec), Some(100.0));
    // A part with jobs of its own (vdbench's streams=) runs alone on that many workers, each with its slice.
    let streamed = PhaseSpec { jobs: Some(2), queue: Some("sd2".into()), ..part(RwMode::Write, None) };
    let phase = planned(vec![part(RwMode::RandRead, None), streamed], None).unwrap();
    assert_eq!(phase.workers.len(), 3);
    let slices: Vec<_> = phase.workers[1..].iter().map(|w| w.workload.regions[0].start).collect();
    assert_eq!(slices, [0, 8 << 20], "the two halves of the 16 MiB");
    let shares: Vec<_> = phase.workers.iter().map(|w| w.mixed.as_ref().unwrap().share).collect();
    assert_eq!(shares, [0.5, 0.25, 0.25]);
    // Own rates that leave the others nothing of the phase's rate are refused with the reason.
    let err = planned(parts, Some(100)).unwrap_err();
    assert!(err.contains("leave nothing of the phase's rate-iops"), "{err}");
}
