//! Mapping tests over real-world fio files (tests/fixtures/fio/), the error messages, and a fuzz test that
//! feeds arbitrary text and soups of fio tokens to the reader to show it never panics.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use super::ini::tests::FakeHost;
use super::*;
use crate::spec::{BlockSizeSpec, DistributionSpec, EngineChoice, RwMode, Sharing, SizeOrPercent, SpecOrigin};
use crate::units::{Bytes, Share};

fn fixture(name: &str) -> JobSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_fio_job_with(&path, &text, &FakeHost::default()).unwrap()
}

pub(super) fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_fio_job_with(Path::new("/jobs/t.fio"), text, &FakeHost::default())
}

pub(super) fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn randread_qd32_on_a_device() {
    let job = fixture("randread-libaio-qd32.fio");
    assert!(matches!(job.origin, SpecOrigin::Fio { .. }));
    assert_eq!(job.target, Some(PathBuf::from("/dev/nvme0n1")));
    let p = &job.phases[0];
    assert_eq!(p.name.as_deref(), Some("randread-qd32"));
    assert_eq!(p.rw, Some(RwMode::RandRead));
    assert_eq!(p.bs, Some(BlockSizeSpec::Fixed(Bytes(4096))));
    assert_eq!(p.engine, Some(EngineChoice::IoUring));
    assert_eq!((p.iodepth, p.direct), (Some(32), Some(true)));
    assert_eq!(p.size, Some(Bytes::gib(10)));
    assert_eq!(p.runtime, Some(Duration::from_secs(60)));
    assert_eq!(p.io_size, None, "time_based: the runtime alone ends it");
    assert_eq!((p.concurrent, p.group.clone(), p.file_names.clone()), (None, None, None));
    for option in ["thread", "norandommap", "randrepeat"] {
        assert!(job.notices.iter().any(|n| n.contains(option)), "{option}: {:?}", job.notices);
    }
}

#[test]
fn mixed_70_30_with_bssplit() {
    let job = fixture("mixed-7030-bssplit.fio");
    let p = &job.phases[0];
    assert_eq!((p.rw, p.rdpct), (Some(RwMode::RandRw), Some(70)));
    assert_eq!(
        p.bs,
        Some(BlockSizeSpec::Split(
            [(4096, 50), (8192, 30), (65536, 20)].map(|(b, w)| (Bytes(b), Some(Share::percent(w)))).to_vec()
        ))
    );
    assert_eq!(p.distribution, Some(DistributionSpec::Zipf(1.2)));
    assert_eq!(p.percentiles, Some(vec![50.0, 99.0, 99.9, 99.99]));
    assert_eq!(p.ramp, Some(Duration::from_secs(10)));
    assert_eq!(p.runtime, Some(Duration::from_secs(120)));
    // Not time_based: at most size × loops of I/O, or the runtime.
    assert_eq!(p.io_size, Some(Bytes::gib(4)));
    assert_eq!(p.size, Some(Bytes::gib(4)));
    job.check().unwrap();
}

#[test]
fn two_jobs_with_stonewall_and_a_global_midway() {
    let job = fixture("two-jobs-stonewall.fio");
    assert_eq!(job.phases.len(), 2);
    let (write, read) = (&job.phases[0], &job.phases[1]);
    assert_eq!((write.rw, read.rw), (Some(RwMode::Write), Some(RwMode::Read)));
    assert_eq!(write.file_names, Some(vec!["data.bin".to_string()]));
    assert_eq!(read.file_names, write.file_names, "both jobs name the same file: they share it");
    assert_eq!(write.end_fsync, Some(true));
    assert_eq!(write.engine, Some(EngineChoice::Sync));
    // The second [global] applies only to the job after it.
    assert_eq!(write.runtime, None);
    assert_eq!(read.runtime, Some(Duration::from_secs(30)));
    assert_eq!(read.concurrent, None, "stonewall: after the write");
    assert_eq!(read.size, Some(Bytes::mib(256)));
}

#[test]
fn numjobs_with_offset_increment_on_a_device() {
    let job = fixture("numjobs4-offset-increment.fio");
    assert_eq!(job.target, Some(PathBuf::from("/dev/sdb")));
    let p = &job.phases[0];
    assert_eq!(p.jobs, Some(4));
    assert_eq!(p.bs, Some(BlockSizeSpec::Fixed(Bytes(128_000))), "kb_base=1000");
    assert_eq!(p.size_percent, Some(25.0));
    assert_eq!(p.fio.offset_increment, Some(SizeOrPercent::Percent(25.0)));
    assert_eq!(p.sharing, None, "offset_increment gives each clone its own region");
}

#[test]
fn per_clone_files_multiply_the_data_set() {
    let job = parse("[w]\nrw=write\nsize=1g\nnumjobs=4\nnrfiles=2\n").unwrap();
    let p = &job.phases[0];
    assert_eq!(p.size, Some(Bytes::gib(4)));
    assert_eq!(p.files, Some(8));
    assert_eq!(p.file_names, Some(vec!["w.{worker}.0".to_string(), "w.{worker}.1".to_string()]));
    assert_eq!(p.sharing, None);
}

#[test]
fn clones_of_one_named_file_share_it_whole() {
    let p = parse("[r]\nrw=randread\nfilename=big.dat\nsize=2g\nnumjobs=8\nruntime=10\n").unwrap().phases[0].clone();
    assert_eq!(p.size, Some(Bytes::gib(2)));
    assert_eq!(p.sharing, Some(Sharing::Whole));
    // Each clone does up to its size of I/O: 8 × 2 GiB in all, or the runtime.
    assert_eq!(p.io_size, Some(Bytes::gib(16)));
}

#[test]
fn filename_format_and_absolute_filenames() {
    let p = &parse("[j]\nfilename_format=f.$jobnum.$filenum\nnrfiles=2\nsize=1m\n").unwrap().phases[0];
    assert_eq!(p.file_names, Some(vec!["f.{worker}.0".to_string(), "f.{worker}.1".to_string()]));
    let job = parse("[j]\nfilename=/mnt/a/x:/mnt/a/y\nsize=1m\n").unwrap();
    assert_eq!(job.target, Some(PathBuf::from("/mnt/a")));
    assert_eq!(job.phases[0].file_names, Some(vec!["x".to_string(), "y".to_string()]));
    let job = parse("[j]\ndirectory=/srv/media\nsize=1m\n").unwrap();
    assert_eq!(job.target, Some(PathBuf::from("/srv/media")));
    assert!(error("[j]\nfilename_format=$clientuid\n").contains("$clientuid"));
    assert!(error("[j]\nfilename=/dev/sda:/dev/sdb\n").contains("several devices"));
}

#[test]
fn jobs_without_stonewall_run_together_and_groups_follow_stonewalls() {
    let text = "[global]\ngroup_reporting\nsize=1m\n[a]\nrw=read\n[b]\nrw=write\n[c]\nstonewall\nrw=randread\n\
                [d]\nnew_group\nrw=randwrite\n[e]\nrw=randread\n";
    let job = parse(text).unwrap();
    let concurrent: Vec<Option<bool>> = job.phases.iter().map(|p| p.concurrent).collect();
    assert_eq!(concurrent, [None, Some(true), None, Some(true), Some(true)]);
    let groups: Vec<Option<&str>> = job.phases.iter().map(|p| p.group.as_deref()).collect();
    assert_eq!(groups, [Some("a"), Some("a"), None, Some("d"), Some("d")]);
}

#[test]
fn wait_for_names_an_earlier_job() {
    let job = parse("[a]\nrw=read\n[b]\nrw=read\n[c]\nwait_for=a\nrw=read\n").unwrap();
    assert_eq!(job.phases[2].concurrent, None);
    assert!(job.notices.iter().any(|n| n.contains("waits for 'a'")));
    assert!(error("[a]\nrw=read\n[b]\nwait_for=zz\n").contains("'zz' is not the name of an earlier job"));
}

#[test]
fn time_based_rw_suffix_and_loops() {
    let p = &parse("[j]\nrw=randread:4\nsize=1m\nloops=3\n").unwrap().phases[0];
    assert_eq!(p.fio.random_every, Some(4), "a new random offset every 4 operations, as fio");
    assert_eq!(p.io_size, Some(Bytes::mib(3)));
    assert!(error("[j]\nrw=read\ntime_based\n").contains("needs a runtime"));
    assert!(error("[j]\nrw=randread:4k\n").contains("count above 0"));
    assert!(error("[j]\nrw=trim\n").contains("trims"));
}

#[test]
fn engines_and_their_errors() {
    for (engine, choice) in
        [("psync", EngineChoice::Sync), ("pvsync2", EngineChoice::Sync), ("posixaio", EngineChoice::IoUring)]
    {
        let job = parse(&format!("[j]\nioengine={engine}\n")).unwrap();
        assert_eq!(job.phases[0].engine, Some(choice));
    }
    let err = error("[j]\nioengine=rdma\n");
    assert!(err.contains("/jobs/t.fio") && err.contains("line 2") && err.contains("ioengine=rdma"), "{err}");
    // fio's defaults: psync and buffered I/O.
    let p = &parse("[j]\nrw=read\n").unwrap().phases[0];
    assert_eq!((p.engine, p.direct), (Some(EngineChoice::Sync), Some(false)));
}

#[test]
fn mixed_jobs_take_read_and_write_sizes_apart() {
    let p = &parse("[j]\nrw=write\nbs=4k,64k\n").unwrap().phases[0];
    assert_eq!((p.bs.clone(), p.bs_write.clone()), (Some(BlockSizeSpec::Fixed(Bytes(65536))), None));
    let p = &parse("[j]\nrw=randrw\nbs=4k,64k\n").unwrap().phases[0];
    assert_eq!(p.bs_write, Some(BlockSizeSpec::Fixed(Bytes(65536))));
    // An empty read entry leaves reads at fio's default (4k).
    let p = &parse("[j]\nrw=randrw\nbs=,8k\n").unwrap().phases[0];
    assert_eq!(
        (p.bs.clone(), p.bs_write.clone()),
        (Some(BlockSizeSpec::Fixed(Bytes(4096))), Some(BlockSizeSpec::Fixed(Bytes(8192))))
    );
    assert_eq!(parse("[j]\nrw=read\nrate=,1m\n").unwrap().phases[0].rate, None);
    assert!(error("[j]\nrw=randrw\nrate=1m,\n").contains("not supported yet"));
    let p = &parse("[j]\nrw=randrw\nbsrange=4k-64k\nrwmixwrite=20\n").unwrap().phases[0];
    assert_eq!((p.bs.clone(), p.rdpct), (Some(BlockSizeSpec::Range(Bytes(4096), Bytes(65536))), Some(80)));
    // rwmixread in [global] does not bother a read-only job.
    assert_eq!(parse("[global]\nrwmixread=70\n[j]\nrw=read\n").unwrap().phases[0].rdpct, None);
}

#[test]
fn pacing_durability_and_percentiles() {
    let text = "[j]\nrw=randwrite\nrate=10m\nrate_min=1m\nrate_process=poisson\nthinktime=500\nthinktime_blocks=4\n\
                fsync=8\nfdatasync=2\nsync=1\ninvalidate=0\npre_read=1\nstartdelay=2\nrandseed=42\n\
                continue_on_error=all\nlog_avg_msec=500\nnumber_ios=1000\nblockalign=8k\npercentage_random=50\n";
    let job = parse(text).unwrap();
    let p = &job.phases[0];
    assert_eq!(p.rate.map(|r| r.0), Some(10.0 * 1048576.0));
    assert_eq!(p.fio.rate_min.map(|r| r.0), Some(1048576.0));
    assert_eq!(p.rate_process, Some(crate::spec::ArrivalSpec::Poisson));
    assert_eq!(p.fio.thinktime, Some(Duration::from_micros(500)));
    assert_eq!(p.fio.thinktime_blocks, Some(4));
    assert_eq!((p.fsync_every, p.fio.fdatasync_every, p.sync_writes), (Some(8), Some(2), Some(true)));
    assert_eq!((p.invalidate, p.pre_read), (Some(false), Some(true)));
    assert_eq!(p.start_delay, Some(Duration::from_secs(2)));
    assert_eq!((p.seed, p.continue_on_error, p.fio.number_ios), (Some(42), Some(true), Some(1000)));
    assert_eq!((p.align, p.percentage_random), (Some(Bytes(8192)), Some(50)));
    assert_eq!(job.interval, Some(Duration::from_millis(500)));
}

#[test]
fn errors_name_file_line_option_and_expectation() {
    let err = error("[global]\nsize=1g\n\n[j]\nrw=read\n\n bs=4q\n");
    assert!(err.starts_with("/jobs/t.fio: line 7: option 'bs': '4q' is not a size; expected"), "{err}");
    let err = error("[j]\nrw=sideways\n");
    assert!(err.contains("line 2") && err.contains("'rw'") && err.contains("randread"), "{err}");
    let err = error("[j]\nverify=bogus\n");
    assert!(err.contains("line 2") && err.contains("option 'verify'") && err.contains("crc32c"), "{err}");
    assert!(parse("[j]\nverify=0\ndo_verify=0\n").is_ok(), "verify switched off is fine");
    assert!(error("[global]\nbs=4k\n").contains("no job section"));
    assert!(error("[j]\nrandom_distribution=zoned:60/10:30/90\n").contains("add up to 90"));
    assert!(error("[j]\nrandom_distribution=poisson:3\n").contains("not a distribution"), "vdbench's word, not fio's");
    assert!(error("[j]\nnumjobs=0\n").contains("numjobs"));
}

#[test]
fn the_example_jobs_read_and_check() {
    for name in ["fio-randread.fio", "fio-large-files.fio", "fio-small-files.fio"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/jobs").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let job = parse_fio_job_with(&path, &text, &FakeHost::default()).unwrap();
        job.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

const TOKENS: &[&str] = &[
    "[global]",
    "[job]",
    "[",
    "]",
    "=",
    ";",
    "#",
    " ",
    "\n",
    "\n",
    "\n",
    "rw",
    "randrw",
    "randread:8",
    "bs",
    "4k",
    "4k,64k",
    "bssplit",
    "4k/50:64k/",
    "bsrange",
    "4k-1m",
    "size",
    "50%",
    "1g",
    "0x10",
    "numjobs",
    "4",
    "filename",
    "/dev/sdb",
    "a:b",
    "directory",
    "include",
    "x.fio",
    "${HOME}",
    "${",
    "$ncpus",
    "$pagesize",
    "$jobnum",
    "filename_format",
    "time_based",
    "runtime",
    "10m",
    "thinktime",
    "stonewall",
    "wait_for",
    "job",
    "group_reporting",
    "new_group",
    "rate",
    "1m,",
    ",",
    "offset_increment",
    "25%",
    "random_distribution",
    "zipf:1.2",
    "normal:",
    "kb_base",
    "1000",
    "ioengine",
    "libaio",
    "percentile_list",
    "99:99.9",
    "rwmixread",
    "101",
    "nrfiles",
    "0",
    "-1",
    "1e99",
    "18446744073709551615",
    "99999999999999999999p",
    "é",
    "\t",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = parse(&text);
    }

    #[test]
    fn token_soups_never_panic(tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..60)) {
        let text: String = tokens.concat();
        let _ = parse(&text);
        let lines = tokens.join("\n");
        let _ = parse(&lines);
        let keyed: String = tokens.chunks(2).map(|c| format!("{}={}\n", c[0], c.get(1).unwrap_or(&""))).collect();
        let _ = parse(&format!("[j]\n{keyed}"));
    }
}

#[test]
fn every_problem_of_a_file_is_reported_at_once_in_file_order() {
    let text = "[global]\nioengine=libaio\nbogus_option=1\n[a]\nrw=sideways\nbs=4q\nruntime=ten\n[b]\nnumjobs=0\n\
                size=${UNSET}\nzonecapacity=256m\n";
    let err = error(text);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 7, "{err}");
    assert!(lines[0].starts_with("/jobs/t.fio: line 3: unknown option 'bogus_option'"), "{err}");
    for (line, n) in lines.iter().zip([3, 5, 6, 7, 9, 10, 11]) {
        assert!(line.contains(&format!("line {n}: ")), "{err}");
    }
    assert!(lines[1..].iter().all(|l| l.starts_with("/jobs/t.fio: line ")), "later lines name the file: {err}");
}

#[test]
fn at_most_twenty_problems_are_shown_and_the_rest_counted() {
    let text: String = std::iter::once("[j]\n".to_string()).chain((0..25).map(|i| format!("nope{i}=1\n"))).collect();
    let err = error(&text);
    assert_eq!(err.lines().count(), 21, "{err}");
    assert!(err.lines().last().unwrap().contains("5 more problems"), "{err}");
}

#[test]
fn the_engine_is_checked_first_and_hides_its_own_options() {
    let err = error("[j]\nioengine=rbd\nclientname=admin\npool=rbd\nrbdname=fio_test\nrw=randwrite\n");
    assert_eq!(
        err,
        "/jobs/t.fio: line 2: ioengine=rbd is not a local engine: streamcap runs files and block devices; see \
         docs/fio.md"
    );
    // An unset variable in a job refused for its engine is not reported either.
    let err = error("[j]\nioengine=http\nhttp_s3_key=${S3_KEY}\n");
    assert!(!err.contains("S3_KEY") && err.contains("ioengine=http"), "{err}");
}

#[test]
fn aliases_and_options_with_nothing_to_do_are_accepted_with_a_notice() {
    let text = "[global]\nthreads=1\ngtod_reduce=1\nnuma_cpu_nodes=0\nnuma_mem_policy=bind:0\n\
                ratemin=1k\nrandom_generator=lfsr\nio_submit_mode=offload\n[j]\nrw=read\nsize=1m\n";
    let job = parse(text).unwrap();
    assert_eq!(job.phases[0].fio.rate_min.map(|r| r.0), Some(1024.0), "ratemin is rate_min");
    for word in ["threads", "gtod_reduce", "numa_cpu_nodes", "numa_mem_policy", "lfsr", "offload"] {
        assert!(job.notices.iter().any(|n| n.contains(word)), "{word}: {:?}", job.notices);
    }
}

#[test]
fn arithmetic_in_values_with_a_notice_when_fio_would_read_it_otherwise() {
    let job = parse("[j]\nrw=read\nsize=4*1024m\nruntime=(2*30)\nbs=(2*2)k\n").unwrap();
    let p = &job.phases[0];
    assert_eq!(p.size, Some(Bytes::gib(4)));
    assert_eq!(p.runtime, Some(Duration::from_secs(60)));
    assert_eq!(p.bs, Some(BlockSizeSpec::Fixed(Bytes(4096))));
    assert!(
        job.notices
            .iter()
            .any(|n| n.contains("size=4*1024m") && n.contains("size=(4*1024m)") && n.contains("(4, no unit)")),
        "{:?}",
        job.notices
    );
    // With fio's keywords: the reader puts the number in, then the arithmetic is done.
    let job = parse("[j]\nrw=read\nsize=2*$mb_memory\n").unwrap();
    assert_eq!(job.phases[0].size, Some(Bytes(2 * 16384)), "$mb_memory is 16384 on the fake host");
    // Issue 29: fio hands a value its keywords went into to bc, which evaluates it whole: no notice.
    assert!(job.notices.iter().all(|n| !n.contains("arithmetic")), "{:?}", job.notices);
}

#[test]
fn offset_modifiers_and_the_sequencer() {
    let p = &parse("[j]\nrw=read:-8k\nbs=4k\nsize=1m\n").unwrap().phases[0];
    assert_eq!(p.fio.offset_step, Some(crate::spec::ByteStep(-8192)));
    let p = &parse("[j]\nrw=write:112k\nsize=1m\n").unwrap().phases[0];
    assert_eq!(p.fio.offset_step, Some(crate::spec::ByteStep(112 * 1024)));
    let p = &parse("[j]\nrw=randread:8\nrw_sequencer=identical\nsize=1m\n").unwrap().phases[0];
    assert_eq!((p.fio.random_every, p.fio.sequencer), (Some(8), Some(crate::spec::Sequencer::Identical)));
}

#[test]
fn zoned_distributions_as_fio_completes_them() {
    use crate::spec::{ZoneExtent, ZoneSpec};
    let p = &parse("[j]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\n").unwrap().phases[0];
    let expected = [(50.0, 5.0), (30.0, 15.0), (20.0, 80.0)]
        .map(|(a, s)| ZoneSpec { access_percent: a, size: ZoneExtent::Percent(s) })
        .to_vec();
    assert_eq!(p.distribution, Some(DistributionSpec::Zoned(expected.clone())));
    // fio (3.33) runs a last zone without '/' as one without a size: what the others leave.
    let p = &parse("[j]\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20\n").unwrap().phases[0];
    assert_eq!(p.distribution, Some(DistributionSpec::Zoned(expected)));
    // Under zoned_abs fio makes it a zone of 0 bytes: refused, saying how to size it.
    let err = error("[j]\nrw=randread\nrandom_distribution=zoned_abs:50/1g:50\n");
    assert!(err.contains("'50' has no size: give each zone as access%/size (e.g. 50/10g)"), "{err}");
    let p = &parse("[j]\nkb_base=1000\nrw=randread\nrandom_distribution=zoned_abs:60/20g:40/100g\n").unwrap().phases[0];
    let Some(DistributionSpec::Zoned(zones)) = &p.distribution else { panic!("{:?}", p.distribution) };
    assert_eq!(zones[0].size, ZoneExtent::Bytes(Bytes(20_000_000_000)), "kb_base applies");
}

#[test]
fn file_engines_become_file_set_phases_and_concurrent_jobs_share_one() {
    use crate::spec::{FileOp, FileSelect, FormatMode};
    let job = parse("[global]\nioengine=filecreate\nnrfiles=100\nfilesize=4k\n[t0]\n[t1]\nnumjobs=2\n").unwrap();
    assert_eq!(job.phases.len(), 1, "t1 runs with t0");
    let set = job.phases[0].fileset().unwrap();
    assert_eq!(set.format, Some(FormatMode::Empty));
    assert_eq!(set.trees.iter().map(|t| t.files).collect::<Vec<_>>(), [100, 200]);
    assert_eq!(set.workloads[1].threads, Some(2));
    assert_eq!(set.workloads[0].operation, Some(FileOp::Create));
    assert_eq!(set.workloads[0].fileselect, Some(FileSelect::Once));
    let stat = parse("[j]\nioengine=filestat\nnrfiles=10\nfilesize=8k\n").unwrap();
    let set = stat.phases[0].fileset().unwrap();
    assert_eq!((set.format, set.trees[0].size.to_string()), (Some(FormatMode::Yes), "8 KiB".to_string()));
    let dirs = parse("[j]\nioengine=dirstat\nnrfiles=10\n").unwrap();
    let set = dirs.phases[0].fileset().unwrap();
    assert_eq!(
        (set.format, set.trees[0].width, set.workloads[0].dirs),
        (Some(FormatMode::Directories), 10, Some(true))
    );
}

#[test]
fn dev_null_runs_on_the_null_engine_without_a_target() {
    let job = parse("[j]\nfilename=/dev/null\nrw=write\nbs=128k\nsize=128m\n").unwrap();
    assert_eq!(job.target, None);
    assert_eq!(job.phases[0].engine, Some(EngineChoice::Null));
    assert!(job.notices.iter().any(|n| n.contains("null engine")), "{:?}", job.notices);
}

#[test]
fn fio_names_groups_and_options_are_kept_for_fio_json() {
    let job =
        parse("[global]\nsize=1m\n[a]\nrw=read\nnumjobs=2\n[b]\nstonewall\nrw=write\n[c]\nblocksize=8k\n").unwrap();
    let info: Vec<&crate::spec::FioJobInfo> = job.phases.iter().map(|p| p.fio.info.as_ref().unwrap()).collect();
    assert_eq!(info.iter().map(|i| i.group_id).collect::<Vec<_>>(), [0, 1, 1]);
    assert_eq!(info[0].job_options, [("rw".to_string(), "read".to_string()), ("numjobs".into(), "2".into())]);
    assert_eq!(info[0].global_options, [("size".to_string(), "1m".to_string())]);
    assert_eq!(info[2].job_options[0].0, "bs");
}

#[test]
fn the_verify_family_maps_onto_streamcap_s_verification() {
    use crate::spec::VerifyChoice;
    let job = parse("[j]\nrw=randwrite\nverify=crc32c-intel\nverify_backlog=16\nverify_fatal=1\n").unwrap();
    assert_eq!((job.phases[0].verify, job.phases[0].verify_backlog), (Some(VerifyChoice::Crc32c), Some(16)));
    assert!(job.notices.iter().any(|n| n.contains("verify_fatal")), "{:?}", job.notices);
    let job = parse("[j]\nrw=write\nverify=md5\n").unwrap();
    assert_eq!(job.phases[0].verify, Some(VerifyChoice::Sha256));
    assert!(job.notices.iter().any(|n| n.contains("verify=md5") && n.contains("sha256")), "{:?}", job.notices);
    let job = parse("[j]\nrw=write\nverify_pattern=0xaa555aa5\ndo_verify=0\n").unwrap();
    assert_eq!(job.phases[0].verify, Some(VerifyChoice::Pattern), "a pattern alone verifies the pattern, as in fio");
    assert!(job.notices.iter().any(|n| n.contains("do_verify=0")), "{:?}", job.notices);
    assert!(error("[j]\nrw=read\nverify=crc32c\nverify_only\n").contains("--verify-only"));
    assert!(error("[j]\nrw=write\nverify_backlog=4\n").contains("needs verify"));
}
