//! A device that stalls must show up as stalled intervals at the time it stalled. The device is a loop device
//! throttled with cgroup v1 blkio (as ../shared/CRATES.md describes) so that each read takes about 2 s; root
//! only, skipped loudly where cgroup v1 blkio or loop devices are missing. The group, the loop device and the
//! backing file are removed in every outcome.

mod common;

use std::path::PathBuf;

use common::{LoopDevice, can_use_loop_devices, read_json, streamcap_path};

struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_stalled_device_shows_empty_intervals_when_it_stalls() {
    // Regression: a worker blocked for several intervals filed its late completions under the earliest of them,
    // so a 2 s stall looked like steady progress followed by nothing.
    if !can_use_loop_devices("stalled intervals") {
        return;
    }
    let blkio = PathBuf::from("/sys/fs/cgroup/blkio");
    if !blkio.join("blkio.throttle.read_bps_device").exists() {
        common::skip("stalled intervals: cgroup v1 blkio throttling is not available");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("slow.img"), 64 << 20);
    let group = Cgroup(blkio.join(format!("streamcap-test-{}", std::process::id())));
    std::fs::create_dir(&group.0).unwrap();
    let numbers = std::fs::read_to_string(format!("/sys/block/{}/dev", device.name())).unwrap();
    // 128 KiB/s: one 256 KiB read takes about 2 s.
    std::fs::write(group.0.join("blkio.throttle.read_bps_device"), format!("{} 131072", numbers.trim())).unwrap();

    let json = dir.path().join("stall.json");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} run {} --rw read --bs 256k --runtime 7s --interval 500ms --quiet --json {}",
        group.0.display(),
        streamcap_path().display(),
        device.device.display(),
        json.display()
    );
    let status = std::process::Command::new("sh").arg("-c").arg(&script).env_remove("RUST_BACKTRACE").status().unwrap();
    assert!(status.success());

    let phase = &read_json(&json)["phases"][0];
    let intervals = phase["intervals"].as_array().unwrap();
    let ops: Vec<u64> = intervals.iter().map(|i| i["read"]["ops"].as_u64().unwrap_or(0)).collect();
    assert!(intervals.len() >= 13, "7 s at 500 ms, empty intervals included: {ops:?}");
    let first = ops.iter().position(|&n| n > 0).expect("some read completed");
    let first_start = intervals[first]["start_s"].as_f64().unwrap();
    assert!(first_start >= 1.0, "the first read completes about 2 s in, not in the first interval: {ops:?}");
    assert!(ops.iter().filter(|&&n| n == 0).count() >= 6, "most intervals are stalled: {ops:?}");
    assert_eq!(ops.iter().sum::<u64>(), phase["read"]["ops"].as_u64().unwrap());
}
