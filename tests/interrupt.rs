//! Ctrl-C and SIGTERM: the run stops cleanly, keeps what it measured in the result, removes its data files and
//! exits with 130. The tests wait for observable progress (a CSV row, a data file) rather than for a time.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{entries, read_json, streamcap_path};
use rustix::process::{Pid, Signal, kill_process};

fn spawn(dir: &Path, out: &Path, extra: &[&str]) -> Child {
    Command::new(streamcap_path())
        .arg("run")
        .arg(dir)
        .args(extra)
        .arg("--json")
        .arg(out.join("r.json"))
        .arg("--csv")
        .arg(out.join("r.csv"))
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start streamcap")
}

/// Polls `condition` until it holds; panics (killing the child) if it never does.
fn wait_for(child: &mut Child, what: &str, condition: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !condition() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("streamcap ended ({status}) before {what}");
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("streamcap never reached: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).expect("a child has a pid");
    kill_process(pid, sig).expect("send the signal");
}

fn finish(mut child: Child) -> i32 {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("streamcap did not stop after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_mid_phase_keeps_a_partial_result_and_removes_the_data_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = spawn(
        dir.path(),
        out.path(),
        &["--rw", "randread", "--size", "32M", "--iodepth", "4", "--runtime", "120s", "--interval", "200ms"],
    );
    let csv = out.path().join("r.csv");
    wait_for(&mut child, "a measured interval", || {
        std::fs::read_to_string(&csv).is_ok_and(|text| text.lines().count() >= 2)
    });
    signal(&child, Signal::INT);
    assert_eq!(finish(child), 130);

    let r = read_json(&out.path().join("r.json"));
    assert_eq!(r["status"], "interrupted");
    let phase = &r["phases"][0];
    assert_eq!(phase["status"], "interrupted");
    assert!(phase["read"]["ops"].as_u64().unwrap() > 0, "the partial result keeps what was measured");
    assert!(phase["duration_s"].as_f64().unwrap() < 120.0);
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}

#[test]
fn sigterm_while_filling_the_data_files_stops_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = spawn(dir.path(), out.path(), &["--rw", "randread", "--size", "2G", "--runtime", "10s"]);
    let data = dir.path().join(".streamcap");
    wait_for(&mut child, "the work directory", || std::fs::read_dir(&data).is_ok_and(|mut runs| runs.next().is_some()));
    signal(&child, Signal::TERM);
    assert_eq!(finish(child), 130);
    let r = read_json(&out.path().join("r.json"));
    assert_eq!(r["status"], "interrupted");
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
}
