//! Tests of what the fio reader refuses and how it says so when a file is hostile or mistaken: unknown options
//! with their nearest name, job names that would name files outside the target, and files naming millions of
//! files (each case a reader bug the fio_job fuzzer found, docs/reliability.md), and values fio takes that
//! streamcap cannot run as fio would.

use super::tests::{error, parse};
use crate::spec::BlockSizeSpec;
use crate::units::Bytes;

#[test]
fn an_unknown_option_is_reported_once_with_the_name_it_is_closest_to() {
    let err = error("[global]\nblocksiz=4k\nrw=read\n[a]\nsize=1m\n[b]\nsize=1m\n[c]\nsize=1m\nnope_at_all=1\n");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains("line 2: unknown option 'blocksiz' (did you mean 'blocksize'?): streamcap reads"),
        "{err}"
    );
    assert!(lines[1].contains("line 10: unknown option 'nope_at_all': streamcap reads"), "{err}");
}

#[test]
fn job_names_and_formats_that_would_name_files_outside_the_target_are_refused_not_a_panic() {
    // Found by the fio_job fuzzer: fio's default format with a job named "[/randread-qd32]" panicked.
    let err = error("[/randread-qd32]\nrw=read\nsize=1m\nnrfiles=2\n");
    assert!(err.contains("line 1: job '/randread-qd32' cannot name its files"), "{err}");
    assert!(err.contains("rename the job or give filename="), "{err}");
    let err = error("[../up]\nrw=read\nsize=1m\nnumjobs=2\n");
    assert!(err.contains("job '../up' cannot name its files"), "{err}");
    let err = error("[j]\nrw=read\nsize=1m\nnrfiles=2\nfilename_format=../$jobname.$filenum\n");
    assert!(err.contains("option 'filename_format': '../$jobname.$filenum' gives '../j.0'"), "{err}");
    assert!(parse("[j]\nrw=read\nsize=1m\nnrfiles=2\nfilename_format=./sub.$jobname.$filenum\n").is_ok());
}

#[test]
fn the_jobs_of_one_file_name_at_most_a_million_files_together() {
    // Found by the fio_job fuzzer: nrfiles=1m in [global] made a million names for every job after it.
    let err = error("[global]\nnrfiles=600k\nrw=read\nsize=1g\n[a]\n[b]\n[c]\n");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("line 6: job 'b': the jobs up to here name 1228800 files together"), "{err}");
    assert!(lines[1].contains("line 7: job 'c'"), "{err}");
}

/// fio issues 4,000-byte buffered reads for bs=4k under kb_base=1000 (checked with fio 3.33: 250 reads over
/// size=1m); streamcap's offsets are whole 512-byte sectors, so the reader refuses it saying how to write it
/// (the plan's message named "3.91 KiB" without a word of kb_base).
#[test]
fn kb_base_1000_block_sizes_must_be_whole_sectors() {
    let err = error("[j]\nkb_base=1000\nrw=randread\nbs=4k\nsize=1m\n");
    assert!(err.contains("option 'bs': '4k' is 4000 bytes under kb_base=1000"), "{err}");
    assert!(err.contains("give sizes in KiB (bs=4KiB is 4,096 bytes"), "{err}");
    let err = error("[j]\nkb_base=1000\nrw=randread\nbssplit=4k/50:64k/50\n");
    assert!(err.contains("option 'bssplit'"), "{err}");
    // Sizes that are whole sectors pass (128k is 128,000 bytes, 250 sectors), and KiB is 1024 there.
    let p = &parse("[j]\nkb_base=1000\nrw=randread\nbs=4KiB\n").unwrap().phases[0];
    assert_eq!(p.bs, Some(BlockSizeSpec::Fixed(Bytes(4096))));
    let p = &parse("[j]\nkb_base=1000\nrw=read\nbsrange=128k-256k\n").unwrap().phases[0];
    assert_eq!(p.bs, Some(BlockSizeSpec::Range(Bytes(128_000), Bytes(256_000))));
}
