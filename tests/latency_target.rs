//! fio's latency_target on the real binary: the search for the deepest queue that meets a latency target ends
//! at the iodepth when the target is generous (on the null engine, and on a loop device throttled with cgroup
//! v1 blkio, where each extra request in the queue waits its turn), and stays at depth 1 saying the target was
//! not met when it is impossible (1 µs on the throttled device). Both say so in the summary, in streamcap's JSON
//! and in fio's. The targets are 10 s and 1 µs against latencies of microseconds to tens of milliseconds, so no
//! assertion depends on how fast the machine is. The device tests need root and cgroup v1 blkio, and skip
//! loudly without them.

mod common;

use std::path::Path;

use common::{Cgroup, LoopDevice, can_throttle, can_use_loop_devices, read_json, streamcap};
use predicates::prelude::*;

/// `streamcap report` of a saved result in `format`.
fn report(json: &Path, format: &str) -> String {
    let out = streamcap().arg("report").arg(json).args(["--format", format]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The first job of fio's JSON for the result in `json`.
fn fio_job(json: &Path) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&report(json, "fio-json")).expect("fio's JSON");
    doc["jobs"][0].clone()
}

#[test]
fn a_generous_target_on_the_null_engine_reaches_the_iodepth_and_stops_there() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    // Without the search's end the job would run for its whole minute.
    std::fs::write(
        &job,
        "[probe]\nioengine=null\nsize=16m\nrw=randread\nbs=4k\niodepth=16\ntime_based\nruntime=60\n\
         latency_target=10s\nlatency_window=100ms\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    streamcap()
        .current_dir(dir.path())
        .env("STREAMCAP_NO_HISTORY", "1")
        .arg("run")
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .args(["--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let result = read_json(&json);
    let phase = &result["phases"][0];
    let found = &phase["latency_target"]["workers"][0];
    assert_eq!((found["depth"].as_u64(), found["max_depth"].as_u64()), (Some(16), Some(16)), "{found}");
    assert_eq!((found["met"].as_bool(), found["settled"].as_bool()), (Some(true), Some(true)), "{found}");
    // 1, 2, 4, 8, 16 and the last window at 16.
    assert_eq!(found["windows"], 6, "{found}");
    // The last window's figures (what fio would report): it lasted the whole window and did I/O.
    assert!(found["window_us"].as_u64().unwrap() >= 100_000 && found["window_ops"].as_u64().unwrap() > 0, "{found}");
    assert!(phase["duration_s"].as_f64().unwrap() < 50.0, "the search ended the job: {}", phase["duration_s"]);
    let summary = report(&json, "summary");
    assert!(
        summary.contains("latency target: 'probe' p100 ≤ 10.0 s over 100 ms windows: met at queue depth 16 of 16"),
        "{summary}"
    );
    for format in ["markdown", "html"] {
        let text = report(&json, format);
        assert!(text.contains("over 100 ms windows: met at queue depth 16 of 16"), "{format}: {text}");
    }
    let fio = fio_job(&json);
    assert_eq!(fio["latency_depth"], 16);
    assert_eq!(fio["latency_target"], 10_000_000_000u64);
    assert_eq!(fio["latency_window"], 100_000);
    assert_eq!(fio["latency_percentile"], 100.0);
}

/// Runs `text` against a fresh loop device whose reads are throttled to 200 a second; returns the result.
fn on_throttled_disk(test: &str, text: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    if !can_use_loop_devices(test) || !can_throttle(test) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new_direct(&dir.path().join("disk.img"), 64 << 20);
    let group = Cgroup::new("streamcap-latency");
    group.limit(&device, "read_iops_device", 200);
    let job = dir.path().join("job.fio");
    std::fs::write(&job, text).unwrap();
    let json = dir.path().join("r.json");
    group.run_streamcap(&format!(
        "run {} --job {} --quiet --json {}",
        device.device.display(),
        job.display(),
        json.display()
    ));
    Some((dir, json))
}

const THROTTLED: &str = "[probe]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=8\ntime_based\n\
                         latency_window=300ms\n";

#[test]
fn a_generous_target_on_a_throttled_disk_reaches_the_iodepth() {
    // At 200 reads/s a queue of 8 waits about 40 ms: far inside 10 s.
    let text = format!("{THROTTLED}runtime=60\nlatency_target=10s\n");
    let Some((_dir, json)) = on_throttled_disk("a generous latency target", &text) else { return };
    let result = read_json(&json);
    let found = &result["phases"][0]["latency_target"]["workers"][0];
    let levels = result["phases"][0]["depths"]["level"].as_array().unwrap();
    assert!(levels[3].as_u64().unwrap() > 0, "I/O joined a queue of 8: {levels:?}");
    assert_eq!((found["depth"].as_u64(), found["met"].as_bool()), (Some(8), Some(true)), "{found}");
    assert_eq!(found["settled"], true, "{found}");
    assert_eq!(fio_job(&json)["latency_depth"], 8);
}

#[test]
fn an_impossible_target_on_a_throttled_disk_stays_at_depth_one_and_says_it_was_not_met() {
    // A throttled read takes milliseconds; none takes 1 µs.
    let text = format!("{THROTTLED}runtime=2\nlatency_target=1\nlatency_percentile=99\n");
    let Some((_dir, json)) = on_throttled_disk("an impossible latency target", &text) else { return };
    let result = read_json(&json);
    let found = &result["phases"][0]["latency_target"]["workers"][0];
    assert_eq!((found["depth"].as_u64(), found["met"].as_bool()), (Some(1), Some(false)), "{found}");
    assert_eq!((found["windows_met"].as_u64(), found["settled"].as_bool()), (Some(0), Some(false)), "{found}");
    assert!(found["windows"].as_u64().unwrap() >= 1, "{found}");
    let levels = result["phases"][0]["depths"]["level"].as_array().unwrap().clone();
    assert!(levels[1..].iter().all(|n| n == 0), "no I/O joined a queue deeper than 1: {levels:?}");
    let summary = report(&json, "summary");
    assert!(summary.contains("p99 ≤ 1.00 µs over 300 ms windows: NOT met even at queue depth 1 of 8"), "{summary}");
    assert_eq!(fio_job(&json)["latency_depth"], 1);
}

#[test]
fn bad_latency_values_are_refused_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    for (options, expected) in [
        ("latency_target=1ms\n", "option 'latency_target': needs latency_window"),
        ("latency_target=1ms\nlatency_window=1s\nlatency_percentile=101\n", "'101' is not a percentage from 0 to 100"),
        ("latency_target=soon\nlatency_window=1s\n", "option 'latency_target'"),
    ] {
        let job = dir.path().join("job.fio");
        std::fs::write(&job, format!("[probe]\nioengine=null\nsize=1m\nrw=read\n{options}")).unwrap();
        streamcap()
            .arg("run")
            .arg(dir.path())
            .arg("--job")
            .arg(&job)
            .arg("--dry-run")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expected));
    }
}
