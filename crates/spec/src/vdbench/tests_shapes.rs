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
    assert_eq!(phase.vdbench.stride, Some(StrideSpec { min: Bytes::kib(8), max: Bytes::kib(64) }));
    // Sequential I/O takes no random seeks, so there is nothing to skip: vdbench ignores it, with a notice here.
    let text = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,seekpct=0,stride=(8k,64k)\nrd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    assert_eq!(job.phases[0].vdbench.stride, None);
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
    // In place of the sd's range, as a wd's range= is ("WD overrides SD"); a stride gives way to the band, as in
    // vdbench.
    let text = "sd=sd1,lun=/dev/nodisk,size=64m,range=(50,100)\nwd=wd1,sd=sd1,hotband=(0,50),stride=(8k,16k)\n\
                rd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text).unwrap();
    let phase = &job.phases[0];
    assert_eq!((phase.offset, phase.size), (Some(SizeOrPercent::Bytes(Bytes(0))), Some(Bytes::mib(32))));
    assert_eq!(phase.vdbench.stride, None);
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

/// sds of different sizes are laid end to end at their own sizes; a wd's range= or hotband= is a part of the
/// whole concatenation (vdbench's `calculateContext` on the concatenated sd), in bytes of it.
#[test]
fn concatenated_sds_keep_their_sizes_and_a_range_is_part_of_the_whole() {
    let sds = "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=8m\nsd=sd2,lun=/dev/nodisk2,size=24m\n";
    let phase = |wd: &str| parse(&format!("{sds}wd=wd1,sd=sd*,threads=2{wd}\nrd=rd1,wd=wd1,iorate=max\n")).unwrap();
    let whole = &phase("").phases[0];
    assert_eq!(whole.file_sizes, Some(vec![Bytes::mib(8), Bytes::mib(24)]));
    assert_eq!((whole.size, whole.offset), (Some(Bytes::mib(32)), None));
    let half = &phase(",range=(50,100)").phases[0];
    assert_eq!((half.size, half.offset), (Some(Bytes::mib(16)), Some(SizeOrPercent::Bytes(Bytes::mib(16)))));
    let band = &phase(",hotband=(10,20)").phases[0];
    let tenth = Bytes(32 << 20).0 / 10 / 4096 * 4096;
    assert_eq!((band.size, band.offset), (Some(Bytes(tenth)), Some(SizeOrPercent::Bytes(Bytes(tenth)))));
    assert_eq!(band.distribution, Some(DistributionSpec::Hotband));
}

/// Guards a ragged end: the range's start and length were rounded apart, so range=(24.99,100) ended 4 KiB short
/// of the end of the lun (one seekpct=eof pass of 8+24 MiB from there wrote 383 of its 384 transfers of 64 KiB).
#[test]
fn a_range_to_100_percent_ends_at_the_end_of_the_lun() {
    let sds = "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=8m\nsd=sd2,lun=/dev/nodisk2,size=24m\n";
    let text = format!("{sds}wd=wd1,sd=sd*,threads=2,range=(24.99,100)\nrd=rd1,wd=wd1,iorate=max\n");
    let phase = &parse(&text).unwrap().phases[0];
    let (Some(size), Some(SizeOrPercent::Bytes(offset))) = (phase.size, phase.offset) else { panic!("{phase:?}") };
    assert_eq!((offset.0 % 4096, offset.0 + size.0), (0, 32 << 20));
}

#[test]
fn concatenation_refuses_what_vdbench_refuses() {
    let sds = "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=4m\nsd=sd2,lun=/dev/nodisk2,size=";
    for (rest, why) in [
        ("4m\nwd=wd1,sd=sd*\nrd=rd1,wd=wd1,iorate=max\n", "each wd needs threads="),
        ("4m,range=(0,50)\nwd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\n", "'range=' parameter may not"),
        ("4m,offset=1m\nwd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\n", "'offset=' parameter may not"),
        ("4m\nwd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\nvalidate=yes\n", "validate"),
    ] {
        let err = error(&format!("{sds}{rest}"));
        assert!(err.contains(why), "{why}: {err}");
    }
    // An sd at two places: sd2 starts at 4 MiB for wd1 and at 0 for wd2.
    let err =
        error(&format!("{sds}4m\nwd=wd1,sd=(sd1,sd2),threads=2\nwd=wd2,sd=sd2,threads=2\nrd=rd1,wd=wd*,iorate=max\n"));
    assert!(err.contains("an SD (sd2) may not be reused in a non-matching concatenation"), "{err}");
    let same = format!("{sds}4m\nwd=wd1,sd=(sd1,sd2),threads=2\nwd=wd2,sd=sd1,threads=2\nrd=rd1,wd=wd*,iorate=max\n");
    assert!(parse(&same).is_ok(), "sd1 starts at 0 in both");
    // One concatenation, opened one way.
    let err = error(&format!("{sds}4m,openflags=o_direct\nwd=wd1,sd=(sd1,sd2),threads=2\nrd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("sd=sd1 and sd=sd2 are concatenated by wd=wd1 but their openflags= differ"), "{err}");
    // Neither size= nor an existing lun: the size is unknown.
    let err = error(
        "concatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=4m\nsd=sd2,lun=/dev/nodisk2\n\
         wd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\n",
    );
    assert!(err.contains("sd=sd2 (in the concatenation of wd=wd1): give size=") && err.contains("line 3"), "{err}");
    // Without concatenation a wd's threads= stays refused, as vdbench allows it only there.
    let err = error("sd=sd1,lun=/dev/nodisk1,size=4m\nwd=wd1,sd=sd1,threads=2\nrd=rd1,wd=wd1,iorate=max\n");
    assert!(err.contains("threads per workload without concatenatesds=yes"), "{err}");
}

/// A concatenated wd on two hosts runs on each over the whole concatenation, with half its threads (raised to a
/// multiple of the hosts first) and half its skew; a sequential one runs on the first host only, with all.
#[test]
fn a_concatenated_wd_spreads_its_threads_over_its_hosts() {
    let text = |seek: &str| {
        format!(
            "concatenatesds=yes\nhd=h1,system=far1\nhd=h2,system=far2\nsd=sd1,lun=/dev/nodisk1,size=4m\n\
             sd=sd2,lun=/dev/nodisk2,size=8m\nwd=wd1,sd=sd*,threads=5,seekpct={seek}\nrd=rd1,wd=wd1,iorate=max\n"
        )
    };
    let ranked = ReadOptions { ranks: Some(2), ..ReadOptions::default() };
    let job = parse_vdbench_job(Path::new("job.vdb"), &text("100"), &ranked).unwrap();
    let parts = job.phases[0].parts.as_ref().expect("one part per host");
    let got: Vec<_> = parts.iter().map(|p| (p.rank, p.iodepth, p.skew, p.queue.clone().unwrap())).collect();
    assert_eq!(
        got,
        [
            (Some(0), Some(3), Some(50.0), "wd1 (concatenated) on h1".to_string()),
            (Some(1), Some(3), Some(50.0), "wd1 (concatenated) on h2".to_string())
        ]
    );
    assert!(parts.iter().all(|p| p.file_sizes == Some(vec![Bytes::mib(4), Bytes::mib(8)])));
    // The rd's threads= is shared by its wds on each host: 5 over two hosts, 3 in each host's one queue.
    let shared = text("100").replace("rd=rd1,wd=wd1,", "wd=wd2,sd=sd1\nrd=rd1,wd=wd*,threads=5,");
    let job = parse_vdbench_job(Path::new("job.vdb"), &shared, &ranked).unwrap();
    let parts = job.phases[0].parts.as_ref().expect("one part per wd and host");
    let got: Vec<_> = parts.iter().map(|p| (p.rank, p.iodepth, p.queue.clone().unwrap())).collect();
    let queue = |h: &str| format!("concatenated sds on {h}");
    assert_eq!(
        got,
        [
            (Some(0), Some(3), queue("h1")),
            (Some(1), Some(3), queue("h2")),
            (Some(0), Some(3), queue("h1")),
            (Some(1), Some(3), queue("h2"))
        ]
    );
    let job = parse_vdbench_job(Path::new("job.vdb"), &text("eof"), &ranked).unwrap();
    let parts = job.phases[0].parts.as_ref().expect("a part for its rank");
    assert_eq!(parts.iter().map(|p| (p.rank, p.iodepth)).collect::<Vec<_>>(), [(Some(0), Some(5))]);
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
