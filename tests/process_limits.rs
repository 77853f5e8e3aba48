//! Process limits are errors with a message, never a kill or a wrong number (issue 25, item 11): a write past
//! `ulimit -f`, an allocation past `ulimit -v`, a 64 MiB memory cgroup, a `/dev/zero` catalogue, a 128 KiB stack.
//! Every run is a child process under the limit (`sh -c 'ulimit …; exec streamcap …'`, or a memory cgroup), and
//! each test says what broke before.

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{MemoryCgroup, entries, read_json, streamcap_path};

/// Runs streamcap with `args` in `dir` after the shell commands `limit` (e.g. `ulimit -f 2048`).
fn limited(dir: &Path, limit: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("{limit}; exec \"$0\" \"$@\""))
        .arg(streamcap_path())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exited with `code` (not killed by a signal) and said each of `says` on stdout or stderr.
fn ended_with(output: &Output, code: i32, says: &[&str]) {
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(output));
    assert_eq!(output.status.code(), Some(code), "{:?}: {text}", output.status);
    for words in says {
        assert!(text.contains(words), "expected '{words}' in: {text}");
    }
}

#[test]
fn a_write_past_the_file_size_limit_is_reported_and_leaves_nothing() {
    // Broke: SIGXFSZ killed the run without a word (exit 153) and left `.streamcap/run-…/data.0` behind.
    // (The shell's ulimit -f unit is 512 or 1024 bytes; the sizes below hold either way.)
    let dir = tempfile::tempdir().unwrap();
    let out = limited(dir.path(), "ulimit -f 2048", &["run", ".", "--rw", "write", "--size", "16M", "--runtime", "2s"]);
    ended_with(&out, 2, &["data.0", "File too large", "the file size limit (ulimit -f) is"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));

    // A file that grows as it is written (the ingest writer beside the viewers): the write is named with its
    // path and offset, the step ends, the run exits 1 and removes everything.
    let results = tempfile::tempdir().unwrap();
    let json = results.path().join("r.json");
    let args = ["streams", ".", "--bitrate", "8Mbit", "--count", "1", "--duration", "3s", "--media-length", "10s"];
    let mut args = args.to_vec();
    args.extend(["--ingest", "40MB/s", "--json", json.to_str().unwrap()]);
    let out = limited(dir.path(), "ulimit -f 40000", &args);
    ended_with(&out, 1, &["ingest-0-0.bin at offset", "File too large", "ulimit -f"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    assert_eq!(read_json(&json)["status"], "completed");

    // A file-set tree's format step writes files of 4 MiB, past the limit.
    let job = results.path().join("tree.toml");
    let tree = "[[phase]]\nruntime = \"1s\"\n[phase.fileset]\nformat = \"yes\"\n[[phase.fileset.tree]]\nname = \"t\"\n\
                depth = 1\nwidth = 2\nfiles = 2\nsize = \"4m\"\n[[phase.fileset.workload]]\noperation = \"read\"\n\
                xfersize = \"64k\"\nthreads = 1\n";
    std::fs::write(&job, tree).unwrap();
    let out = limited(dir.path(), "ulimit -f 4000", &["run", ".", "--job", job.to_str().unwrap()]);
    ended_with(&out, 2, &["cannot create or fill", "File too large", "ulimit -f"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn memory_beyond_ulimit_v_is_refused_up_front_with_the_figures() {
    // Broke: 1000 viewers under `ulimit -v` ran, every buffer allocation failed with ENOMEM, and the run said
    // "1000 streams stalled" with status completed. The plan now counts the address space (VmSize, thread
    // stacks, malloc arenas) and refuses before anything is written.
    let dir = tempfile::tempdir().unwrap();
    let args = ["streams", ".", "--bitrate", "1Mbit", "--count", "1000", "--duration", "2s"];
    let out = limited(dir.path(), "ulimit -v 200000", &args);
    ended_with(&out, 2, &["a step of 1000 viewers needs", "of memory", "(ulimit -v less what this process maps"]);
    assert!(!stderr(&out).contains("stalled"), "{}", stderr(&out));
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// The VmSize of process `pid`, in bytes.
fn mapped(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmSize:")).unwrap().trim().trim_end_matches("kB");
    kib.trim().parse::<u64>().unwrap() * 1024
}

#[test]
fn an_allocation_that_fails_mid_run_is_a_memory_error_not_stalls() {
    // Broke: a stream step whose buffers could not be allocated (ENOMEM) was counted as every viewer stalling,
    // and the search went on. Here the address-space limit is lowered (prlimit) once the first step has run, so
    // the next step's allocation fails: the phase fails with the memory's words, exit 2, no stalls reported.
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let json = results.path().join("r.json");
    let mut child = Command::new(streamcap_path())
        .args(["streams", ".", "--bitrate", "8Mbit", "--max", "--limit", "64", "--no-estimate", "--duration", "2s"])
        // A library of 256 MiB, not the default 8 GiB: the failure is the viewers' buffers, not the media. Not
        // kept (`--remove-library`): a failed run leaves nothing.
        .args(["--ramp", "500ms", "--library-size", "256M", "--remove-library", "--json"])
        .arg(&json)
        .current_dir(dir.path())
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = KillOnDrop(Some(child.id()));
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains(" streams: ") {
            break;
        }
    }
    assert!(said.contains(" streams: "), "the first step never ended: {said}");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let limit = mapped(child.id()) + (1 << 20);
    let cap = rustix::process::Rlimit { current: Some(limit), maximum: Some(limit) };
    rustix::process::prlimit(Some(pid), rustix::process::Resource::As, cap).unwrap();
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let status = child.wait().unwrap();
    guard.0 = None;
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(said.contains("error: 'streams' failed") && said.contains("out of memory"), "{said}");
    let result = read_json(&json);
    assert_eq!(result["status"], "failed", "{said}");
    for step in result["streams"]["steps"].as_array().unwrap() {
        assert_ne!(step["stalled"], step["count"], "a failed step was reported as all viewers stalling: {step}");
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// Stops the child (Ctrl-C, so it removes its files) if the test fails before it has ended.
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
    }
}

/// A result of more than 7 MB: the fixture's phase with 2,048 intervals (the most a phase keeps), repeated.
fn large_result(path: &Path) -> u64 {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
    let mut result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let mut phase = result["phases"][1].clone();
    let point = phase["intervals"][0].clone();
    phase["intervals"] = serde_json::Value::Array(vec![point; 2048]);
    let size = serde_json::to_string(&phase).unwrap().len();
    let phases: Vec<serde_json::Value> = (0..7_300_000 / size + 1).map(|_| phase.clone()).collect();
    result["phases"] = serde_json::Value::Array(phases);
    let text = serde_json::to_string(&result).unwrap();
    std::fs::write(path, &text).unwrap();
    text.len() as u64
}

/// A TOML job of 8.6 MB: 10,000 phases (the most a job may have) with long names.
fn large_job(path: &Path) -> u64 {
    let mut job = String::from("[global]\nsize = \"1M\"\nruntime = \"1s\"\n");
    for i in 0..10_000 {
        job.push_str(&format!("[[phase]]\nname = \"p{i}-{}\"\nrw = \"randread\"\nbs = \"4k\"\n", "x".repeat(800)));
    }
    std::fs::write(path, &job).unwrap();
    job.len() as u64
}

#[test]
fn a_large_result_and_a_large_job_fit_in_a_64_mib_memory_cgroup() {
    // Broke: `report` of a 7.2 MB result took 166 MB (the text parsed into a JSON tree first) and a dry run of
    // an 8.6 MB job 700 MB (179,166 phases, each read, copied and planned): both were OOM-killed in 64 MiB.
    let test = "a_large_result_and_a_large_job_fit_in_a_64_mib_memory_cgroup";
    let Some(group) = MemoryCgroup::new(test, "sc-limits-report", 64 << 20) else { return };
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("large.json");
    assert!(large_result(&result) > 7_000_000);
    let out = group.run_streamcap(&["report", result.to_str().unwrap()]);
    ended_with(&out, 0, &["phase"]);
    let job = dir.path().join("large.toml");
    assert!(large_job(&job) > 8_500_000);
    let target = tempfile::tempdir().unwrap();
    let out =
        group.run_streamcap(&["run", target.path().to_str().unwrap(), "--job", job.to_str().unwrap(), "--dry-run"]);
    ended_with(&out, 0, &["phase 10000: p9999-"]);
    // A job of more phases than that is refused before it is parsed, in a few MB.
    let many = dir.path().join("many.toml");
    std::fs::write(&many, "[[phase]]\nrw = \"read\"\nbs = \"4k\"\n".repeat(179_166)).unwrap();
    let out = group.run_streamcap(&["run", target.path().to_str().unwrap(), "--job", many.to_str().unwrap()]);
    ended_with(&out, 2, &["179166 phases or more", "at most 10000"]);
    assert!(entries(target.path()).is_empty());
}

#[test]
fn a_catalogue_that_never_ends_is_refused_at_once() {
    // Broke: `plan --drives /dev/zero` read without bound (5 GB in 7 s): the 16 MiB cap on input files was not
    // applied to the catalogue.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = limited(dir.path(), "ulimit -v 1048576", &["plan", "--drives", "/dev/zero"]);
    ended_with(&out, 2, &["/dev/zero", "larger than 16 MiB"]);
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

#[test]
fn commands_run_on_a_128_kib_stack() {
    // Broke: `ulimit -s 128` aborted a plain run with a stack overflow (its set-up frames on the main thread),
    // and a fio size of 200,000 nested parentheses overflowed any stack.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    let stack = "ulimit -s 128";
    let out =
        limited(dir.path(), stack, &["run", target, "--rw", "read", "--size", "8M", "--runtime", "1s", "--quiet"]);
    ended_with(&out, 0, &[]);
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");
    ended_with(&limited(dir.path(), stack, &["report", fixture]), 0, &["phase"]);
    let drives = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/drives.toml");
    ended_with(&limited(dir.path(), stack, &["plan", "--drives", drives]), 0, &["raid"]);
    let deep = dir.path().join("deep.fio");
    std::fs::write(&deep, format!("[j]\nrw=read\nsize={}1m{}\n", "(".repeat(200_000), ")".repeat(200_000))).unwrap();
    let out = limited(dir.path(), stack, &["run", target, "--job", deep.to_str().unwrap(), "--dry-run"]);
    ended_with(&out, 2, &["(400002 characters)", "an expression nested at most 64 levels deep"]);
    let out = limited(dir.path(), stack, &["streams", target, "--bitrate", "8Mbit", "--count", "2", "--dry-run"]);
    ended_with(&out, 0, &["2 viewers"]);
    assert_eq!(entries(dir.path()), vec!["deep.fio".to_string()]);
}
