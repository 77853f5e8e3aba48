//! Tests of vdbench's raw access shapes in the reader: `seekpct=eof` (one sequential pass, then done),
//! `stride=(min,max)`, `hotband=(lo,hi)` and `concatenatesds=yes`, and the combinations refused with a reason.

use std::path::Path;

use super::*;
use crate::spec::{DistributionSpec, RwMode, SizeOrPercent, StrideSpec};
use crate::units::Bytes;

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn seekpct_eof_and_minus_one_are_one_sequential_pass() {
    for seek in ["eof", "EOF", "-1"] {
        let text =
            format!("sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,rdpct=0,seekpct={seek}\nrd=rd1,wd=wd1,iorate=max\n");
        let phase = &parse(&text).unwrap().phases[0];
        assert_eq!((phase.rw, phase.io_passes, phase.percentage_random), (Some(RwMode::Write), Some(1.0), None));
    }
    // maxdata below one pass ends it sooner; above, the end of the lun does.
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=eof\nrd=rd1,wd=wd1,iorate=max,maxdata=0.5\n";
    assert_eq!(parse(text).unwrap().phases[0].io_passes, Some(0.5));
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=eof\nrd=rd1,wd=wd1,iorate=max,maxdata=3\n";
    assert_eq!(parse(text).unwrap().phases[0].io_passes, Some(1.0));
    // forseekpct=eof too, and a plain loop value is no pass at all.
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,forseekpct=(eof,0)\n";
    let passes: Vec<_> = parse(text).unwrap().phases.iter().map(|p| p.io_passes).collect();
    assert_eq!(passes, [Some(1.0), None]);
}

#[test]
fn seekpct_eof_on_several_sds_is_a_pass_of_each() {
    let text = "sd=sd1,lun=/dev/nodisk1,size=8m\nsd=sd2,lun=/dev/nodisk1,size=8m,offset=8m\n\
                wd=wd1,sd=(sd1,sd2),rdpct=0,seekpct=eof\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    let passes: Vec<_> = phase.parts.as_ref().unwrap().iter().map(|p| p.io_passes).collect();
    assert_eq!(passes, [Some(1.0), Some(1.0)]);
}

#[test]
fn seekpct_eof_beside_other_workloads_is_refused_with_the_reason() {
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=eof\nwd=wd2,sd=sd1\nrd=rd1,wd=wd*,iorate=max\n";
    let err = error(text);
    assert!(err.contains("line 4") && err.contains("wd1 on sd1 has seekpct=eof and wd2 on sd1 does not"), "{err}");
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=eof\nwd=wd2,sd=sd1,seekpct=eof\nrd=rd1,wd=wd*,iorate=max\n";
    assert!(error(text).contains("several seekpct=eof workloads on sd sd1"), "{}", error(text));
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=eot\nrd=rd1,wd=wd1,iorate=max\n";
    assert!(error(text).contains("eof or -1"), "{}", error(text));
}

#[test]
fn stride_is_skip_sequential_in_place_of_random_seeks() {
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,rdpct=0,stride=(8k,64k)\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    assert_eq!(phase.rw, Some(RwMode::RandWrite));
    assert_eq!(phase.stride, Some(StrideSpec { min: Bytes::kib(8), max: Bytes::kib(64) }));
    // Sequential I/O takes no random seeks, so there is nothing to skip: vdbench ignores it, with a notice here.
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=0,stride=(8k,64k)\nrd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    assert_eq!(job.phases[0].stride, None);
    assert!(job.notices.iter().any(|n| n.contains("stride= has no effect")), "{:?}", job.notices);
    for bad in ["(64k,8k)", "8k", "(8k,64k,1m)", "(a,b)"] {
        let text = format!("sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,stride={bad}\nrd=rd1,wd=wd1,iorate=max\n");
        let err = error(&text);
        assert!(err.contains("line 2") && err.contains("stride=(min,max)"), "{bad}: {err}");
    }
}

#[test]
fn hotband_is_the_wd_s_range_with_vdbench_s_skew() {
    let text = "sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,rdpct=0,hotband=(25,75)\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    assert_eq!(phase.distribution, Some(DistributionSpec::Hotband));
    assert_eq!((phase.offset, phase.size), (Some(SizeOrPercent::Bytes(Bytes::mib(16))), Some(Bytes::mib(32))));
    // Within the sd's range, as a wd's range= is; a stride gives way to the band, as in vdbench.
    let text = "sd=sd1,lun=/dev/nodisk,size=64m,range=(50,100)\nwd=wd1,sd=sd1,hotband=(0,50),stride=(8k,16k)\n\
                rd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    let phase = &job.phases[0];
    assert_eq!((phase.offset, phase.size), (Some(SizeOrPercent::Bytes(Bytes::mib(32))), Some(Bytes::mib(16))));
    assert_eq!(phase.stride, None);
    assert!(job.notices.iter().any(|n| n.contains("stride= has no effect with hotband=")), "{:?}", job.notices);
    // Sequential I/O takes no random seeks: the band is only a range then.
    let text = "sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,seekpct=seq,hotband=(0,50)\nrd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    assert_eq!((job.phases[0].distribution.as_ref(), job.phases[0].size), (None, Some(Bytes::mib(32))));
    assert!(job.notices.iter().any(|n| n.contains("hotband= has no effect on sequential")), "{:?}", job.notices);
    for (bad, why) in [
        ("hotband=(10,20),range=(0,50)", "give hotband= or range=, not both"),
        ("hotband=(90,110)", "expected hotband=(min,max)"),
        ("hotband=10", "expected hotband=(min,max)"),
    ] {
        let text = format!("sd=sd1,lun=/dev/nodisk,size=64m\nwd=wd1,sd=sd1,{bad}\nrd=rd1,wd=wd1,iorate=max\n");
        let err = error(&text);
        assert!(err.contains("line 2") && err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn concatenated_sds_are_one_lun_of_the_wd_with_its_threads() {
    let sds = "concatenatesds=yes\nsd=default,size=4m,threads=2\nsd=sd1,lun=/dev/nodisk1\nsd=sd2,lun=/dev/nodisk2\n";
    let text = format!("{sds}wd=wd1,sd=(sd1,sd2),threads=6,hotband=(0,100)\nrd=rd1,wd=wd1,iorate=max\n");
    let phase = &parse(&text).unwrap().phases[0];
    assert_eq!(phase.parts, None, "one generator, not one per sd");
    // Two luns that do not exist: files of those names in streamcap's work directory, both in the workload.
    assert_eq!(phase.file_names, Some(vec!["nodisk1".to_string(), "nodisk2".to_string()]));
    assert_eq!((phase.size, phase.iodepth), (Some(Bytes::mib(8)), Some(6)));
    assert_eq!(phase.distribution, Some(DistributionSpec::Hotband));
    // The rd's threads= is shared by all its wds: one queue.
    let text = format!("{sds}wd=wd1,sd=sd*\nwd=wd2,sd=sd1\nrd=rd1,wd=wd*,iorate=max,threads=12\n");
    let phase = &parse(&text).unwrap().phases[0];
    let parts = phase.parts.as_ref().unwrap();
    assert_eq!(
        parts.iter().map(|p| (p.queue.clone().unwrap(), p.iodepth)).collect::<Vec<_>>(),
        [("concatenated sds".to_string(), Some(12)), ("concatenated sds".to_string(), Some(12))]
    );
}

#[test]
fn concatenation_refuses_what_would_cut_across_the_luns() {
    let sds = "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=4m\nsd=sd2,lun=/dev/nodisk2,size=";
    for (rest, why) in [
        ("4m\nwd=wd1,sd=sd*\nrd=rd1,wd=wd1,iorate=max\n", "each wd needs threads="),
        ("8m\nwd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\n", "sd1=4 MiB, sd2=8 MiB"),
        ("4m\nwd=wd1,sd=sd*,threads=2,range=(0,50)\nrd=rd1,wd=wd1,iorate=max\n", "cut across the luns"),
        ("4m\nwd=wd1,sd=sd*,threads=2,hotband=(0,50)\nrd=rd1,wd=wd1,iorate=max\n", "use hotband=(0,100)"),
        ("4m\nwd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\nvalidate=yes\n", "validate"),
    ] {
        let err = error(&format!("{sds}{rest}"));
        assert!(err.contains(why), "{why}: {err}");
    }
    // Without concatenation a wd's threads= stays refused, as vdbench allows it only there.
    let err = error("sd=sd1,lun=/dev/nodisk1,size=4m\nwd=wd1,sd=sd1,threads=2\nrd=rd1,wd=wd1,iorate=max\n");
    assert!(err.contains("threads per workload without concatenatesds=yes"), "{err}");
}

#[test]
fn concatenated_sds_too_large_together_are_refused_not_a_panic() {
    // Found reading the mapping while fuzzing (then run on the fuzz binary): two sds of 10^19 bytes each
    // overflowed the size of their concatenation.
    let text = "concatenatesds=yes\nsd=default,size=10000000000000000000\nsd=sd1,lun=/dev/nodisk1\n\
                sd=sd2,lun=/dev/nodisk2\nwd=wd1,sd=(sd1,sd2),threads=2\nrd=rd1,wd=wd1,iorate=max\n";
    let err = error(text);
    assert!(err.contains("line 5") && err.contains("more than 16 EiB together"), "{err}");
}

#[test]
fn luns_in_several_directories_become_files_in_the_target_given() {
    let (a, b, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let text = format!(
        "sd=sd1,lun={}/lun1,size=4m\nsd=sd2,lun={}/lun2,size=4m\nwd=wd1,sd=sd*\nrd=rd1,wd=wd1,iorate=max\n",
        a.path().display(),
        b.path().display()
    );
    let err = error(&text);
    assert!(err.contains("luns in different places") && err.contains("give a directory as the target"), "{err}");
    let options = ReadOptions { target: Some(target.path().to_path_buf()), ..ReadOptions::default() };
    let job = parse_vdbench_job(Path::new("job.vdb"), &text, &options).unwrap();
    assert_eq!(job.target.as_deref(), Some(target.path()));
    let names: Vec<_> = job.phases[0].parts.as_ref().unwrap().iter().map(|p| p.file_names.clone().unwrap()).collect();
    assert_eq!(names, [vec!["lun1".to_string()], vec!["lun2".to_string()]]);
    assert!(job.notices.iter().any(|n| n.contains("in the target given")), "{:?}", job.notices);
    // Two luns of one name would be one file there.
    let text = text.replace("lun2", "lun1");
    let err = parse_vdbench_job(Path::new("job.vdb"), &text, &options).unwrap_err().to_string();
    assert!(err.contains("two luns are named lun1"), "{err}");
}
