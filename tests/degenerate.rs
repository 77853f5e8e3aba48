//! Degenerate values are refused up front with their reason, in every command, and messages say what is wrong
//! (issue 25, items 12 and 13). Each case ran before and gave a meaningless answer, an abort or a misleading
//! sentence; now it is exit 2 (or, for a missed `--expect`, exit 1) with the words below, and nothing is created.

mod common;

use std::path::Path;

use common::{entries, streamcap};

/// Runs streamcap with `args` (with `{dir}` replaced by `dir`) and returns (exit code, stdout + stderr).
fn run(dir: &Path, args: &str) -> (Option<i32>, String) {
    let words: Vec<String> = args.split_whitespace().map(|w| w.replace("{dir}", &dir.display().to_string())).collect();
    let output = streamcap().args(&words).current_dir(dir).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[test]
fn degenerate_values_are_refused_up_front_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let drives = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/drives.toml");
    let huge = dir.path().join("huge.toml");
    let text = std::fs::read_to_string(drives).unwrap().replace("capacity = \"20TB\"", "capacity = \"16000P\"");
    std::fs::write(&huge, text).unwrap();
    let plan = format!("plan --drives {drives}");
    let cases: Vec<(String, &str)> = vec![
        // trial gave its players a 1 s buffer for 1.05 s chunks and reported "sustains 0 × 1080p"; now refused
        // before any device is looked at (/dev/null would be refused after).
        ("trial /dev/null --layouts mirror --runtime 1s".into(), "--runtime 1 s is too short for the stream search"),
        ("trial /dev/null --layouts mirror --chunk 0".into(), "a chunk of 0 B is out of range"),
        ("trial /dev/null --layouts mirror --size 0".into(), "expected a size above zero"),
        ("trial /dev/null --layouts mirror --runtime 0".into(), "expected a duration above zero"),
        // streams ran viewers whose starts spread over 1,000 days.
        ("streams {dir} --bitrate 1080p --count 2 --ramp 1000d --dry-run".into(), "is longer than a day"),
        ("streams {dir} --bitrate 1080p --count 2 --buffer 1s --prebuffer 1s --dry-run".into(), "than one chunk"),
        ("streams {dir} --bitrate 1080p --count 2 --seek-every 0 --dry-run".into(), "--seek-every must be above zero"),
        ("streams {dir} --bitrate 1080p --count 2 --max-startup 0 --dry-run".into(), "--max-startup must be above"),
        // plan modelled chunks of 0 bytes ("a chunk every 0 ms"), and pools past 2^64 bytes as 18446744.1 TB.
        (format!("{plan} --chunk 0"), "a chunk of 0 B is out of range"),
        (format!("plan --drives {} --count 4", huge.display()), "holds more than 16 EiB in all"),
        (format!("{plan} --pool mg10-20tb:100000000000"), "a pool holds at most 64"),
        (format!("{plan} --reader-threads 0"), "--reader-threads"),
        (format!("{plan} --data-set 0"), "expected a size above zero"),
        (format!("{plan} --file-workload size=0"), "expected a size above zero"),
        ("cache {dir} --chunk 0 --dry-run".into(), "a chunk of 0 B is out of range"),
        ("sweep {dir} --budget 0 --dry-run".into(), "expected a duration above zero"),
        // sweep --memory below 64 KiB was OOM-killed without a word, and its cgroup stayed.
        ("sweep {dir} --memory 32k --dry-run".into(), "--memory 32 KiB is less than the sweep can run in"),
        ("sweep {dir} --memory 32k".into(), "give --memory 19M or more"),
    ];
    for (args, says) in &cases {
        let (code, text) = run(dir.path(), args);
        assert_eq!(code, Some(2), "{args}: {text}");
        assert!(text.contains(says), "{args}: expected '{says}' in: {text}");
    }
    assert_eq!(entries(dir.path()), vec!["huge.toml".to_string()]);
}

#[test]
fn misleading_messages_now_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    // "expected every weight is zero", as if zero weights were asked for.
    let (code, text) = run(dir.path(), "run {dir} --rw randread --bs 4k/0:64k/0 --dry-run");
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("expected weights above zero that add up to at most 100 (here every weight is zero"),
        "{text}"
    );
    // --from without --verify-only was ignored without a word when --verify-only would conflict with --rw.
    let (code, text) = run(dir.path(), "run {dir} --rw read --from {dir}/.streamcap/run-x --dry-run");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("no --verify-only was given: add --verify-only ALGO"), "{text}");
    // `inspect /proc` said "the data lives on the devices below" and named none.
    let (code, text) = run(dir.path(), "inspect /proc");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("in RAM     no data at all: proc is the kernel's view"), "{text}");
    assert!(!text.contains("devices below"), "{text}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn a_missed_expect_says_why_it_exits_1() {
    // Broke: `streams --count 2 --expect 5` exited 1 with no reason.
    let dir = tempfile::tempdir().unwrap();
    // A library of two titles (not the default 8 GiB): what is asserted is the words, not the media.
    let (code, text) = run(
        dir.path(),
        "streams {dir} --bitrate 8Mbit --count 2 --expect 5 --duration 1s --library-size 128M --remove-library --quiet",
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("missed --expect 5: this run played 2 streams (--count 2), so it cannot show 5"), "{text}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
