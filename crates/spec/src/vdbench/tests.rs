//! Tests of the whole vdbench reader: the example files, overrides, curves, error messages, and a fuzz test
//! that no input makes it panic.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::spec::SpecOrigin;
use crate::spec::fileset::{FileIo, FileSelect, FileSizeSpec, FormatMode, OpRateSpec};
use crate::spec::values::{ArrivalSpec, BlockSizeSpec, RwMode};
use crate::units::{Bytes, Share};

fn example(name: &str) -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/jobs").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

fn anchored() -> ReadOptions {
    ReadOptions { anchors: vec![("H:".into(), PathBuf::from("/srv/pool"))], ..ReadOptions::default() }
}

fn parse(text: &str, options: &ReadOptions) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, options)
}

fn error(text: &str, options: &ReadOptions) -> String {
    parse(text, options).unwrap_err().to_string()
}

#[test]
fn the_large_files_example_maps_to_one_file_set_phase() {
    let (path, text) = example("vdbench-large-files.vdb");
    let job = parse_vdbench_job(&path, &text, &anchored()).unwrap();
    assert_eq!(job.origin, SpecOrigin::Vdbench { path: path.clone(), ranks: Vec::new() });
    assert_eq!(job.target, Some(PathBuf::from("/srv/pool")));
    assert_eq!(job.interval, Some(Duration::from_secs(30)));
    assert_eq!(job.phases.len(), 1);
    let phase = &job.phases[0];
    assert_eq!(phase.name.as_deref(), Some("rd1"));
    // elapsed=10h includes vdbench's warm-up, the first interval.
    assert_eq!(phase.ramp, Some(Duration::from_secs(30)));
    assert_eq!(phase.runtime, Some(Duration::from_secs(36000 - 30)));
    let set = phase.fileset().unwrap();
    assert_eq!(set.format, Some(FormatMode::Yes));
    assert_eq!(set.rate, Some(OpRateSpec::Max));
    let tree = &set.trees[0];
    assert_eq!((tree.name.as_str(), tree.depth, tree.width, tree.files), ("fsd1", 1, 5, 20));
    assert_eq!(tree.anchor, Some(PathBuf::from("/srv/pool")));
    assert_eq!(tree.size, FileSizeSpec::Fixed(Bytes::gib(5)));
    let w = &set.workloads[0];
    assert_eq!(w.tree.as_deref(), Some("fsd1"));
    assert_eq!(w.rdpct, Some(90));
    assert_eq!(w.xfersize, Some(BlockSizeSpec::Fixed(Bytes::kib(128))));
    assert_eq!(w.fileselect, Some(FileSelect::Random));
    assert_eq!(w.fileio, Some(FileIo::Random));
    assert_eq!(w.threads, Some(64));
    assert!(job.notices.iter().any(|n| n.contains("H:") && n.contains("/srv/pool")), "{:?}", job.notices);
    job.check().unwrap();
}

#[test]
fn the_small_files_example_maps_to_one_file_set_phase() {
    let (path, text) = example("vdbench-small-files.vdb");
    let job = parse_vdbench_job(&path, &text, &anchored()).unwrap();
    let set = job.phases[0].fileset().unwrap();
    assert_eq!((set.trees[0].width, set.trees[0].files), (64, 25600));
    assert_eq!(set.trees[0].size, FileSizeSpec::Fixed(Bytes::kib(16)));
    assert_eq!(set.workloads[0].xfersize, Some(BlockSizeSpec::Fixed(Bytes::kib(1))));
    set.check().unwrap();
}

#[test]
fn the_randread_example_matches_the_fio_job() {
    let (path, text) = example("vdbench-randread.vdb");
    let job = parse_vdbench_job(&path, &text, &ReadOptions::default()).unwrap();
    let p = &job.phases[0];
    // A lun that does not exist yet is a file of that name in streamcap's work directory beside it.
    let lun = PathBuf::from("/tmp/streamcap-vdbench-randread.dat");
    if lun.exists() {
        assert_eq!((job.target.clone(), p.file_names.clone()), (Some(lun), None));
    } else {
        let name = vec!["streamcap-vdbench-randread.dat".to_string()];
        assert_eq!((job.target.clone(), p.file_names.clone()), (Some(PathBuf::from("/tmp")), Some(name)));
    }
    assert_eq!(p.rw, Some(RwMode::RandRead));
    assert_eq!(p.bs, Some(BlockSizeSpec::Fixed(Bytes::kib(4))));
    assert_eq!((p.jobs, p.iodepth), (Some(1), Some(32)));
    assert_eq!(p.size, Some(Bytes::gib(1)));
    assert_eq!(p.direct, Some(true));
    assert_eq!(p.rdpct, None);
    assert_eq!((p.ramp, p.runtime), (Some(Duration::from_secs(10)), Some(Duration::from_secs(30))));
    assert_eq!(p.rate_iops, None);
    job.check().unwrap();
}

#[test]
fn set_anchor_and_time_overrides() {
    let (path, text) = example("vdbench-small-files.vdb");
    let options = ReadOptions {
        sets: vec![("files".into(), "200".into()), ("size".into(), "64m".into()), ("threads".into(), "8".into())],
        elapsed: Some(Duration::from_secs(60)),
        interval: Some(Duration::from_secs(5)),
        warmup: Some(Duration::from_secs(10)),
        ..anchored()
    };
    let job = parse_vdbench_job(&path, &text, &options).unwrap();
    let set = job.phases[0].fileset().unwrap();
    assert_eq!(set.trees[0].files, 200);
    assert_eq!(set.trees[0].size, FileSizeSpec::Fixed(Bytes::mib(64)));
    assert_eq!(set.workloads[0].threads, Some(8));
    assert_eq!(job.interval, Some(Duration::from_secs(5)));
    assert_eq!(
        (job.phases[0].ramp, job.phases[0].runtime),
        (Some(Duration::from_secs(10)), Some(Duration::from_secs(60))),
        "vdbench runs the warm-up before elapsed"
    );

    let err = parse_vdbench_job(&path, &text, &ReadOptions::default()).unwrap_err().to_string();
    assert!(err.contains("line 1") && err.contains("anchor") && err.contains("--anchor H:=DIR"), "{err}");
    let bad = ReadOptions { sets: vec![("filez".into(), "1".into())], ..anchored() };
    let err = parse_vdbench_job(&path, &text, &bad).unwrap_err().to_string();
    assert!(err.contains("--set filez=1"), "{err}");
}

#[test]
fn set_defines_variables() {
    let text = "sd=sd1,lun=$disk,threads=4\nwd=wd1,sd=sd1,xf=64k,seekpct=seq,rdpct=0\nrd=rd1,wd=wd1,iorate=500\n";
    let options = ReadOptions { sets: vec![("disk".into(), "/dev/loop7".into())], ..ReadOptions::default() };
    let job = parse(text, &options).unwrap();
    assert_eq!(job.target, Some(PathBuf::from("/dev/loop7")));
    // threads= reaches the sd, not the wd's own (refused) threads=; iorate= reaches the rd.
    let sets = vec![("disk".into(), "/a".into()), ("threads".into(), "16".into()), ("iorate".into(), "50".into())];
    let over = parse(text, &ReadOptions { sets, ..ReadOptions::default() }).unwrap();
    assert_eq!((over.phases[0].iodepth, over.phases[0].rate_iops), (Some(16), Some(50)));
    let p = &job.phases[0];
    assert_eq!(p.iodepth, Some(4));
    assert_eq!(p.rw, Some(RwMode::Write));
    assert_eq!(p.direct, Some(false), "vdbench is buffered without openflags=o_direct");
    assert_eq!(p.rate_iops, Some(500));
    assert_eq!(p.rate_process, Some(ArrivalSpec::Poisson));
    assert!(job.notices.iter().any(|n| n.contains("page cache")));
}

#[test]
fn mixed_and_partly_random_workloads() {
    let text = "sd=sd1,lun=/a\nwd=wd1,sd=sd1,rdpct=70,seekpct=40,xfersize=(4k,60,64k,40)\nrd=rd1,wd=wd1,iorate=max\n";
    let p = parse(text, &ReadOptions::default()).unwrap().phases.remove(0);
    assert_eq!(p.rw, Some(RwMode::RandRw));
    assert_eq!((p.rdpct, p.percentage_random), (Some(70), Some(40)));
    let [w60, w40] = [60, 40].map(|w| Some(Share::percent(w)));
    assert_eq!(p.bs, Some(BlockSizeSpec::Split(vec![(Bytes::kib(4), w60), (Bytes::kib(64), w40)])));
    assert_eq!(p.iodepth, Some(8), "vdbench's default sd threads");
    p.check().unwrap();
}

/// Guards cloudanimal/Vdbench's PureStorage ramps (xfersize=(4k,4.5,8k,41.05,…)): weights with fractions were
/// refused as "not a whole percentage", though vdbench takes any weights that round to 100.
#[test]
fn xfersize_weights_with_fractions_are_kept_to_the_hundredth() {
    let read = |weights: &str| {
        let text = format!("sd=sd1,lun=/a\nwd=wd1,sd=sd1,xfersize=({weights})\nrd=rd1,wd=wd1,iorate=max\n");
        parse(&text, &ReadOptions::default()).map(|mut job| job.phases.remove(0).bs).map_err(|e| e.to_string())
    };
    let split = |w: [u32; 3]| {
        let sizes = [4, 8, 16].map(Bytes::kib);
        Some(BlockSizeSpec::Split(sizes.iter().zip(w).map(|(&b, w)| (b, Some(Share(w)))).collect()))
    };
    assert_eq!(read("4k,4.5,8k,41.05,16k,54.45").unwrap(), split([450, 4105, 5445]));
    // vdbench draws below 100 against the running sum: the last size takes what weights that round to 100
    // leave, and what lies past 100 % is never drawn.
    assert_eq!(read("4k,50,8k,30,16k,19.7").unwrap(), split([5000, 3000, 2000]));
    assert_eq!(read("4k,50,8k,50.2,16k,0.1").unwrap(), split([5000, 5000, 0]));
    let err = read("4k,50,8k,30,16k,19").unwrap_err();
    assert!(err.contains("add up to 99") && err.contains("xfersize"), "{err}");
}

#[test]
fn for_loops_become_named_phases() {
    let text = "sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,forxfersize=(4k,8k),forthreads=(1-2,1)\n";
    let job = parse(text, &ReadOptions::default()).unwrap();
    let names: Vec<&str> = job.phases.iter().map(|p| p.name.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "rd1 xfersize=4k threads=1",
            "rd1 xfersize=4k threads=2",
            "rd1 xfersize=8k threads=1",
            "rd1 xfersize=8k threads=2"
        ]
    );
    assert_eq!(job.phases[3].bs, Some(BlockSizeSpec::Fixed(Bytes::kib(8))));
    assert_eq!(job.phases[3].iodepth, Some(2));
}

#[test]
fn iorate_curve_is_a_max_phase_then_one_per_point() {
    let text = "sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=curve,stopcurve=5\n";
    let job = parse(text, &ReadOptions::default()).unwrap();
    let names: Vec<&str> = job.phases.iter().map(|p| p.name.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "rd1 iorate=max",
            "rd1 iorate=10%",
            "rd1 iorate=50%",
            "rd1 iorate=70%",
            "rd1 iorate=80%",
            "rd1 iorate=90%",
            "rd1 iorate=100%"
        ]
    );
    assert_eq!(job.phases[0].vdbench.rate_percent_of_max, None);
    assert_eq!(job.phases[2].vdbench.rate_percent_of_max, Some(50.0));
    assert_eq!(job.phases[2].vdbench.curve_stop_latency, Some(Duration::from_millis(5)));
    let text = "sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=curve,curve=(25,75)\n";
    assert_eq!(parse(text, &ReadOptions::default()).unwrap().phases.len(), 3);
}

/// vdbench's curve takes points above 100 % and a from-to-step list (ckarthik1994/VdbenchAutomation's
/// `curve=(10-120,10)` was refused): 110 and 120 ask for more than the maximum.
#[test]
fn curve_points_above_the_maximum_are_kept() {
    let text = "sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=curve,curve=(10-120,10)\n";
    let job = parse(text, &ReadOptions::default()).unwrap();
    let points: Vec<f64> = job.phases.iter().filter_map(|p| p.vdbench.rate_percent_of_max).collect();
    assert_eq!(points, (1..=12).map(|i| f64::from(i) * 10.0).collect::<Vec<_>>());
    let err =
        error("sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=curve,curve=(50,1001)\n", &ReadOptions::default());
    assert!(err.contains("line 3") && err.contains("up to 1000"), "{err}");
}

#[test]
fn fwdrate_curve_uses_percent_of_max() {
    let text = "fsd=fsd1,anchor=/tmp\nfwd=default,fsd=fsd1\nfwd=fwd1,operation=write\nfwd=fwd2,skew=20\nrd=rd1,fwd=fwd*,fwdrate=curve,curve=(50)\n";
    let job = parse(text, &ReadOptions::default()).unwrap();
    assert_eq!(job.phases.len(), 2);
    let set = job.phases[1].fileset().unwrap();
    assert_eq!(set.rate, Some(OpRateSpec::PercentOfMax(50.0)));
    assert_eq!(set.workloads.len(), 2);
    assert_eq!(set.workloads[1].skew, Some(20.0));
    assert_eq!(set.format, Some(FormatMode::No), "vdbench's default");
    assert_eq!(set.workloads[0].fileselect, Some(FileSelect::Sequential), "vdbench's default");
}

#[test]
fn errors_name_the_line_the_keyword_and_what_is_expected() {
    let o = ReadOptions::default();
    let err = error("sd=sd1,lun=/a\nwd=wd1,sd=sd1,\n  xfersiz=4k,rdpct=200\nrd=rd1,wd=wd1,iorate=max\n", &o);
    assert!(
        err.contains("job.vdb") && err.contains("line 3") && err.contains("rdpct") && err.contains("0 to 100"),
        "{err}"
    );
    let err = error("sd=sd1,lun=/a\nwd=wd1,sd=sd1,xfersizze=4k\nrd=rd1,wd=wd1,iorate=max\n", &o);
    assert!(err.contains("line 2: keyword 'xfersizze' (in wd=wd1): unknown keyword; expected one of"), "{err}");
    let err = error("sd=sd1,lun=/a/x\nsd=sd2,lun=/b/y\nwd=wd1,sd=(sd1-sd2)\nrd=rd1,wd=wd1,iorate=max\n", &o);
    assert!(err.contains("/a/x, /b/y") && err.contains("one target per job"), "{err}");
    let err = error("sd=sd1,lun=/a\nwd=wd1,sd=sd1,skew=120\nwd=wd2,sd=sd1\nrd=rd1,wd=(wd1,wd2),iorate=max\n", &o);
    assert!(err.contains("line 4") && err.contains("skew"), "{err}");
    let err = error("hd=hd1,system=node2\nsd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n", &o);
    assert!(err.contains("line 1") && err.contains("another machine"), "{err}");
    let err = error("sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1\n", &o);
    assert!(err.contains("iorate= is missing"), "{err}");
    let err = error("validate=sometimes\nsd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n", &o);
    assert!(err.contains("line 1") && err.contains("read_after_write"), "{err}");
    let err = error("sd=sd1,lun=/a\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max,elapsed=1,interval=1\n", &o);
    assert!(err.contains("twice the interval"), "{err}");
    let err = error("fsd=fsd1,anchor=/tmp\nfwd=fwd1,fsd=fsd1,fileselect=lottery\nrd=rd1,fwd=fwd1,fwdrate=max\n", &o);
    assert!(err.contains("line 2") && err.contains("fileselect") && err.contains("poisson"), "{err}");
}

/// vdbench journal=: yes and noflush are streamcap's journal (with validation, as vdbench -j turns it on); the
/// recovery words are refused naming the command that recovers; maponly is --keep; an sd's journal directory is
/// not used, and a notice says so.
#[test]
fn journal_yes_and_noflush_journal_the_run_and_recovery_points_to_verify_only() {
    use crate::spec::{JournalMode, VerifyChoice};
    let o = ReadOptions::default();
    let raw = |journal: &str| {
        format!(
            "journal={journal}\nsd=sd1,lun=/a,size=1m,journal=/j\nwd=wd1,sd=sd1\n\
             rd=rd1,wd=wd1,iorate=max,elapsed=2,interval=1\n"
        )
    };
    let job = parse(&raw("yes"), &o).unwrap();
    assert_eq!((job.phases[0].verify, job.phases[0].journal), (Some(VerifyChoice::Crc32c), Some(JournalMode::Sync)));
    assert!(job.notices.iter().any(|n| n.contains("journal=DIR is not used")), "{:?}", job.notices);
    assert_eq!(parse(&raw("noflush"), &o).unwrap().phases[0].journal, Some(JournalMode::Noflush));
    assert_eq!(parse(&raw("no"), &o).unwrap().phases[0].verify, None);
    for word in ["recover", "only", "(yes,skip_read_all)", "ignore_pending"] {
        let err = error(&raw(word), &o);
        assert!(err.contains("line 1") && err.contains("--verify-only crc32c"), "{word}: {err}");
    }
    assert!(error(&raw("maponly"), &o).contains("pass --keep"));
}

#[test]
fn harmless_general_parameters_become_notices() {
    let text = "data_errors=10\nmessagescan=no\nhd=localhost,jvms=2\nsd=sd1,lun=/a,openflags=o_direct\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n";
    let job = parse(text, &ReadOptions::default()).unwrap();
    assert!(job.notices.iter().any(|n| n.contains("data_errors")), "{:?}", job.notices);
    assert!(job.notices.iter().any(|n| n.contains("jvms")), "{:?}", job.notices);
}

/// Keywords, values and names of vdbench's parameter files, for the token soup.
const WORDS: &[&str] = &[
    "sd",
    "wd",
    "rd",
    "fsd",
    "fwd",
    "hd",
    "lun",
    "size",
    "threads",
    "xfersize",
    "xf",
    "rdpct",
    "seekpct",
    "iorate",
    "elapsed",
    "interval",
    "warmup",
    "forxfersize",
    "forthreads",
    "curve",
    "stopcurve",
    "anchor",
    "depth",
    "width",
    "files",
    "sizes",
    "fileselect",
    "fileio",
    "fwdrate",
    "format",
    "operation",
    "skew",
    "openflags",
    "include",
    "default",
    "max",
    "curve",
    "random",
    "seq",
    "once",
    "o_direct",
    "yes",
    "H:",
    "/tmp",
    "4k",
    "1m",
    "5G",
    "10h",
    "70%",
    "0",
    "100",
    "d",
    "sd1",
    "wd*",
    "$x",
    "${y}",
    "eof",
    "compratio",
    "data_errors",
    "validate",
    "journal",
    "system",
];

/// Keywords, values and punctuation vdbench files are made of.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(WORDS).prop_map(str::to_string),
        prop::sample::select(vec!["=", ",", "(", ")", "-", "\n", ",\n", " ", "\"", "*", "#", "$"])
            .prop_map(str::to_string),
        "[0-9]{1,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = parse(&text, &anchored());
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..60)) {
        let options = ReadOptions { sets: vec![("x".into(), "1".into())], ..anchored() };
        let _ = parse(&tokens.concat(), &options);
    }
}

#[test]
fn an_interval_too_long_to_double_is_refused_not_a_panic() {
    // Found by the vdbench_job fuzz target: 1.045e19 s fits a Duration, twice it does not.
    let text = "sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1,xfersize=4k,rdpct=100\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=10h,interval=000000000000010450267047395852289\n";
    let message = error(text, &ReadOptions::default());
    assert!(message.contains("twice the interval"), "{message}");
}
