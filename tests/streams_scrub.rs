//! `streams --max --during scrub` on a btrfs raid1 of two loop devices whose reads a root-group blkio throttle
//! limits to 8 MiB/s each (the root group: btrfs scrubs from kernel workers, which a child group would not
//! throttle; tests/common's `RootThrottle`, reset in every outcome). The run searches twice — alone, then beside
//! the scrub that streamcap starts (`btrfs scrub start -B`) and cancels for each step — and the capacity beside
//! the scrub must be lower than alone, with the scrub's own bytes (from `btrfs scrub status -R`) reported, no
//! scrub left running and nothing of the run left on the pool. Root only; skipped loudly without loop devices,
//! cgroup v1 blkio or btrfs. The mount and the loop devices are removed in every outcome (guards, dropped in
//! reverse order).
//!
//! Why the scrub takes a clear share: it reads every copy of the 128 MiB library, as fast as the throttle lets
//! it, on both members at once (about 16 s a pass at 8 MiB/s, twice a step, so it runs through each step),
//! while the viewers' reads go to one copy each. Alone the pool carries about 44 viewers of 3 Mbit/s (two members
//! of 8 MiB/s); beside the scrub none (their start-up waits behind it): the search beside it walks down from
//! the edge alone to 0 in short failing steps (2–9 s each). "Lower" is all that is asserted: the machine is busy.

mod common;

use std::process::Command;

use common::{LoopDevice, Mount, RootThrottle, can_use_loop_devices, mkfs_btrfs, read_json, streamcap};

/// Room for the library's two copies and btrfs's own chunks.
const MEMBER_BYTES: u64 = 384 << 20;
/// 8 MiB/s of reads per member; writes and request rates unlimited (the library is written at full speed).
const LIMITS: [u64; 4] = [8 << 20, 0, 0, 0];

/// As tests/streams_during.rs: 3 Mbit/s in 256 KiB chunks, a short buffer so that a count above the pool's runs
/// dry within a step, and a library the scrub takes longer than a step to read. Searched to 20 %, not 10: the
/// scrub leaves no viewer playing, so a coarser edge alone is still far above it.
const STREAM_ARGS: &str = "--bitrate 3Mbit --chunk 256k --duration 6s --ramp 1s --buffer 2s --prebuffer 1s \
     --library-size 128M --estimate-time 2s --precision 20 --limit 64 --quiet";

#[test]
fn a_btrfs_scrub_lowers_the_capacity_of_a_raid1_of_throttled_disks() {
    let test = "a_btrfs_scrub_lowers_the_capacity_of_a_raid1_of_throttled_disks";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices: Vec<LoopDevice> =
        (0..2).map(|i| LoopDevice::new(&dir.path().join(format!("m{i}.img")), MEMBER_BYTES)).collect();
    mkfs_btrfs("raid1", &devices);
    let mount = Mount::new(devices[0].device.to_str().unwrap(), &dir.path().join("pool"), &[]);
    let throttle = RootThrottle::new(&devices, LIMITS);
    let json = dir.path().join("scrub.json");
    let output = streamcap()
        .arg("streams")
        .arg(&mount.point)
        .args(STREAM_ARGS.split_whitespace())
        .args(["--max", "--during", "scrub", "--remove-library", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    drop(throttle);
    let (stdout, stderr) = common::output_text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let status = Command::new("btrfs").args(["scrub", "status"]).arg(&mount.point).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(!status.contains("running"), "streamcap left its scrub running: {status}");
    let left: Vec<String> =
        std::fs::read_dir(&mount.point).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert_eq!(left, Vec::<String>::new(), "the run left files behind");

    let streams = &read_json(&json)["streams"];
    let phases = read_json(&json)["phases"].as_array().cloned().unwrap_or_default();
    let steps = |s: &serde_json::Value| -> Vec<String> {
        let steps = s["steps"].as_array().cloned().unwrap_or_default();
        let step =
            |s: &serde_json::Value| format!("{}{} {:.0}s", s["count"], ok(s), s["duration_s"].as_f64().unwrap_or(0.0));
        steps.iter().map(step).collect()
    };
    let alone_steps = phases.iter().rev().nth(1).map(|p| steps(&p["streams"])).unwrap_or_default();
    eprintln!(
        "{test}: alone {} {alone_steps:?}, beside scrub {} {:?}; {}",
        streams["alone"],
        streams["capacity"]["streams"],
        steps(streams),
        streams["background"]
    );
    assert_eq!(streams["during"], serde_json::json!(["scrub"]));
    let alone = streams["alone"].as_u64().expect("the search alone ran first and found a capacity");
    let with = streams["capacity"]["streams"].as_u64().unwrap();
    assert!(alone >= 16, "alone the pool carries about 44 viewers: {alone}");
    assert!(with < alone, "beside a scrub the capacity {with} is lower than alone ({alone})");
    let scrub = &streams["background"][0];
    assert_eq!(scrub["load"], "scrub");
    assert!(scrub["read_bytes"].as_u64().unwrap() > 0 && scrub["seconds"].as_f64().unwrap() > 0.0, "{scrub}");
    assert_eq!((scrub["written_bytes"].as_u64(), scrub["errors"].as_u64()), (Some(0), Some(0)), "{scrub}");
    // Every step ran its own scrub.
    for step in streams["steps"].as_array().unwrap() {
        let figures = &step["background"][0];
        assert_eq!(figures["load"], "scrub", "{step}");
        assert!(figures["read_bytes"].as_u64().unwrap() > 0, "{figures}");
    }
}

/// "✓" for a step that met the target, "✗" for one that did not.
fn ok(step: &serde_json::Value) -> &'static str {
    if step["meets_target"] == true { "✓" } else { "✗" }
}

/// Where the target is not on btrfs, the scrub is a parity check's read of the device beneath: the plan says
/// which device, read only (a dry run: nothing is read or written).
#[test]
fn elsewhere_a_scrub_is_a_read_only_pass_over_the_device_beneath() {
    let test = "elsewhere_a_scrub_is_a_read_only_pass_over_the_device_beneath";
    if !can_use_loop_devices(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    device.mkfs_ext4();
    let mount = Mount::new(device.device.to_str().unwrap(), &dir.path().join("mnt"), &[]);
    let output = streamcap()
        .arg("streams")
        .arg(&mount.point)
        .args(["--bitrate", "3Mbit", "--count", "2", "--library-size", "64M", "--during", "scrub", "--dry-run"])
        .output()
        .unwrap();
    let (stdout, stderr) = common::output_text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let said = format!("a parity check's read of {} (256 MiB) start to end", device.device.display());
    assert!(stdout.contains(&said), "{stdout}");
    assert!(stdout.contains("read only"), "{stdout}");
}
