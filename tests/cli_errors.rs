//! Bad input: every mistake gets one clear message that names the problem and the fix, exit code 2, and
//! nothing is created on disk.

mod common;

use common::{entries, streamcap};
use predicates::prelude::*;

fn refused(args: &[&str], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = streamcap();
    cmd.arg("run").arg(dir.path()).args(args);
    let mut assert = cmd.assert().code(2);
    for text in expect {
        assert = assert.stderr(predicate::str::contains(*text));
    }
    assert!(entries(dir.path()).is_empty(), "{args:?} left {:?} behind", entries(dir.path()));
}

#[test]
fn unknown_flags_and_values_are_usage_errors() {
    refused(&["--bogus"], &["--bogus"]);
    refused(&["--rw", "sideways"], &["sideways", "randread"]);
    refused(&["--rw", "read", "--bs", "4q"], &["4q", "4k-64k"]);
    refused(&["--rw", "read", "--bs", "64k-4k"], &["smaller size first"]);
    refused(&["--rw", "randread", "--distribution", "zipf"], &["zipf:θ"]);
    refused(&["--rw", "read", "--runtime", "10 fortnights"], &["duration"]);
    refused(&["--rw", "randrw", "--rdpct", "150"], &["150"]);
    refused(&["--direct", "--buffered", "--rw", "read"], &["cannot be used with"]);
}

#[test]
fn a_raw_io_flag_on_a_job_with_a_streams_or_file_set_phase_is_refused() {
    // A flag sets fields of the kind it belongs to: `--iodepth` means nothing to stream viewers or a file set,
    // and was dropped without a word before the phase kind became a type.
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/raw-fileset-streams.toml");
    refused(&["--job", job, "--iodepth", "8", "--dry-run"], &["--iodepth sets raw I/O", "phase 2 ('small files')"]);
    refused(&["--job", job, "--rw", "randread", "--dry-run"], &["--rw sets raw I/O", "file-set phase"]);
    let dir = tempfile::tempdir().unwrap();
    let ok = streamcap().arg("run").arg(dir.path()).args(["--job", job, "--runtime", "2s", "--dry-run"]).assert();
    ok.success().stdout(predicate::str::contains("viewers"));
}

#[test]
fn a_zero_interval_is_refused() {
    // Regression: --interval 0s shipped empty snapshots in a loop until the kernel killed the process.
    refused(&["--rw", "read", "--interval", "0s"], &["interval must be at least 10ms"]);
}

#[test]
fn contradictions_name_the_fix() {
    refused(&["--rw", "read", "--rdpct", "70"], &["rdpct only applies to mixed modes", "randrw"]);
    refused(&["--rw", "read", "--rate", "10MB/s", "--rate-iops", "100"], &["not both"]);
    refused(&["--rw", "read", "--jobs", "0"], &["jobs must be at least 1"]);
    // The alignment is what the filesystem reports (512 B or 4 KiB); 6000 bytes is a multiple of neither.
    refused(&["--rw", "randread", "--bs", "6000", "--size", "16M"], &["is not a multiple of", "--buffered"]);
    refused(&["--rw", "read", "--engine", "warp"], &["engine", "io_uring"]);
}

#[test]
fn an_oversized_data_set_is_refused_with_the_numbers_before_anything_is_written() {
    refused(&["--rw", "randread", "--size", "100T"], &["not enough free space", "100 TiB", "free"]);
}

#[test]
fn a_missing_target_says_what_to_give() {
    streamcap()
        .args(["run", "/nonexistent/streamcap-target", "--rw", "read"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist").and(predicate::str::contains("directory")));
}

#[test]
fn existing_files_are_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let movie = dir.path().join("movie.mkv");
    std::fs::write(&movie, vec![7u8; 1 << 20]).unwrap();
    streamcap()
        .arg("run")
        .arg(&movie)
        .args(["--rw", "write"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("never writes to files it did not create"));
    assert_eq!(std::fs::read(&movie).unwrap(), vec![7u8; 1 << 20], "the file is untouched");
}

/// Runs a job file named `name` with `text` against an empty directory: refused (exit 2) with every `expect`,
/// and nothing created.
fn refused_job(name: &str, text: &str, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join(name);
    std::fs::write(&job, text).unwrap();
    let target = tempfile::tempdir().unwrap();
    let mut assert = streamcap().arg("run").arg(target.path()).arg("--job").arg(&job).assert().code(2);
    for text in expect {
        assert = assert.stderr(predicate::str::contains(*text));
    }
    assert!(entries(target.path()).is_empty());
}

#[test]
fn bad_job_files_point_at_the_line() {
    let text = "[global]\nsize = \"64M\"\n\n[[phase]]\nrw = \"randread\"\nbz = \"4k\"\n";
    refused_job("bad.toml", text, &["bad.toml", "line 6", "bz"]);
}

#[test]
fn job_files_in_other_dialects_are_recognised_and_explained() {
    // fio files are read now: what is refused is an option streamcap cannot honour, named with its line.
    refused_job(
        "random.fio",
        "[global]\nioengine=libaio\n[job1]\nrw=randread\nzonemode=strided\n",
        &["random.fio", "line 5", "zonemode"],
    );
}

#[test]
fn a_job_without_rw_explains_what_to_add() {
    refused_job("empty.toml", "[[phase]]\nbs = \"4k\"\n", &["rw = \"randread\""]);
}

#[test]
fn a_result_path_in_a_missing_directory_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "read", "--size", "16M", "--json", "/nonexistent/dir/r.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/dir"));
    assert!(entries(dir.path()).is_empty());
}

/// Regression (issue 30): clap said "error:" and streamcap "Error:". Every refusal now begins the same way,
/// whoever refuses: clap (an unknown flag), the plan (a contradiction) or a command (a missing file).
#[test]
fn every_refusal_begins_with_one_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let cases: [Vec<std::ffi::OsString>; 3] = [
        vec!["run".into(), "--bogus".into()],
        vec!["run".into(), dir.path().into(), "--buffered".into(), "--direct".into()],
        vec!["report".into(), missing.into()],
    ];
    for args in cases {
        let output = streamcap().args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("Error:"), "{args:?}: {stderr}");
    }
    assert!(entries(dir.path()).is_empty());
}

/// Runs `streamcap CMD DIR ARGS` against an empty directory: refused (exit 2) with every `expect`, and nothing
/// created there.
fn refused_command(command: &str, args: &[&str], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut assert = streamcap().arg(command).arg(dir.path()).args(args).assert().code(2);
    for text in expect {
        assert = assert.stderr(predicate::str::contains(*text));
    }
    assert!(entries(dir.path()).is_empty(), "{args:?} left {:?} behind", entries(dir.path()));
}

/// Issue 27: `--player` takes the names of one table (spec::players) in `check` and `streams` alike, and
/// `streams --expect` takes check's household grammar for the format it streams, and nothing else.
#[test]
fn unknown_players_and_households_of_other_formats_are_refused_before_any_work() {
    refused_command("check", &["--quick", "--player", "quicktime"], &["quicktime", "media3", "jellyfin-web"]);
    refused_command("streams", &["--bitrate", "1080p", "--max", "--player", "quicktime"], &["quicktime", "vlc"]);
    let streams = ["--bitrate", "2160p", "--max", "--expect"];
    refused_command("streams", &[&streams[..], &["2x1080p"]].concat(), &["this run streams 2160p, not 1080p"]);
    refused_command("streams", &[&streams[..], &["2xfoo"]].concat(), &["foo", "2160p-remux"]);
    refused_command("streams", &["--bitrate", "2160p", "--count", "2", "--expect", "2x2160p"], &["give --max"]);
}
