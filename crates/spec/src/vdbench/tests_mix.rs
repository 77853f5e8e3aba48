//! Tests of the vdbench reader on runs of several workload generators (wds, sds, hosts) in one rd, on `pause=`,
//! on `iorate=curve` with a rate process, and on reporting every problem of a file at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::spec::{ArrivalSpec, PhaseSpec};

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn parts(phase: &PhaseSpec) -> Vec<(String, Option<f64>, String)> {
    let parts = phase.parts.as_ref().expect("a phase with parts");
    parts.iter().map(|p| (p.name.clone().unwrap(), p.skew, p.queue.clone().unwrap())).collect()
}

#[test]
fn several_wds_on_one_sd_share_its_threads_by_skew() {
    let text = "sd=sd1,lun=/dev/nodisk,size=1g,threads=4\nwd=wd1,sd=sd1,skew=70,rdpct=100\nwd=wd2,sd=sd1,rdpct=0\n\
                wd=wd3,sd=sd1,xfersize=64k\nrd=rd1,wd=wd*,iorate=1000\n";
    let job = parse(text).unwrap();
    assert_eq!(job.target, Some(PathBuf::from("/dev/nodisk")), "a device path stays the target, even if absent");
    let phase = &job.phases[0];
    assert_eq!(phase.rate_iops, Some(1000));
    assert_eq!(phase.rate_process, Some(ArrivalSpec::Poisson));
    assert_eq!(
        parts(phase),
        [
            ("wd1 on sd1".into(), Some(70.0), "sd1".into()),
            ("wd2 on sd1".into(), Some(15.0), "sd1".into()),
            ("wd3 on sd1".into(), Some(15.0), "sd1".into()),
        ]
    );
    let p = phase.parts.as_ref().unwrap();
    assert!(p.iter().all(|p| p.file_names.is_none() && p.iodepth == Some(4)));
    assert_eq!(p[1].rw, Some(crate::spec::RwMode::RandWrite));
    phase.check().unwrap();
}

#[test]
fn a_wd_over_several_sds_spreads_its_skew_and_the_luns_share_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    std::fs::write(dir.path().join("b"), vec![0u8; 8192]).unwrap();
    let text = format!(
        "sd=sd1,lun={d}/a,size=1m\nsd=sd2,lun={d}/b\nwd=wd1,sd=(sd1,sd2),skew=60\nwd=wd2,sd=sd2\n\
         rd=rd1,wd=(wd1,wd2),iorate=curve,curve=(50)\n"
    );
    let job = parse(&text).unwrap();
    assert_eq!(job.target.as_deref(), Some(dir.path()));
    assert!(job.notices.iter().any(|n| n.contains("own work directory")), "{:?}", job.notices);
    assert_eq!(job.phases.len(), 2, "the maximum, then the 50% point");
    let point = &job.phases[1];
    assert_eq!(point.vdbench.rate_percent_of_max, Some(50.0));
    assert_eq!(point.rate_process, Some(ArrivalSpec::Poisson), "a curve point is paced like iorate=N");
    point.check().unwrap();
    let p = point.parts.as_ref().unwrap();
    let skews: Vec<f64> = p.iter().map(|p| p.skew.unwrap()).collect();
    assert_eq!(skews, [30.0, 30.0, 40.0]);
    let files: Vec<&str> = p.iter().map(|p| p.file_names.as_ref().unwrap()[0].as_str()).collect();
    assert_eq!(files, ["a", "b", "b"]);
    assert_eq!(p[1].size, Some(crate::units::Bytes(8192)), "an existing lun keeps its size");
}

#[test]
fn local_hosts_each_run_the_workloads_and_remote_ones_are_refused() {
    let text = "hd=default,vdbench=/opt/vdbench,shell=vdbench\nhd=one,system=localhost\nhd=two,system=127.0.0.1\n\
                sd=sd1,lun=/tmp/x,size=1g\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    let p = parts(&job.phases[0]);
    assert_eq!(p[0], ("wd1 on sd1 on one".into(), Some(50.0), "sd1 on one".into()));
    assert_eq!(p[1], ("wd1 on sd1 on two".into(), Some(50.0), "sd1 on two".into()));
    let err = parse("hd=far,system=10.1.1.1\nsd=sd1,lun=/tmp/x\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("another machine") && err.contains("line 1"), "{err}");
}

#[test]
fn skews_that_do_not_add_up_are_refused_with_the_list() {
    let text = "sd=sd1,lun=/tmp/x\nwd=wd1,sd=sd1,skew=70\nwd=wd2,sd=sd1,skew=20\nrd=rd1,wd=(wd1,wd2),iorate=max\n";
    let err = parse(text).unwrap_err().to_string();
    assert!(err.contains("line 4") && err.contains("wd1=70, wd2=20") && err.contains("add up to 90"), "{err}");
}

#[test]
fn pause_delays_the_next_run() {
    let text = "sd=sd1,lun=/tmp/x\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,elapsed=10,pause=5\n\
                rd=rd2,wd=wd1,iorate=max,elapsed=10\n";
    let job = parse(text).unwrap();
    assert_eq!(job.phases[0].start_delay, None);
    assert_eq!(job.phases[1].start_delay, Some(Duration::from_secs(5)));
}

#[test]
fn every_problem_of_a_file_is_reported_at_once() {
    let text = "sd=sd1,lun=/tmp/x,sizze=1g\nwd=wd1,sd=sd1,xfersize=4k\nwd=wd2,sd=sd1,rhpct=20\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=1,interval=1\nrd=rd2,wd=wd1,iorate=fast\nrd=rd3,wd=wd2,iorate=max\n";
    let err = parse(text).unwrap_err().to_string();
    for expected in
        ["line 1", "'sizze'", "line 3: keyword 'rhpct'", "line 4", "twice the interval", "line 5", "'iorate'"]
    {
        assert!(err.contains(expected), "{expected} missing from: {err}");
    }
}

#[test]
fn range_narrows_the_sd_and_a_wd_range_replaces_the_sds() {
    use crate::spec::SizeOrPercent;
    use crate::units::Bytes;
    let text = "sd=sd1,lun=/dev/nodisk,size=1g,range=(0,50)\nwd=wd1,sd=sd1,range=(50,100)\n\
                rd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    // "WD overrides SD" (vdbench's WG_entry.calculateContext): the second half of the lun, not of the sd's half.
    assert_eq!(phase.offset, Some(SizeOrPercent::Bytes(Bytes::mib(512))), "50% of 1 GiB");
    assert_eq!(phase.size, Some(Bytes::mib(512)));
    let text = "sd=sd1,lun=/dev/nodisk,size=1g,range=(0,50)\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    assert_eq!((phase.offset, phase.size), (Some(SizeOrPercent::Bytes(Bytes(0))), Some(Bytes::mib(512))));
    // A lun of unknown size: percentages, as the plan takes them for a file or device.
    let text = "sd=sd1,lun=/dev/nodisk\nwd=wd1,sd=sd1,range=(10,30)\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    assert_eq!((phase.offset, phase.size_percent), (Some(SizeOrPercent::Percent(10.0)), Some(20.0)));
    let text = "sd=sd1,lun=/dev/nodisk,range=(0,100)\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n";
    assert_eq!(parse(text).unwrap().phases[0].offset, None, "range=(0,100) is the whole lun");
    let err = parse("sd=sd1,lun=/x/y\nwd=wd1,sd=sd1,range=(30,10)\nrd=rd1,wd=wd1,iorate=max\n").unwrap_err();
    assert!(err.to_string().contains("line 2") && err.to_string().contains("min below max"), "{err}");
}

#[test]
fn an_fwd_over_several_fsds_runs_on_each_with_its_threads_spread() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let text = format!(
        "fsd=fsd1,anchor={d},depth=1,width=2,files=4,size=4k\nfsd=fsd2,anchor={d},depth=1,width=2,files=4,size=4k\n\
         fwd=fwd1,fsd=(fsd1,fsd2),operation=read,threads=3,skew=60\nfwd=fwd2,fsd=fsd1,operation=write\n\
         rd=rd1,fwd=(fwd1,fwd2),fwdrate=100,format=yes\n"
    );
    let job = parse(&text).unwrap();
    let set = job.phases[0].fileset().unwrap();
    type Row<'a> = (Option<&'a str>, Option<&'a str>, Option<u32>, Option<f64>);
    let w: Vec<Row> = set.workloads.iter().map(|w| (w.name.as_deref(), w.tree.as_deref(), w.threads, w.skew)).collect();
    assert_eq!(
        w,
        [
            (Some("fwd1 on fsd1"), Some("fsd1"), Some(2), Some(30.0)),
            (Some("fwd1 on fsd2"), Some("fsd2"), Some(2), Some(30.0)),
            (Some("fwd2"), Some("fsd1"), None, None),
        ]
    );
    assert_eq!(set.trees.len(), 2);
}

/// abort_failed_skew= (it had no effect): every raw phase carries the limit for the skew check after the run; a
/// value that is not a percent is refused with its line; on fwds it has no effect yet, and says so.
#[test]
fn abort_failed_skew_sets_the_skew_limit_of_every_raw_phase() {
    let raw = "sd=sd1,lun=/dev/nodisk,size=1g\nsd=sd2,lun=/dev/nodisk2,size=1g\nwd=wd1,sd=sd1,skew=80\n\
               wd=wd2,sd=sd2\nrd=rd1,wd=wd*,iorate=max\nrd=rd2,wd=wd*,iorate=100\n";
    let job = parse(&format!("abort_failed_skew=2.5\n{raw}")).unwrap();
    assert!(job.phases.iter().all(|p| p.vdbench.skew_limit == Some(2.5)), "{:?}", job.phases);
    assert!(!job.notices.iter().any(|n| n.contains("abort_failed_skew")), "{:?}", job.notices);
    assert!(parse(raw).unwrap().phases.iter().all(|p| p.vdbench.skew_limit.is_none()));
    let err = parse(&format!("abort_failed_skew=lots\n{raw}")).unwrap_err().to_string();
    assert!(err.contains("line 1") && err.contains("abort_failed_skew=lots is not a number"), "{err}");
    let fs = "abort_failed_skew=2\nfsd=fsd1,anchor=/tmp,depth=1,width=1,files=2,size=64k\n\
              fwd=fwd1,fsd=fsd1,operation=read\nrd=rd1,fwd=fwd1,fwdrate=max,format=yes\n";
    let job = parse(fs).unwrap();
    assert!(job.phases.iter().all(|p| p.vdbench.skew_limit.is_none()));
    assert!(job.notices.iter().any(|n| n.contains("abort_failed_skew=2 has no effect on fwds")), "{:?}", job.notices);
}
