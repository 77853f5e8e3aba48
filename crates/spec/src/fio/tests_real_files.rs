//! Tests of the options found in the fio files people really write (issue 29): each as fio reads it, checked
//! against fio's source (parse.c, options.c, HOWTO) and, where fio is installed, against fio itself in
//! tests/fio_compat.rs.

use super::tests::parse;
use crate::units::Bytes;

#[test]
fn overwrite_bwavgtime_and_iopsavgtime_are_accepted_with_a_notice() {
    // Several public job files stopped at these as unknown options.
    let job = parse("[j]\nrw=write\nsize=1m\noverwrite=1\nbwavgtime=1000\niopsavgtime=1000\n").unwrap();
    for option in ["overwrite", "bwavgtime", "iopsavgtime"] {
        assert!(job.notices.iter().any(|n| n.contains(&format!("'{option}'"))), "{option}: {:?}", job.notices);
    }
}

#[test]
fn randrepeat_0_draws_a_seed_per_run_and_randseed_wins() {
    // Issue 29: randrepeat=0 was ignored, so every run repeated the same offsets.
    let first = parse("[j]\nrw=randread\nsize=1m\nrandrepeat=0\n").unwrap();
    let seed = first.phases[0].seed.expect("a seed of its own");
    assert!(first.notices.iter().any(|n| n.contains(&format!("randseed={seed} repeats it"))), "{:?}", first.notices);
    let seeds: Vec<u64> =
        (0..4).map(|_| parse("[j]\nrw=randread\nsize=1m\nrandrepeat=0\n").unwrap().phases[0].seed.unwrap()).collect();
    assert!(seeds.iter().any(|s| *s != seed), "four more runs drew the same seed {seed}: {seeds:?}");
    let said = parse("[j]\nrw=randread\nsize=1m\nrandrepeat=0\nrandseed=7\n").unwrap();
    assert_eq!(said.phases[0].seed, Some(7));
    assert!(parse("[j]\nrw=randread\nsize=1m\n").unwrap().phases[0].seed.is_none(), "fio's default repeats");
}

#[test]
fn loops_over_a_size_not_in_bytes_are_passes_over_the_data() {
    // Issue 29: size=100% with loops=2 ran one pass.
    let p = &parse("[j]\nrw=read\nbs=4k\nsize=100%\nloops=2\n").unwrap().phases[0];
    assert_eq!((p.size_percent, p.io_passes, p.io_size), (Some(100.0), Some(2.0), None));
    // Clones of one shared file each make their passes.
    let p = &parse("[j]\nrw=read\nbs=4k\nsize=50%\nloops=3\nnumjobs=2\nfilename=shared\n").unwrap().phases[0];
    assert_eq!(p.io_passes, Some(6.0));
    // In bytes it stays an amount, as before.
    let p = &parse("[j]\nrw=read\nbs=4k\nsize=1m\nloops=2\n").unwrap().phases[0];
    assert_eq!((p.io_size, p.io_passes), (Some(Bytes::mib(2)), None));
}

#[test]
fn exitall_on_error_is_the_job_s_own_with_its_exit_what() {
    // Issue 29: refused as "not supported yet". fio keeps it per job (td->o.exitall_error), unlike exitall.
    let job = parse("[global]\nsize=1m\nrw=read\n[a]\nexitall_on_error\nexit_what=all\n[b]\n[c]\nexitall_on_error=1\n")
        .unwrap();
    let scopes: Vec<_> = job.phases.iter().map(|p| p.fio.info.as_ref().unwrap().exit_on_error).collect();
    assert_eq!(scopes, [Some(crate::spec::ExitWhat::All), None, Some(crate::spec::ExitWhat::Group)]);
    assert!(job.phases.iter().all(|p| p.fio.info.as_ref().unwrap().exit_all.is_none()), "not exitall");
}

#[test]
fn buffer_pattern_reads_as_fio_s_pattern_parser_does() {
    // Issue 29: refused, though the OpenZFS performance suite sets it in every file.
    let pattern = |text: &str| {
        let job = parse(&format!("[j]\nrw=write\nsize=1m\nbuffer_pattern={text}\n")).unwrap();
        job.phases[0].data.as_ref().and_then(|d| d.pattern.clone()).unwrap()
    };
    assert_eq!(pattern("0xdeadbeef"), [0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(pattern("0xabc"), [0x0a, 0xbc], "an odd count: the first digit is a byte of its own");
    assert_eq!(pattern("0xff0x14"), [0xff, 0x14]);
    assert_eq!(pattern("\"abcd\""), *b"abcd");
    assert_eq!(pattern("-12"), (-12i32 as u32).to_le_bytes());
    assert_eq!(pattern("258"), [2, 1], "least significant byte first, as few bytes as hold it");
    assert_eq!(pattern("0"), [0]);
    assert_eq!(pattern("0xdeadface\"ab\"-12"), [0xde, 0xad, 0xfa, 0xce, b'a', b'b', 0xf4, 0xff, 0xff, 0xff]);
    for bad in ["'file'", "%o", "0x", "\"open"] {
        let err = super::tests::error(&format!("[j]\nrw=write\nsize=1m\nbuffer_pattern={bad}\n"));
        assert!(err.contains("buffer_pattern"), "{bad}: {err}");
    }
    let both = parse("[j]\nrw=write\nsize=1m\nbuffer_pattern=0x00\nbuffer_compress_percentage=50\n").unwrap();
    let err = both.check().unwrap_err();
    assert!(err.contains("not with data.dedupe-percent or data.compress-percent"), "{err}");
}

#[test]
fn jobs_on_several_devices_run_on_the_target_given() {
    // Issue 29: a file naming four devices was refused even with one TARGET given.
    use super::ini::tests::FakeHost;
    use std::path::Path;
    let text = "[global]\nrw=randread\nbs=4k\ndirect=1\n[a]\nfilename=/dev/sdb\n[b]\nfilename=/dev/sdc\nnumjobs=4\n";
    let path = Path::new("/jobs/devices.fio");
    let err = super::parse_fio_job_on(path, text, &FakeHost::default(), &Default::default()).unwrap_err().to_string();
    assert!(err.contains("give the target on the command line"), "{err}");
    let job = super::parse_fio_job_on(
        path,
        text,
        &FakeHost::default(),
        &super::Targets { given: Some(Path::new("/dev/sdz")), ..Default::default() },
    )
    .unwrap();
    assert_eq!(job.phases.len(), 2);
    assert!(
        job.notices.iter().any(|n| n.contains("job 'b' names /dev/sdc and an earlier job /dev/sdb")
            && n.contains("every job runs on /dev/sdz")),
        "{:?}",
        job.notices
    );
    // The clones of a job on a device share it: one data set, not four.
    assert_eq!(job.phases[1].jobs, Some(4));
    assert_eq!(job.phases[1].sharing, Some(crate::spec::Sharing::Whole));
}
