//! The finer raw-I/O keys that fio and vdbench files reach (through their native TOML names here): phases that
//! run at the same time, operation budgets, think time, per-worker files, offsets, flush variants, a rate taken
//! from an earlier maximum, custom percentiles and a rate floor. Real runs on real files in a temp directory.

mod common;

use common::{entries, read_json, streamcap};
use predicates::prelude::*;

fn run_job(toml: &str) -> (serde_json::Value, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let job = out.path().join("job.toml");
    std::fs::write(&job, toml).unwrap();
    let json = out.path().join("r.json");
    let output =
        streamcap().arg("run").arg(dir.path()).arg("--job").arg(&job).arg("--json").arg(&json).output().unwrap();
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
    let result = if json.exists() { read_json(&json) } else { serde_json::Value::Null };
    (result, output)
}

fn ops(phase: &serde_json::Value, class: &str) -> u64 {
    phase[class]["ops"].as_u64().unwrap_or(0)
}

#[test]
fn concurrent_phases_run_together_and_report_separately() {
    let (r, output) = run_job(
        r#"
        [global]
        size = "16M"
        runtime = "1s"
        bs = "4k"
        [[phase]]
        name = "reader"
        rw = "randread"
        file-names = ["shared"]
        group = "g"
        [[phase]]
        name = "writer"
        rw = "randwrite"
        file-names = ["own.{worker}"]
        concurrent = true
        group = "g"
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let phases = r["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert!(ops(&phases[0], "read") > 0 && ops(&phases[1], "write") > 0);
    assert_eq!(phases[0]["group"], "g");
    // Run at the same time: their starts are well under the runtime apart.
    let start = |p: &serde_json::Value| p["started_at"].as_str().unwrap().to_string();
    let (a, b) = (start(&phases[0]), start(&phases[1]));
    assert_eq!(a[..19], b[..19], "both started within the same second: {a} {b}");
}

#[test]
fn number_ios_stops_each_worker_after_that_many_operations() {
    let (r, output) = run_job(
        r#"
        [[phase]]
        rw = "randread"
        size = "8M"
        jobs = 2
        number-ios = 300
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(ops(&r["phases"][0], "read"), 600);
}

#[test]
fn think_time_slows_a_worker_to_its_pauses() {
    // 20 operations, a 50 ms pause after every 5: at least three pauses, so at least 150 ms.
    let (r, output) = run_job(
        r#"
        [[phase]]
        rw = "randread"
        size = "8M"
        number-ios = 20
        thinktime = "50ms"
        thinktime-blocks = 5
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(ops(&r["phases"][0], "read"), 20);
    assert!(r["phases"][0]["duration_s"].as_f64().unwrap() >= 0.15, "{}", r["phases"][0]["duration_s"]);
}

#[test]
fn fdatasync_every_and_custom_percentiles_are_reported() {
    let (r, output) = run_job(
        r#"
        [[phase]]
        rw = "write"
        size = "4M"
        bs = "64k"
        fdatasync-every = 4
        percentiles = [50.0, 99.5]
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let phase = &r["phases"][0];
    assert_eq!(ops(phase, "write"), 64);
    assert_eq!(ops(phase, "sync"), 16);
    let listed: Vec<f64> = phase["write"]["latency"]["percentiles_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["p"].as_f64().unwrap())
        .collect();
    assert_eq!(listed, [50.0, 99.5]);
}

#[test]
fn a_curve_phase_is_paced_at_a_share_of_the_measured_maximum() {
    let (r, output) = run_job(
        r#"
        [global]
        rw = "randread"
        size = "8M"
        runtime = "1s"
        engine = "sync"
        [[phase]]
        name = "max"
        [[phase]]
        name = "10 percent"
        rate-percent-of-max = 10.0
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let iops = |i: usize| r["phases"][i]["read"]["iops"].as_f64().unwrap();
    let (max, tenth) = (iops(0), iops(1));
    assert!(tenth > max * 0.05 && tenth < max * 0.15, "max {max}, curve point {tenth}");
}

#[test]
fn a_rate_floor_fails_the_phase_when_the_rate_drops_below_it() {
    let (r, output) = run_job(
        r#"
        interval = "200ms"
        [[phase]]
        rw = "randread"
        size = "8M"
        runtime = "2s"
        rate-iops = 100
        rate-min-iops = 1000
        "#,
    );
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(r["phases"][0]["status"], "failed");
    assert!(r["phases"][0]["failure"].as_str().unwrap().contains("rate-min-iops"), "{}", r["phases"][0]["failure"]);
}

#[test]
fn offsets_and_bad_names_are_checked_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(&job, "[[phase]]\nrw = \"read\"\nfile-names = [\"../escape\"]\n").unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("plain name"));
    std::fs::write(&job, "[[phase]]\nrw = \"randread\"\nrate-percent-of-max = 50.0\n").unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("earlier phase that runs unpaced"));
    assert_eq!(entries(dir.path()), vec!["job.toml".to_string()]);
}

#[test]
fn reads_and_writes_of_a_mixed_phase_can_have_their_own_block_sizes() {
    let (r, output) = run_job(
        r#"
        [[phase]]
        rw = "randrw"
        size = "16M"
        bs = "4k"
        bs-write = "64k"
        number-ios = 400
        "#,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let phase = &r["phases"][0];
    assert_eq!(phase["bs"], "4K,64K");
    let size = |class: &str| phase[class]["bytes"].as_u64().unwrap() / phase[class]["ops"].as_u64().unwrap();
    assert_eq!((size("read"), size("write")), (4096, 65536));
}
