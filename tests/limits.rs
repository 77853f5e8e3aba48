//! Limits up front (issue 9): numbers a user types that would wrap around, exhaust memory or threads, or read
//! without end are refused before anything is allocated or created, with the numbers and exit code 2.
//!
//! Memory claims are checked under `ulimit -v`: a run that allocated what it was asked for before refusing would
//! abort on the allocation instead of exiting 2 with a message.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{entries, is_root, streamcap, streamcap_path};
use predicates::prelude::*;

/// Runs streamcap with `args` (a shell word list) in `dir` under a virtual-memory cap of `mib` MiB.
fn under_memory_cap(dir: &Path, mib: u64, args: &str) -> Output {
    let script = format!("ulimit -v {}; exec {} {args}", mib * 1024, streamcap_path().display());
    Command::new("sh").arg("-c").arg(script).current_dir(dir).env_remove("RUST_BACKTRACE").output().unwrap()
}

fn refused_with(output: &Output, expect: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    for text in expect {
        assert!(stderr.contains(text), "expected '{text}' in: {stderr}");
    }
}

#[test]
fn a_size_of_16_eib_is_refused_with_a_message() {
    // Broke: `--size 16384P` failed with "out of range integral type conversion attempted".
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .args(["run", ".", "--rw", "write", "--size", "16384P"])
        .current_dir(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("below 16 EiB"));
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_size_near_16_eib_does_not_wrap_the_free_space_check() {
    // Broke: the data set plus the 64 MiB reserve wrapped around to a few MiB, passed the free-space check and
    // filled the filesystem.
    let dir = tempfile::tempdir().unwrap();
    let output = under_memory_cap(dir.path(), 1024, "run . --rw write --size 18446744073675997184 --files 4");
    refused_with(&output, &["not enough free space", "16384.00 PiB"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn files_beyond_the_per_job_limit_are_refused_before_allocating() {
    // Broke: `--files 100000000` built 100 million file names (5.3 GB) before refusing them.
    let dir = tempfile::tempdir().unwrap();
    let output = under_memory_cap(dir.path(), 1024, "run . --rw write --size 8M --files 100000000");
    refused_with(&output, &["100000000 files per job", "1024"]);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn buffers_beyond_the_memory_available_are_refused_with_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let output = under_memory_cap(dir.path(), 1024, "run . --rw randread --jobs 4096 --iodepth 4096 --bs 1M");
    refused_with(&output, &["of memory: at least 16.00 TiB for its buffers", "is available here"]);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn job_and_result_files_are_read_with_a_size_cap() {
    // Broke: `--job /dev/zero` and `report /dev/zero` read until memory ran out.
    let dir = tempfile::tempdir().unwrap();
    let output = under_memory_cap(dir.path(), 1024, "run . --job /dev/zero");
    refused_with(&output, &["/dev/zero", "larger than 16 MiB"]);
    let output = under_memory_cap(dir.path(), 1024, "report /dev/zero");
    refused_with(&output, &["/dev/zero", "larger than 16 MiB"]);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn include_fan_out_in_a_job_file_is_capped() {
    // Broke: ten includes per file over nine levels ran on (a billion reads).
    let dir = tempfile::tempdir().unwrap();
    for level in 0..9 {
        let body = format!("include l{}.fio\n", level + 1).repeat(10);
        std::fs::write(dir.path().join(format!("l{level}.fio")), body).unwrap();
    }
    std::fs::write(dir.path().join("l9.fio"), "[j]\nrw=read\nsize=1m\n").unwrap();
    let target = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(target.path())
        .arg("--job")
        .arg(dir.path().join("l0.fio"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nested more than 8 deep"));
    assert!(entries(target.path()).is_empty());
}

#[test]
fn a_job_of_10000_phases_plans_and_one_of_200000_is_refused_at_once() {
    // Broke (issue 9): every phase recounted the job's shared files and searched all earlier phases, so 200,000
    // phases took tens of minutes to validate; linear planning plans the most a job may have (10,000) in
    // seconds. Broke (issue 25): 200,000 phases were then planned in 600 MB; they are refused before parsing.
    let dir = tempfile::tempdir().unwrap();
    let job = |phases: usize| {
        let mut job = String::from("[global]\nsize = \"1M\"\nruntime = \"1s\"\n");
        job.push_str(&"[[phase]]\nrw = \"read\"\n".repeat(phases));
        let path = dir.path().join(format!("{phases}.toml"));
        std::fs::write(&path, job).unwrap();
        path
    };
    let target = tempfile::tempdir().unwrap();
    streamcap().arg("run").arg(target.path()).arg("--job").arg(job(10_000)).arg("--dry-run").assert().success();
    let output = under_memory_cap(target.path(), 1024, &format!("run . --job {} --dry-run", job(200_000).display()));
    refused_with(&output, &["200000 phases or more", "at most 10000 in one job"]);
    assert!(entries(target.path()).is_empty());
}

#[test]
fn streams_counts_that_cannot_run_are_refused_before_any_media_is_written() {
    // Broke: `--count 4294967295` aborted on a 34 GB allocation; `--max --limit 0` panicked (index out of
    // bounds); `--duration 0`, `--workers 0` and `--inflight 0` were accepted silently.
    let dir = tempfile::tempdir().unwrap();
    let output = under_memory_cap(dir.path(), 2048, "streams . --bitrate 8Mbit --count 4294967295");
    refused_with(&output, &["a step of 4294967295 viewers needs", "--count"]);
    for (args, expect) in [
        ("--max --limit 0", "--limit must be at least 1"),
        ("--count 2 --duration 0", "--duration must be above zero"),
        ("--count 2 --workers 0", "--workers must be at least 1"),
        ("--count 2 --inflight 0", "--inflight must be at least 1"),
    ] {
        let output = under_memory_cap(dir.path(), 2048, &format!("streams . --bitrate 8Mbit {args}"));
        refused_with(&output, &[expect]);
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn force_without_allow_device_writes_is_an_error() {
    // Broke: `--force` alone was accepted and did nothing.
    let dir = tempfile::tempdir().unwrap();
    streamcap()
        .args(["run", ".", "--rw", "read", "--force"])
        .current_dir(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--allow-device-writes"));
    assert!(entries(dir.path()).is_empty());
}

/// A pids cgroup (v1) with a task limit; removed on drop.
struct PidsCgroup(std::path::PathBuf);

impl PidsCgroup {
    fn new(max: u32) -> Option<PidsCgroup> {
        let root = Path::new("/sys/fs/cgroup/pids");
        if !is_root() || !root.join("cgroup.procs").exists() {
            return None;
        }
        let path = root.join(format!("sc-limits-{}", std::process::id()));
        std::fs::create_dir(&path).ok()?;
        let group = PidsCgroup(path);
        std::fs::write(group.0.join("pids.max"), max.to_string()).ok()?;
        Some(group)
    }

    fn run(&self, dir: &Path, args: &str) -> Output {
        let script =
            format!("echo $$ > {}/cgroup.procs && exec {} {args}", self.0.display(), streamcap_path().display());
        Command::new("sh").arg("-c").arg(script).current_dir(dir).env_remove("RUST_BACKTRACE").output().unwrap()
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn jobs_beyond_the_pids_limit_are_refused_before_any_thread_starts() {
    // Broke: `run --jobs 300` under a pids limit panicked with "failed to spawn thread" halfway into a phase.
    let Some(group) = PidsCgroup::new(64) else {
        common::skip("jobs_beyond_the_pids_limit_are_refused_before_any_thread_starts: needs root and cgroup v1 pids");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = group.run(dir.path(), "run . --rw read --jobs 300 --size 8M --runtime 1s");
    refused_with(&output, &["needs 300 threads", "may start only"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    let output = group.run(dir.path(), "streams . --bitrate 8Mbit --count 2 --duration 1s --workers 300 --inflight 1");
    refused_with(&output, &["300 threads", "--workers"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    // Within the limit the same run works.
    let output = group.run(dir.path(), "run . --rw read --jobs 4 --size 8M --runtime 1s --quiet");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn times_beyond_what_a_duration_holds_are_refused_in_vdbench_files() {
    // Found by the vdbench_job fuzz target: `interval=` with 27 digits panicked turning float seconds into a
    // Duration ("value is either too big or NaN") instead of naming the value.
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("huge.vdb");
    let text = "sd=sd1,lun=/tmp/x,size=1m\nwd=wd1,sd=sd1,xfersize=4k,rdpct=100\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=40,interval=111111111111111111111111111\n";
    std::fs::write(&job, text).unwrap();
    let target = tempfile::tempdir().unwrap();
    let output = streamcap()
        .arg("run")
        .arg(target.path())
        .arg("--job")
        .arg(&job)
        .arg("--anchor")
        .arg(format!("/tmp/x={}", target.path().join("x").display()))
        .arg("--dry-run")
        .output()
        .unwrap();
    refused_with(&output, &["interval"]);
    assert!(entries(target.path()).is_empty());
}
