//! Tests of the reader for vdbench's rd `maxdataread=` and `maxdatawritten=`.

use std::path::Path;

use super::*;
use crate::spec::{BlockSizeSpec, IoAmount, RwMode};
use crate::units::Bytes;

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const SD_WD: &str = "sd=sd1,lun=/dev/nodisk,size=8m\nwd=wd1,sd=sd1,rdpct=50\n";

#[test]
fn maxdataread_and_maxdatawritten_bound_the_rd_in_bytes_or_multiples_of_the_sds() {
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdataread=1m,maxdatawritten=2\n");
    let phase = &parse(&text).unwrap().phases[0];
    assert_eq!(phase.vdbench.io_read, Some(IoAmount::Bytes(Bytes::mib(1))));
    assert_eq!(phase.vdbench.io_written, Some(IoAmount::Passes(2.0)));
    assert_eq!((phase.io_size, phase.io_passes), (None, None));
    // 100 and above are bytes, as vdbench reads maxdata=.
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdatawritten=100\n");
    assert_eq!(parse(&text).unwrap().phases[0].vdbench.io_written, Some(IoAmount::Bytes(Bytes(100))));
    // Every phase of the rd has it: each for-loop value and curve point.
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=curve,curve=(50),maxdataread=1m,forxfersize=(4k,8k)\n");
    let phases = parse(&text).unwrap().phases;
    assert_eq!(phases.len(), 4);
    assert!(phases.iter().all(|p| p.vdbench.io_read == Some(IoAmount::Bytes(Bytes::mib(1)))));
}

#[test]
fn maxdataread_below_or_at_zero_or_not_a_size_is_refused_with_the_line() {
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdataread=0\n");
    let err = error(&text);
    assert!(err.contains("line 3") && err.contains("maxdataread must be above 0"), "{err}");
    let text = format!("{SD_WD}rd=rd1,wd=wd1,iorate=max,maxdatawritten=lots\n");
    let err = error(&text);
    assert!(err.contains("line 3") && err.contains("maxdatawritten"), "{err}");
}

#[test]
fn maxdataread_on_a_file_system_rd_is_refused() {
    let text = "fsd=fsd1,anchor=/tmp,depth=1,width=1,files=2,size=64k\nfwd=fwd1,fsd=fsd1,operation=read\n\
                rd=rd1,fwd=fwd1,fwdrate=max,format=yes,maxdataread=1m\n";
    let err = error(text);
    assert!(err.contains("maxdataread"), "{err}");
}

const TWO_SDS: &str = "sd=sd1,lun=/dev/nodisk1,size=4m\nsd=sd2,lun=/dev/nodisk1,size=8m,offset=4m\nsd=sd3,lun=/dev/x,size=1m\n\
                       wd=wd1,sd=(sd1,sd2),rdpct=100\nrd=rd1,wd=wd1,iorate=max\nrd=rd2,sd=sd2,iorate=max\n";

#[test]
fn formatsds_is_a_pass_of_writes_over_each_sd_used_before_the_first_rd() {
    let job = parse(&format!("formatsds=yes\n{TWO_SDS}")).unwrap();
    assert_eq!(job.phases.len(), 3);
    let format = &job.phases[0];
    assert_eq!(format.name.as_deref(), Some("SD_format"));
    assert_eq!((format.runtime, format.ramp), (None, Some(std::time::Duration::ZERO)));
    assert_eq!(format.vdbench.hold_shares, Some(false));
    // sd3 is used by no rd; sd2 is used twice and formatted once.
    let parts = format.parts.as_ref().unwrap();
    let names: Vec<_> = parts.iter().map(|p| p.name.clone().unwrap()).collect();
    assert_eq!(names, ["SD_format_sd1", "SD_format_sd2"]);
    for part in parts {
        assert_eq!((part.rw, part.io_passes, part.iodepth), (Some(RwMode::Write), Some(1.0), Some(2)));
        assert_eq!(part.bs, Some(BlockSizeSpec::Fixed(Bytes::kib(128))));
    }
    assert_eq!(job.phases[1].name.as_deref(), Some("rd1"));
}

#[test]
fn formatsds_transfers_are_formatxfersize_or_512_bytes_for_a_small_sd() {
    let small = "sd=sd1,lun=/dev/nodisk,size=64k\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n";
    let bs = |text: &str| parse(text).unwrap().phases[0].bs.clone();
    assert_eq!(bs(&format!("formatsds=yes\n{small}")), Some(BlockSizeSpec::Fixed(Bytes(512))));
    assert_eq!(
        bs(&format!("formatsds=yes\nformatxfersize=1m\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n")),
        Some(BlockSizeSpec::Fixed(Bytes::mib(1)))
    );
    // Without formatsds=yes it has no effect, and says so.
    let job = parse(&format!("formatxfersize=1m\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n")).unwrap();
    assert_eq!(job.phases.len(), 1);
    assert!(job.notices.iter().any(|n| n.contains("formatxfersize= has no effect")), "{:?}", job.notices);
    let job = parse(&format!("formatsds=no\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n")).unwrap();
    assert_eq!(job.phases.len(), 1);
}

#[test]
fn formatsds_refusals_say_why() {
    let err = error(&format!("formatsds=maybe\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("line 1") && err.contains("formatsds takes yes or no"), "{err}");
    let err = error(&format!("formatsds=yes\nformatxfersize=1000\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("line 2") && err.contains("multiple of 512"), "{err}");
    let text = "concatenatesds=yes\nformatsds=yes\nsd=sd1,lun=/dev/a,size=4m\nsd=sd2,lun=/dev/b,size=4m\n\
                wd=wd1,sd=sd*,threads=2\nrd=rd1,wd=wd1,iorate=max\n";
    let err = error(text);
    assert!(err.contains("line 2") && err.contains("mutually exclusive"), "{err}");
    // On a file-system run it formats nothing (the rd's format= does), with a notice.
    let text = "formatsds=yes\nfsd=fsd1,anchor=/tmp,depth=1,width=1,files=2,size=64k\nfwd=fwd1,fsd=fsd1,operation=read\n\
                rd=rd1,fwd=fwd1,fwdrate=max,format=yes\n";
    let job = parse(text).unwrap();
    assert!(job.notices.iter().any(|n| n.contains("no effect on file-system runs")), "{:?}", job.notices);
}

#[test]
fn sd_count_stands_for_numbered_sds_on_numbered_luns() {
    let text = "sd=default,threads=4\nsd=sd,lun=/dev/nodisk%03d,size=1m,count=(1,3)\nwd=wd1,sd=sd*\nrd=rd1,wd=wd1,iorate=max\n";
    let phase = &parse(text).unwrap().phases[0];
    let parts = phase.parts.as_ref().unwrap();
    let names: Vec<_> = parts.iter().map(|p| p.name.clone().unwrap()).collect();
    assert_eq!(names, ["wd1 on sd1", "wd1 on sd2", "wd1 on sd3"]);
    let luns: Vec<_> = parts.iter().map(|p| p.file_names.clone().unwrap()[0].clone()).collect();
    // (luns on several devices run as files of their names in the target)
    assert_eq!(luns, ["nodisk001", "nodisk002", "nodisk003"]);
    assert!(parts.iter().all(|p| p.iodepth == Some(4) && p.size == Some(Bytes::mib(1))));
    // Without a mask the number is appended, and a `*` takes it; the copies are named sds like any other.
    let text =
        "sd=a,lun=/dev/x*y,count=(0,2)\nsd=b,lun=/dev/z,count=(5,1)\nwd=wd1,sd=(a1,b5)\nrd=rd1,wd=wd1,iorate=max\n";
    let parts = parse(text).unwrap().phases[0].parts.clone().unwrap();
    let luns: Vec<_> = parts.iter().map(|p| p.file_names.clone().unwrap()[0].clone()).collect();
    assert_eq!(luns, ["x1y", "z5"]);
}

#[test]
fn sd_count_refusals_say_why() {
    let tail = "wd=wd1,sd=sd*\nrd=rd1,wd=wd1,iorate=max\n";
    for bad in ["count=(0)", "count=(0,0)", "count=(1.5,2)", "count=(0,1000000)"] {
        let err = error(&format!("sd=sd,lun=/dev/x,{bad}\n{tail}"));
        assert!(err.contains("line 1") && err.contains("count"), "{bad}: {err}");
    }
    let err = error(&format!("sd=sd,lun=/dev/x,count=(1,2)\nsd=sd2,lun=/dev/y\n{tail}"));
    assert!(err.contains("line 2") && err.contains("sd=sd2 is defined twice"), "{err}");
    let err = error(&format!("sd=sd,lun=/dev/x%s,count=(1,2)\n{tail}"));
    assert!(err.contains("printf mask"), "{err}");
}

#[test]
fn fsd_count_numbers_the_fsd_and_its_anchor() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a1", "a2"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let text = format!(
        "fsd=fsd,anchor={}/a,depth=1,width=1,files=2,size=64k,count=(1,2)\nfwd=fwd1,fsd=fsd*,operation=read\n\
         rd=rd1,fwd=fwd1,fwdrate=max,format=yes\n",
        dir.path().display()
    );
    let job = parse(&text).unwrap();
    let trees = &job.phases[0].fileset().unwrap().trees;
    let found: Vec<_> = trees.iter().map(|t| (t.name.clone(), t.anchor.clone().unwrap())).collect();
    assert_eq!(found, [("fsd1".to_string(), dir.path().join("a1")), ("fsd2".to_string(), dir.path().join("a2"))]);
}

#[test]
fn fsd_sizes_n_0_is_vdbench_s_average() {
    let dir = tempfile::tempdir().unwrap();
    let tree = |sizes: &str| {
        format!(
            "fsd=fsd1,anchor={},depth=1,width=1,files=2,sizes={sizes}\nfwd=fwd1,fsd=fsd1,operation=read\n\
             rd=rd1,fwd=fwd1,fwdrate=max,format=yes\n",
            dir.path().display()
        )
    };
    let job = parse(&tree("(64k,0)")).unwrap();
    let size = &job.phases[0].fileset().unwrap().trees[0].size;
    assert_eq!(*size, crate::spec::FileSizeSpec::Around(Bytes::kib(64)));
    let err = error(&tree("(512,0)"));
    assert!(err.contains("line 1") && err.contains("at least 1k"), "{err}");
}

fn fs_file(dir: &Path, format_fwd: &str) -> String {
    format!(
        "fsd=fsd1,anchor={},depth=1,width=1,files=8,size=64k\n{format_fwd}\nfwd=fwd1,fsd=fsd1,operation=read\n\
         rd=rd1,fwd=fwd*,fwdrate=max,format=yes\n",
        dir.display()
    )
}

#[test]
fn fwd_format_gives_the_format_step_its_threads_and_first_xfersize_and_is_no_workload() {
    let dir = tempfile::tempdir().unwrap();
    let job = parse(&fs_file(dir.path(), "fwd=format,threads=2,xfersize=(16k,50,32k,50),fileselect=random")).unwrap();
    let fileset = job.phases[0].fileset().unwrap();
    let with = fileset.format_with.unwrap();
    assert_eq!((with.threads, with.xfersize), (Some(2), Some(Bytes::kib(16))));
    // fwd=fwd* (and fwd=*) leave fwd=format out, as vdbench keeps it out of its fwd list.
    let names: Vec<_> = fileset.workloads.iter().map(|w| w.name.clone().unwrap()).collect();
    assert_eq!(names, ["fwd1"]);
    assert!(job.notices.iter().any(|n| n.contains("fileselect= ignored")), "{:?}", job.notices);
    assert_eq!(parse(&fs_file(dir.path(), "")).unwrap().phases[0].fileset().unwrap().format_with, None);
}

#[test]
fn fwd_format_refusals_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let err = error(&fs_file(dir.path(), "fwd=format,openflags=o_direct"));
    assert!(err.contains("line 2") && err.contains("openflags= on fwd=format"), "{err}");
    let err = error(&fs_file(dir.path(), "fwd=format,threads=0"));
    assert!(err.contains("line 2") && err.contains("give 1 to 4096"), "{err}");
}

#[test]
fn dedupsets_is_a_percentage_or_a_count_of_sets() {
    // Issue 29: dedupsets= as a count was "not supported yet".
    let data = |general: &str| {
        let text = format!("{general}\n{SD_WD}rd=rd1,wd=wd1,iorate=max,elapsed=2\n");
        parse(&text).unwrap().phases[0].data.clone().unwrap()
    };
    let percent = data("dedupratio=2,dedupsets=10%");
    // vdbench's sets are a share of all the units, decided by address (Dedup.adjustSdDedupValue).
    assert_eq!((percent.dedupe_working_set, percent.dedupe_sets), (Some(10.0), None));
    assert_eq!(percent.dedupe_by_address, Some(true));
    let count = data("dedupratio=2,dedupsets=1000");
    assert_eq!((count.dedupe_percent, count.dedupe_sets), (Some(50.0), Some(1000)));
    let err = error(&format!("dedupratio=2,dedupsets=0\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("or a count of sets"), "{err}");
    // vdbench's dedupacross=yes is its default and streamcap's way; no, and dedupmaxkey=, are refused by name.
    assert!(parse(&format!("dedupratio=2,dedupacross=yes\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n")).is_ok());
    for line in ["dedupacross=no", "dedupmaxkey=3"] {
        let err = error(&format!("dedupratio=2\n{line}\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
        assert!(err.contains("dedupacross=no and dedupmaxkey= are not supported yet"), "{err}");
    }
}

#[test]
fn dedup_keywords_of_an_sd_or_fsd_are_refused_by_name() {
    // docs/vdbench.md's refusal row: an sd's or fsd's own dedupratio= was read and then ignored.
    let err = error(
        "dedupratio=2,dedupunit=4k\nsd=sd1,lun=/dev/nodisk,size=8m,dedupratio=3\nwd=wd1,sd=sd1\n\
         rd=rd1,wd=wd1,iorate=max\n",
    );
    assert!(err.contains("a dedup ratio of an sd's or fsd's own") && err.contains("sd=sd1"), "{err}");
    // Concatenated sds too: they run as one workload and were never asked (the sd's dedupratio= was ignored).
    let err = error(
        "dedupratio=2,dedupunit=4k\nconcatenatesds=yes\nsd=sd1,lun=/dev/nodisk1,size=8m\n\
         sd=sd2,lun=/dev/nodisk2,size=8m,dedupsets=10%\nwd=wd1,sd=(sd1,sd2),threads=2\nrd=rd1,wd=wd1,iorate=max\n",
    );
    assert!(err.contains("dedup sets of an sd's or fsd's own") && err.contains("sd=sd2"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let fs = format!(
        "fsd=fsd1,anchor={},depth=1,width=1,files=2,size=8k,dedupsets=10%\n\
         fwd=fwd1,fsd=fsd1,operation=read,xfersize=4k\nrd=rd1,fwd=fwd1,fwdrate=max,format=yes\n",
        dir.path().display()
    );
    assert!(error(&fs).contains("dedup sets of an sd's or fsd's own"));
}

#[test]
fn hd_default_without_hds_is_vdbench_s_one_host() {
    // vdbench's HostParms: with no hd=, one host cloned from hd=default; its clients= was silently dropped.
    let err = error(&format!("hd=default,clients=2\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("several clients per host") && err.contains("hd=default"), "{err}");
    let err = error(&format!("hd=default,system=elsewhere.example\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n"));
    assert!(err.contains("another machine"), "{err}");
    assert!(parse(&format!("hd=default,system=localhost,jvms=2\n{SD_WD}rd=rd1,wd=wd1,iorate=max\n")).is_ok());
}
