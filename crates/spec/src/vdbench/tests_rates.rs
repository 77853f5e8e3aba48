//! Tests of the vdbench keywords that shape where and how fast a raw wd's I/O goes, in the reader: the Poisson
//! seek (`seekpct=poisson`, `seekpct=(poisson,midpoint)`), a wd's own rate and priority (`iorate=`,
//! `priority=`) and sequential streams (`streams=`).

use std::path::Path;

use super::*;
use crate::spec::{ArrivalSpec, DistributionSpec};

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

/// The phase of one wd with `wd` appended to its record (and `sd` to its sd's).
fn one_wd(sd: &str, wd: &str) -> Result<JobSpec, SpecError> {
    parse(&format!("sd=sd1,lun=/dev/nodisk,size=64m{sd}\nwd=wd1,sd=sd1,rdpct=0{wd}\nrd=rd1,wd=wd1,iorate=max\n"))
}

#[test]
fn seekpct_poisson_is_random_with_vdbench_s_midpoint() {
    let distribution = |wd: &str| one_wd("", wd).unwrap().phases[0].distribution.clone();
    assert_eq!(distribution(",seekpct=poisson"), Some(DistributionSpec::Poisson(3.0)), "vdbench's default midpoint");
    assert_eq!(distribution(",seekpct=(poisson,5)"), Some(DistributionSpec::Poisson(5.0)));
    assert_eq!(distribution(",seekpct=(p,0.5)"), Some(DistributionSpec::Poisson(0.5)), "a prefix, as vdbench reads it");
    // As WD_entry.parseSeekpct: poisson makes the seeks all random, a number before it is overridden.
    let phase = one_wd("", ",seekpct=(50,poisson)").unwrap().phases.remove(0);
    assert_eq!((phase.percentage_random, phase.distribution), (None, Some(DistributionSpec::Poisson(3.0))));
    assert_eq!(phase.rw, Some(crate::spec::RwMode::RandWrite));
    // ... and a later sequential word makes them sequential again, with nothing to skew.
    let phase = one_wd("", ",seekpct=(poisson,4,sequential)").unwrap().phases.remove(0);
    assert_eq!((phase.rw, phase.distribution), (Some(crate::spec::RwMode::Write), None));
    assert_eq!(distribution(",seekpct=random"), None);
}

#[test]
fn poisson_gives_way_where_vdbench_s_does_and_says_so() {
    for (sd, wd, why) in [
        ("", ",seekpct=poisson,hotband=(10,20)", "with hotband= or stride="),
        ("", ",seekpct=poisson,stride=(8k,16k)", "with hotband= or stride="),
        (",align=8k", ",seekpct=poisson", "with the sd's align="),
    ] {
        let job = one_wd(sd, wd).unwrap();
        assert_ne!(job.phases[0].distribution, Some(DistributionSpec::Poisson(3.0)), "{wd}");
        let notice = format!("seekpct=poisson has no effect {why}");
        assert!(job.notices.iter().any(|n| n.contains(&notice)), "{wd}: {:?}", job.notices);
    }
}

#[test]
fn a_poisson_midpoint_of_zero_or_less_is_refused_with_the_reason() {
    for bad in ["(poisson,0)", "(poisson,0.0)"] {
        let err =
            error(&format!("sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,seekpct={bad}\nrd=rd1,wd=wd1,iorate=max\n"));
        assert!(err.contains("line 2") && err.contains("seekpct") && err.contains("above 0"), "{bad}: {err}");
    }
}

/// An rd over wd1 and wd2 on two sds, with `wd1`, `wd2` appended to their records and `rd` to the rd's.
fn two_wds(wd1: &str, wd2: &str, rd: &str) -> Result<JobSpec, SpecError> {
    parse(&format!(
        "sd=sd1,lun=/dev/nodisk1,size=64m\nsd=sd2,lun=/dev/nodisk2,size=64m\nwd=wd1,sd=sd1,rdpct=100{wd1}\n\
         wd=wd2,sd=sd2,rdpct=0{wd2}\nrd=rd1,wd=(wd1,wd2){rd}\n"
    ))
}

#[test]
fn a_wd_s_own_iorate_is_a_part_with_a_rate_of_its_own_and_no_share() {
    let job = two_wds(",iorate=100,priority=1", ",priority=2", ",iorate=300").unwrap();
    let phase = &job.phases[0];
    assert_eq!(phase.rate_iops, Some(300), "the rd's rate; the plan takes the wd's own out of it");
    let parts = phase.parts.as_ref().unwrap();
    assert_eq!(
        (parts[0].rate_iops, parts[0].skew, parts[0].rate_process),
        (Some(100), None, Some(ArrivalSpec::Poisson))
    );
    assert_eq!((parts[1].rate_iops, parts[1].skew), (None, Some(100.0)), "the other wd has all the shares");
    assert_eq!(phase.vdbench.hold_shares, Some(true), "vdbench runs its waiter when a wd says iorate= or priority=");
    assert!(job.notices.iter().any(|n| n.contains("priority= orders its queue")), "{:?}", job.notices);
    // Under max too, and a wd alone with its rate is a part (its rate is its own, not the rd's).
    let job = two_wds(",iorate=50,priority=1", ",priority=2", ",iorate=max").unwrap();
    assert_eq!(job.phases[0].parts.as_ref().unwrap()[0].rate_iops, Some(50));
    let alone =
        parse("sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,iorate=20,priority=1\nrd=rd1,wd=wd1,iorate=max\n")
            .unwrap();
    assert_eq!(alone.phases[0].parts.as_ref().map(|p| p[0].rate_iops), Some(Some(20)));
    // Priorities alone change no rate, but vdbench's waiter holds the skew at max.
    let job = two_wds(",priority=2", ",priority=1", ",iorate=max").unwrap();
    assert_eq!(job.phases[0].vdbench.hold_shares, Some(true));
    assert!(job.phases[0].parts.as_ref().unwrap().iter().all(|p| p.rate_iops.is_none()));
}

#[test]
fn rates_and_priorities_vdbench_refuses_are_refused_with_its_reason() {
    for (wd1, wd2, why) in [
        (",iorate=100", "", "also needs priority="),
        (",iorate=100,skew=50,priority=1", ",priority=2", "mutually exclusive"),
        (",priority=0", ",priority=1", "not 0"),
        (",iorate=100,priority=1", "", "every wd of the rd needs a priority of its own"),
        (",priority=1", ",priority=1", "wd1=1, wd2=1"),
        (",iorate=100,priority=2", ",priority=1", "wds with iorate= must come first"),
        (",iorate=0,priority=1", ",priority=2", "above 0"),
    ] {
        let err = two_wds(wd1, wd2, ",iorate=max").unwrap_err().to_string();
        assert!(err.contains("line "), "{wd1} {wd2}: {err}");
        assert!(err.contains(why), "{wd1} {wd2}: {err}");
    }
    // As in vdbench's code (its guide asks for 1, 2, … in sequence, its code does not): 1 and 3 run.
    assert!(two_wds(",priority=1", ",priority=3", ",iorate=max").is_ok());
}

#[test]
fn streams_are_workers_each_sequential_over_its_part_of_the_lun() {
    let job = one_wd(",threads=6", ",streams=4").unwrap();
    let phase = &job.phases[0];
    // Random by default, but a stream is sequential whatever seekpct says; 6 threads raised to 8, 2 a stream.
    assert_eq!((phase.rw, phase.jobs, phase.iodepth), (Some(crate::spec::RwMode::Write), Some(4), Some(2)));
    assert_eq!(phase.distribution, None);
    assert!(job.notices.iter().any(|n| n.contains("6 threads raised to 8")), "{:?}", job.notices);
    assert!(job.notices.iter().any(|n| n.contains("sequential within its stream")), "{:?}", job.notices);
    let phase = one_wd(",threads=8", ",seekpct=eof,streams=2").unwrap().phases.remove(0);
    assert_eq!((phase.jobs, phase.iodepth, phase.io_passes), (Some(2), Some(4), Some(1.0)));
}

#[test]
fn streams_vdbench_refuses_are_refused_and_several_sds_each_get_their_streams() {
    let err = one_wd("", ",streams=1").unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("at least two streams"), "{err}");
    let err = two_wds(",streams=2", "", ",iorate=max").unwrap_err().to_string();
    assert!(err.contains("only one wd may run in an rd with streams="), "{err}");
    // A wd over two sds: each sd is cut into its own streams, as vdbench cuts each sd.
    let job = parse(
        "sd=sd1,lun=/dev/nodisk1,size=64m\nsd=sd2,lun=/dev/nodisk2,size=64m\nwd=wd1,sd=sd*,streams=2\n\
         rd=rd1,wd=wd1,iorate=max\n",
    )
    .unwrap();
    let jobs: Vec<_> = job.phases[0].parts.as_ref().unwrap().iter().map(|p| (p.jobs, p.iodepth)).collect();
    assert_eq!(jobs, [(Some(2), Some(4)), (Some(2), Some(4))]);
}

#[test]
fn streams_over_concatenated_sds_share_the_wd_s_threads() {
    // cloudbytestorage's Raw-Streamed-workload-Conf, with sizes: 40 threads over 10 streams of the concatenation.
    let text = |threads: u32, streams: u32| {
        format!(
            "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=20m\nsd=sd2,lun=/dev/nodisk2,size=20m\n\
             wd=wd1,sd=sd*,rdpct=0,skew=100,streams={streams},threads={threads}\nrd=rd1,wd=wd*,iorate=max\n"
        )
    };
    let job = parse(&text(40, 10)).unwrap();
    let phase = &job.phases[0];
    assert_eq!((phase.jobs, phase.iodepth, phase.parts.is_none()), (Some(10), Some(4), true));
    assert_eq!(phase.file_names.as_ref().map(Vec::len), Some(2), "the streams run over both luns, end to end");
    assert!(!job.notices.iter().any(|n| n.contains("raised")), "the sds' threads are not the ones used");
    // 6 threads over 4 streams: 2 each, as vdbench raises 6 to 8.
    assert_eq!(parse(&text(6, 4)).unwrap().phases[0].iodepth, Some(2));
}
