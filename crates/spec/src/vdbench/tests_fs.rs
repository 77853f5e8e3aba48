//! Tests of vdbench's run timing (`warmup=` before `elapsed=`, whole intervals) and of the file-system run
//! keywords built after the first reader: fwd `stopafter=`, `fileselect=poisson`, rd `operations=`.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::spec::{FileIo, FileOp, FileSelect, StopAfter};

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn secs(s: u64) -> Option<Duration> {
    Some(Duration::from_secs(s))
}

/// The (ramp, runtime) of every phase of a raw file whose rd has `rd` added.
fn raw_times(rd: &str) -> Vec<(Option<Duration>, Option<Duration>)> {
    let text = format!("sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max{rd}\n");
    parse(&text).unwrap().phases.iter().map(|p| (p.ramp, p.runtime)).collect()
}

/// A file-system file on `dir`: one fsd of two 64 KiB files, fwd1 (with `fwd` added), rd1 (with `rd`, its rate included, added).
fn fs_file(dir: &Path, fwd: &str, rd: &str) -> String {
    format!(
        "fsd=fsd1,anchor={},depth=1,width=1,files=2,size=64k\nfwd=fwd1,fsd=fsd1{fwd}\n\
         rd=rd1,fwd=fwd1{rd}\n",
        dir.display()
    )
}

#[test]
fn warmup_runs_before_elapsed_as_vdbench_reporter_counts_it() {
    // vdbench 5.04's Reporter counts elapsed intervals only once the warm-up is over: warmup + elapsed in all.
    assert_eq!(raw_times(",elapsed=2,warmup=2,interval=1"), vec![(secs(2), secs(2))]);
    assert_eq!(raw_times(",elapsed=10,warmup=30,interval=5"), vec![(secs(30), secs(10))]);
    // Without warmup= the first interval of elapsed is the warm-up.
    assert_eq!(raw_times(",elapsed=10,interval=2"), vec![(secs(2), secs(8))]);
    // Whole intervals: warmup=7 is 3 intervals of 2 s, elapsed=9 is 4 of them; a warm-up under one interval is one.
    assert_eq!(raw_times(",elapsed=9,warmup=7,interval=2"), vec![(secs(6), secs(8))]);
    assert_eq!(raw_times(",elapsed=4,warmup=1,interval=2"), vec![(secs(2), secs(4))]);
    // Without interval=, vdbench's is min(elapsed/2, 60) s: elapsed=30 (its default) is 15 s of warm-up and 15
    // measured, elapsed=10m is a minute of warm-up.
    assert_eq!(raw_times(""), vec![(secs(15), secs(15))]);
    assert_eq!(raw_times(",elapsed=10m"), vec![(secs(60), secs(540))]);
    assert_eq!(raw_times(",elapsed=9,warmup=3"), vec![(secs(4), secs(8))], "4 s intervals: warm-up rounded down");
    // A warm-up of zero is no warmup=.
    assert_eq!(raw_times(",elapsed=4,warmup=0,interval=2"), vec![(secs(2), secs(2))]);
}

#[test]
fn warmup_holds_for_every_curve_point_and_loop_value() {
    let times = raw_times(",iorate=curve,curve=(50,100),elapsed=3,warmup=2,interval=1");
    assert_eq!(times, vec![(secs(2), secs(3)); 3], "the maximum, then both points");
    let times = raw_times(",forxfersize=(4k,8k),elapsed=3,warmup=5,interval=1");
    assert_eq!(times, vec![(secs(5), secs(3)); 2]);
    let dir = tempfile::tempdir().unwrap();
    let rd = ",fwdrate=curve,curve=(50),forthreads=(1,2),elapsed=2,warmup=4,interval=1";
    let job = parse(&fs_file(dir.path(), "", rd)).unwrap();
    assert_eq!(job.phases.len(), 4);
    assert!(job.phases.iter().all(|p| (p.ramp, p.runtime) == (secs(4), secs(2))), "{:?}", job.phases);
}

#[test]
fn an_elapsed_time_with_nothing_to_measure_is_refused_with_the_reason() {
    // vdbench's RD_entry wants two elapsed intervals whether or not warmup= is given.
    let text = "sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,elapsed=2,warmup=5,interval=2\n";
    let err = parse(text).unwrap_err().to_string();
    assert!(err.contains("line 3") && err.contains("twice the interval"), "{err}");
    let text = "sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,elapsed=3,interval=2\n";
    let err = parse(text).unwrap_err().to_string();
    assert!(err.contains("line 3") && err.contains("twice the interval"), "{err}");
}

#[test]
fn stopafter_is_blocks_or_a_percentage_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let stop = |fwd: &str| {
        let job = parse(&fs_file(dir.path(), fwd, ",fwdrate=max")).unwrap();
        job.phases[0].fileset().unwrap().workloads[0].stopafter
    };
    // As vdbench's examples/filesys/random_read: fileio=random,fileselect=random,stopafter=100.
    assert_eq!(stop(",fileio=random,fileselect=random,stopafter=100"), Some(StopAfter::Transfers(100)));
    assert_eq!(stop(",fileio=sequential,stopafter=10%"), Some(StopAfter::Percent(10.0)));
    assert_eq!(stop(",stopafter=0"), Some(StopAfter::Transfers(u64::MAX)), "vdbench sets no limit at all");
    assert_eq!(stop(""), None);
    let err = parse(&fs_file(dir.path(), ",stopafter=lots", ",fwdrate=max")).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("stopafter") && err.contains("stopafter=10%"), "{err}");
}

#[test]
fn fileselect_poisson_is_vdbench_s_skew_with_its_midpoint() {
    let dir = tempfile::tempdir().unwrap();
    let select = |fwd: &str| {
        let job = parse(&fs_file(dir.path(), fwd, ",fwdrate=max")).unwrap();
        job.phases[0].fileset().unwrap().workloads[0].fileselect
    };
    assert_eq!(select(",fileselect=poisson"), Some(FileSelect::Poisson(3.0)));
    assert_eq!(select(",fileselect=(poisson,5)"), Some(FileSelect::Poisson(5.0)));
    // As vdbench's FwdEntry: 'skewed' was poisson's first name, and a number skews a random selection.
    assert_eq!(select(",fileselect=skewed"), Some(FileSelect::Poisson(3.0)));
    assert_eq!(select(",fileselect=(random,2)"), Some(FileSelect::Poisson(2.0)));
    assert_eq!(select(",fileselect=(sequential,2)"), Some(FileSelect::Sequential));
    let shared = fs_file(dir.path(), ",fileselect=poisson,fileio=(random,shared)", ",fwdrate=max");
    let err = parse(&shared).unwrap_err().to_string();
    assert!(err.contains("mutually exclusive"), "{err}");
}

#[test]
fn rd_operations_runs_each_listed_operation_with_a_share_of_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let fwd = ",operation=write,threads=4,fileio=random,fileselect=random";
    let job = parse(&fs_file(dir.path(), fwd, ",fwdrate=max,operations=(read,getattr)")).unwrap();
    assert_eq!(job.phases.len(), 1, "one run with both, not a loop");
    let w = &job.phases[0].fileset().unwrap().workloads;
    let got: Vec<_> = w.iter().map(|w| (w.name.clone().unwrap(), w.operation, w.threads)).collect();
    assert_eq!(
        got,
        vec![
            ("fwd1 read".to_string(), Some(FileOp::Read), Some(2)),
            ("fwd1 getattr".to_string(), Some(FileOp::Getattr), Some(2))
        ]
    );
    assert!(w.iter().all(|w| w.fileio == Some(FileIo::Random)), "the rest of the fwd is kept");
    // One operation replaces the fwd's, with all its threads; three share four threads as vdbench does (1 each).
    let one = parse(&fs_file(dir.path(), fwd, ",fwdrate=max,operations=read")).unwrap();
    let w = &one.phases[0].fileset().unwrap().workloads;
    assert_eq!((w.len(), w[0].operation, w[0].threads), (1, Some(FileOp::Read), Some(4)));
    let three = parse(&fs_file(dir.path(), fwd, ",fwdrate=max,operations=(read,write,getattr)")).unwrap();
    assert!(three.phases[0].fileset().unwrap().workloads.iter().all(|w| w.threads == Some(1)));
}

#[test]
fn rd_operations_refusals_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let err = |fwd: &str, rd: &str| parse(&fs_file(dir.path(), fwd, rd)).unwrap_err().to_string();
    let e = err("", ",fwdrate=max,operations=(read,chmod)");
    assert!(e.contains("line 3") && e.contains("operations") && e.contains("chmod"), "{e}");
    let e = err("", ",fwdrate=max,operations=read,foroperations=(read,write)");
    assert!(e.contains("mutually exclusive"), "{e}");
    let e = err(",rdpct=70,fileio=random", ",fwdrate=max,operations=(read,write)");
    assert!(e.contains("rdpct") && e.contains("one operation"), "{e}");
}

#[test]
fn fileio_sequential_delete_deletes_before_writing_and_refuses_rdpct_as_vdbench() {
    let dir = tempfile::tempdir().unwrap();
    let job = parse(&fs_file(dir.path(), ",operation=write,fileio=(seq,delete)", ",fwdrate=max")).unwrap();
    let w = &job.phases[0].fileset().unwrap().workloads[0];
    assert_eq!((w.fileio, w.delete_first), (Some(FileIo::Sequential), Some(true)));
    let err = parse(&fs_file(dir.path(), ",rdpct=50,fileio=(sequential,delete)", ",fwdrate=max")).unwrap_err();
    assert!(err.to_string().contains("mutually exclusive"), "{err}");
    let err = parse(&fs_file(dir.path(), ",fileio=(random,delete)", ",fwdrate=max")).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("fileio"), "{err}");
}

#[test]
fn fileselect_random_once_takes_each_file_once_in_random_order() {
    let dir = tempfile::tempdir().unwrap();
    let select = |fwd: &str| {
        let job = parse(&fs_file(dir.path(), fwd, ",fwdrate=max")).unwrap();
        job.phases[0].fileset().unwrap().workloads[0].fileselect
    };
    assert_eq!(select(",fileselect=(random,once)"), Some(FileSelect::RandomOnce));
    // vdbench never uses the Poisson skew with once.
    assert_eq!(select(",fileselect=(poisson,once)"), Some(FileSelect::RandomOnce));
    assert_eq!(select(",fileselect=(sequential,once)"), Some(FileSelect::Once));
}

#[test]
fn format_lists_with_only_end_the_phase_after_the_format() {
    // Issue 29: format=(clean,only) and format=(restart,only) were refused ("format takes one of …").
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fileset = |rd: &str| {
        let job = parse(&fs_file(dir, "", &format!(",fwdrate=max,elapsed=2,interval=1,{rd}"))).unwrap();
        job.phases[0].fileset().unwrap().clone()
    };
    let restart = fileset("format=(restart,only)");
    assert_eq!((restart.format, restart.workloads.len()), (Some(crate::spec::FormatMode::Restart), 0));
    assert!(restart.check().is_ok(), "a restart alone is a format step");
    assert_eq!(fileset("format=(clean,only)").format, Some(crate::spec::FormatMode::Clean));
    assert_eq!(fileset("format=(yes,only)").format, Some(crate::spec::FormatMode::Only));
    let restart_and_run = fileset("format=restart");
    assert_eq!(restart_and_run.workloads.len(), 1, "without only the workload runs after the format");
    let err = parse(&fs_file(dir, "", ",fwdrate=max,format=(no,only)")).unwrap_err().to_string();
    assert!(err.contains("(restart,only)"), "{err}");
}

#[test]
fn free_text_after_the_last_rd_is_a_notice() {
    let text = "sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,elapsed=2\n\nThis runs one rd.\n";
    let job = parse(text).unwrap();
    assert_eq!(job.phases.len(), 1);
    assert!(job.notices.iter().any(|n| n.contains("job.vdb:5: free text after the last rd")), "{:?}", job.notices);
}
