//! Tests of what the fio reader refuses and how it says so when a file is hostile or mistaken: unknown options
//! with their nearest name, job names that would name files outside the target, and files naming millions of
//! files (each case a reader bug the fio_job fuzzer found, docs/reliability.md).

use super::tests::{error, parse};

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
