//! `--max` beside a background load (`during`) on an emulated disk: a loop device (ext4) whose reads are throttled
//! to 16 MiB/s with cgroup v1 blkio, as tests/streams_throttled.rs does. One run of one job on one disk searches
//! three times — alone, beside a library scan, beside a transcode — and each capacity beside a load must be lower
//! than the one alone, with the load's own rate reported (files and bytes above zero) and nothing of the loads
//! left in the target afterwards. Both loads share the one search alone (each search beside a load starts from
//! its edge, as `streams --max --during` does with its own; tests/streams_scrub.rs runs that command). Root only;
//! skipped loudly where cgroup v1 blkio or loop devices are missing. The group, the mount and the loop device are
//! removed in every outcome (guards, dropped in reverse order).
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
/// within a step (tests/streams_throttled.rs says why), and a library of titles for the scan to go through: one
/// `[phase.streams]` table, the same for the three searches but for its `during`. Searched to 20 %: each load
/// takes a third of the disk or more (44 alone, 28–31 beside either), so the coarser edge still tells them apart
/// and each search takes a few steps fewer than at 10 %. Each edge is run once (`confirmations = 0`: nothing
/// here asserts its range) and the search alone starts at the estimate (`start-factor = 1.0`: a throttled disk
/// carries about what its estimate says), not at half of it.
const STREAMS: &str = "format = \"3Mbit\"\nchunk = \"256k\"\nduration = \"6s\"\nramp = \"1s\"\nbuffer = \"2s\"\n\
     prebuffer = \"1s\"\nlibrary-size = \"96M\"\nestimate-time = \"2s\"\nprecision = 20\nlimit = 56\nmax = true\n\
     confirmations = 0\nstart-factor = 1.0\n";

/// The loads, in the order the job runs them after the search alone.
const LOADS: [&str; 2] = ["library-scan", "transcode"];

/// Reads throttled to 16 MiB/s: a bandwidth bound of about 44.7 viewers alone.
const BANDWIDTH: u64 = 16 << 20;

/// Runs a job of three `--max` searches on a fresh throttled ext4 loop device — alone, then beside each of
/// `LOADS` — and returns each search beside a load's streams section, after checking that nothing of the run is
/// left under the mount point.
fn beside_each_load(test: &str) -> Option<Vec<Value>> {
    let disk = ThrottledExt4::new(test, 256 << 20, "sc-during-streams", "read_bps_device", BANDWIDTH)?;
    let (dir, mount, group) = (&disk.dir, &disk.mount, &disk.group);
    let (job, json) = (dir.path().join("during.toml"), dir.path().join("during.json"));
    let mut text = format!("[[phase]]\nname = \"streams\"\n[phase.streams]\n{STREAMS}");
    for load in LOADS {
        text +=
            &format!("\n[[phase]]\nname = \"streams during {load}\"\n[phase.streams]\n{STREAMS}during = \"{load}\"\n");
    }
    std::fs::write(&job, text).unwrap();
    group.run_streamcap(&format!(
        "run {} --job {} --quiet --json {}",
        mount.point.display(),
        job.display(),
        json.display()
    ));
    assert_eq!(left_in(&mount.point), Vec::<String>::new(), "{test}: the run left files behind");
    let result = read_json(&json);
    let steps = |s: &Value| -> Vec<String> {
        let steps = s["steps"].as_array().cloned().unwrap_or_default();
        let step = |s: &Value| {
            let passed = if s["meets_target"] == true { "✓" } else { "✗" };
            format!("{}{passed} {:.0}s", s["count"], s["duration_s"].as_f64().unwrap_or(0.0))
        };
        steps.iter().map(step).collect()
    };
    let searches: Vec<Value> = result["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["streams"].is_object())
        .map(|p| p["streams"].clone())
        .collect();
    assert_eq!(searches.len(), 3, "{test}: a search alone and one beside each load: {result}");
    eprintln!("{test}: alone {} {:?}", searches[0]["capacity"]["streams"], steps(&searches[0]));
    for (load, s) in LOADS.iter().zip(&searches[1..]) {
        eprintln!("{test}: beside {load} {} {:?}; {}", s["capacity"]["streams"], steps(s), s["background"]);
    }
    Some(searches[1..].to_vec())
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
fn a_library_scan_and_a_transcode_each_lower_the_capacity_of_a_throttled_disk() {
    let Some(beside) = beside_each_load("streams beside a library scan, then a transcode") else { return };
    assert_lower_and_reported(&beside[0], "library-scan");
    let scan = &beside[0]["background"][0];
    // The scan reads 1 MiB from each file's start: its bytes are whole headers.
    assert!(scan["read_bytes"].as_u64().unwrap() >= 1 << 20, "{scan}");
    assert_eq!(scan["written_bytes"], 0);
    assert_lower_and_reported(&beside[1], "transcode");
    let t = &beside[1]["background"][0];
    // It read its source and wrote segments (the segments' files are gone: `beside_each_load` checked the mount
    // point).
    assert!(t["read_bytes"].as_u64().unwrap() > 0 && t["written_bytes"].as_u64().unwrap() > 0, "{t}");
}
