//! `streams --max --during LOAD` on an emulated disk: a loop device (ext4) whose reads are throttled to 16 MiB/s
//! with cgroup v1 blkio, as tests/streams_throttled.rs does. The run searches twice — alone, then beside the
//! load — and the capacity beside a library scan and beside a transcode must be lower than alone, with the
//! load's own rate reported (files and bytes above zero) and nothing of the load left in the target afterwards.
//! Root only; skipped loudly where cgroup v1 blkio or loop devices are missing. The group, the mount and the loop
//! device are removed in every outcome (guards, dropped in reverse order).
//!
//! Why the loads take a clear share of 16 MiB/s: the scan reads 1 MiB from each title's start, one read after
//! another as fast as the throttle lets it, and the transcoder reads a title at 20 × 3 Mbit/s = 7.5 MB/s (its
//! segment writes are not throttled: only reads are). Alone the disk carries about 44 viewers of 3 Mbit/s; beside
//! the transcoder about 24. "Lower" is all that is asserted: the machine is busy.

mod common;

use std::path::Path;

use common::{ThrottledExt4, read_json};
use serde_json::Value;

/// 3 Mbit/s in 256 KiB chunks (0.375 MB/s per viewer), a short buffer so that a count above the disk's runs dry
/// within a step (tests/streams_throttled.rs says why), and a library of titles for the scan to go through.
const STREAM_ARGS: &str = "--bitrate 3Mbit --chunk 256k --duration 6s --ramp 1s --buffer 2s --prebuffer 1s \
     --library-size 96M --estimate-time 2s --precision 10 --limit 56 --quiet";

/// Reads throttled to 16 MiB/s: a bandwidth bound of about 44.7 viewers alone.
const BANDWIDTH: u64 = 16 << 20;

/// Runs `streams --max --during LOAD` on a fresh throttled ext4 loop device; returns the result's streams
/// section, after checking that nothing of the run is left under the mount point.
fn beside(test: &str, load: &str) -> Option<Value> {
    let disk = ThrottledExt4::new(test, 256 << 20, "sc-during-streams", "read_bps_device", BANDWIDTH)?;
    let (dir, mount, group) = (&disk.dir, &disk.mount, &disk.group);
    let json = dir.path().join("during.json");
    group.run_streamcap(&format!(
        "streams {} {STREAM_ARGS} --max --during {load} --json {}",
        mount.point.display(),
        json.display()
    ));
    assert_eq!(left_in(&mount.point), Vec::<String>::new(), "{test}: the run left files behind");
    let result = read_json(&json);
    let steps = |s: &Value| -> Vec<String> {
        let steps = s["steps"].as_array().cloned().unwrap_or_default();
        steps.iter().map(|s| format!("{}{}", s["count"], if s["meets_target"] == true { "✓" } else { "✗" })).collect()
    };
    let alone = &result["phases"][result["phases"].as_array().unwrap().len() - 2]["streams"];
    let streams = result["streams"].clone();
    eprintln!(
        "{test}: alone {} {:?}; beside {load} {} {:?}; {}",
        streams["alone"],
        steps(alone),
        streams["capacity"]["streams"],
        steps(&streams),
        streams["background"]
    );
    Some(streams)
}

/// Every entry under `dir` but the filesystem's own `lost+found`.
fn left_in(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string());
    names.filter(|n| n != "lost+found").collect()
}

/// The capacity beside the load is below the one alone, and the load's own figures are there.
fn assert_lower_and_reported(streams: &Value, load: &str) {
    assert_eq!(streams["during"], serde_json::json!([load]));
    let alone = streams["alone"].as_u64().expect("the search alone ran first and found a capacity");
    let with = streams["capacity"]["streams"].as_u64().unwrap();
    assert!(alone >= 20, "alone the throttled disk carries about 44 viewers: {alone}");
    assert!(with < alone, "beside {load} the capacity {with} is lower than alone ({alone})");
    let figures = &streams["background"][0];
    assert_eq!(figures["load"], load);
    assert!(figures["files"].as_u64().unwrap() > 0, "{figures}");
    assert!(figures["seconds"].as_f64().unwrap() > 0.0, "{figures}");
    // Every step the load ran beside carries its own figures.
    for step in streams["steps"].as_array().unwrap() {
        assert_eq!(step["background"][0]["load"], load, "{step}");
    }
}

#[test]
fn a_library_scan_lowers_the_capacity_of_a_throttled_disk() {
    let Some(streams) = beside("streams beside a library scan", "library-scan") else { return };
    assert_lower_and_reported(&streams, "library-scan");
    let scan = &streams["background"][0];
    // The scan reads 1 MiB from each file's start: its bytes are whole headers.
    assert!(scan["read_bytes"].as_u64().unwrap() >= 1 << 20, "{scan}");
    assert_eq!(scan["written_bytes"], 0);
}

#[test]
fn a_transcode_lowers_the_capacity_of_a_throttled_disk() {
    let Some(streams) = beside("streams beside a transcode", "transcode") else { return };
    assert_lower_and_reported(&streams, "transcode");
    let t = &streams["background"][0];
    // It read its source and wrote segments (the segments' files are gone: `beside` checked the mount point).
    assert!(t["read_bytes"].as_u64().unwrap() > 0 && t["written_bytes"].as_u64().unwrap() > 0, "{t}");
}
