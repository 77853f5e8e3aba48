//! One conformance body over every engine (ripgrep's habit: one assertion through every strategy): `run`,
//! `streams` and `check` each take their whole path — plan, the one I/O core, the result — on the sync engine
//! (one I/O in flight per thread), io_uring (where this kernel allows it) and the null engine (no I/O at all),
//! and each ends on its own with a complete result and nothing left behind.
//!
//! The time limits are not timing assertions: they are far above what each command takes, so that a hang fails
//! the test instead of stopping the suite.

mod common;

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{entries, read_json, streamcap_path};
use serde_json::Value;

fn engines_here() -> Vec<&'static str> {
    let mut engines = vec!["sync", "null"];
    match io_uring::IoUring::new(2) {
        Ok(_) => engines.push("io_uring"),
        Err(e) => eprintln!("SKIPPED the io_uring engine: {e}"),
    }
    engines
}

/// Runs streamcap with `args` and `--json OUT`; returns its exit status and the result.
fn run(args: &[&str], json: &Path, limit: Duration) -> (ExitStatus, Value) {
    let mut child = Command::new(streamcap_path())
        .args(args)
        .arg("--json")
        .arg(json)
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            let _ = child.wait();
            panic!("streamcap {} did not end within {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
    assert!(status.success(), "streamcap {} failed ({status}):\n{stderr}", args.join(" "));
    (status, read_json(json))
}

/// The engines side by side, each in a thread of its own (a panic in one fails the test once every thread has
/// ended): the commands wait on their I/O and timers more than they compute, so three at once take about as
/// long as the longest (122 s one after another in CI, each check about 35 s).
#[test]
fn every_command_takes_its_path_on_every_engine() {
    std::thread::scope(|threads| {
        for engine in engines_here() {
            threads.spawn(move || every_command_on(engine));
        }
    });
}

/// `run`, `streams` and `check --quick` on `engine`, each complete, nothing left behind.
fn every_command_on(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    let json = out.path().join(format!("{engine}.json"));

    let args = ["run", target, "--rw", "randrw", "--bs", "4k", "--size", "8M", "--runtime", "1s", "--engine"];
    let (_, r) = run(&[&args[..], &[engine, "--quiet"]].concat(), &json, Duration::from_secs(120));
    assert_eq!(r["status"], "completed", "run on {engine}");
    assert_eq!(r["phases"][0]["engine"]["name"], engine);
    assert!(r["phases"][0]["read"]["ops"].as_u64().unwrap() > 0, "run on {engine}");

    let args = ["streams", target, "--bitrate", "8Mbit", "--count", "4", "--duration", "2s"];
    let extra = ["--media-length", "10s", "--engine", engine, "--quiet"];
    let (_, r) = run(&[&args[..], &extra[..]].concat(), &json, Duration::from_secs(120));
    let step = &r["streams"]["steps"][0];
    assert_eq!(step["engine"], engine, "streams on {engine}");
    assert_eq!(step["streams_stalled"], 0, "4 viewers of 8 Mbit/s on {engine}: {step}");

    // A 256 MiB library instead of the quick profile's 2 GiB: the library's size is not what this test is
    // about, and three at once would write 6 GiB to the disk every other test shares; not kept (`--remove-library`).
    let args =
        ["check", target, "--quick", "--library-size", "256M", "--remove-library", "--no-html", "--engine", engine];
    let args = [&args[..], &["--quiet"]].concat();
    let (_, r) = run(&args, &json, Duration::from_secs(600));
    assert_eq!(r["status"], "completed", "check on {engine}");
    assert_eq!(r["check"]["partial"], false, "check on {engine}");
    assert_eq!(r["check"]["verdict"].as_array().unwrap().len(), 3, "check on {engine}");
    // Queue depth 32 is 32 reads in flight with every engine: a depth per thread, or 32 threads of depth 1.
    let depths: Vec<_> = r["check"]["random_reads"].as_array().unwrap().iter().map(|f| &f["queue_depth"]).collect();
    assert_eq!(depths, [1, 32], "check on {engine}");
    let qd32 = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "rand-read 4k qd32").unwrap();
    let in_flight = qd32["iodepth"].as_u64().unwrap() * qd32["jobs"].as_u64().unwrap();
    assert_eq!(in_flight, 32, "check on {engine}: {}", qd32["engine"]);
    assert!(entries(dir.path()).is_empty(), "{engine} left behind: {:?}", entries(dir.path()));
}
