//! `streamcap cache` on real things: a temporary directory (any user: every plateau is measured, alone and under
//! a concurrent load, the summary explains them, nothing is left behind, and the saved result renders again),
//! bad input (exit 2, nothing written), and, as root, a loop device throttled with cgroup v1 blkio: its media
//! plateau must come within 10 % of the bandwidth limit and its access time within 10 % of the IOPS limit, and
//! no device cache may be claimed where there is none. Loop devices and groups are removed in every outcome by
//! the guards in tests/common.

mod common;

use common::{Cgroup, LoopDevice, can_throttle, can_use_loop_devices, read_json, streamcap};
use predicates::prelude::*;

/// The plateau of `kind` (alone or under load) from a result's `cache` section.
fn plateau<'a>(result: &'a serde_json::Value, kind: &str, under_load: bool) -> &'a serde_json::Value {
    result["cache"]["plateaus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind && p["under_load"] == under_load)
        .unwrap_or_else(|| panic!("no {kind} plateau (under load: {under_load}) in {}", result["cache"]))
}

#[test]
fn a_directory_gets_every_plateau_alone_and_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("media");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("cache.json");
    streamcap()
        .args(["cache", "--size", "64M", "--runtime", "300ms", "--load", "randrw:70", "--json"])
        .arg(&json)
        .arg(&target)
        .assert()
        .success()
        .stdout(predicate::str::contains("what it means for serving"))
        .stdout(predicate::str::contains("streams of 25 Mbit/s"))
        .stdout(predicate::str::contains("device cache by region"));
    assert!(common::entries(&target).is_empty(), "the test files are removed: {:?}", common::entries(&target));
    let r = read_json(&json);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["cache"]["partial"], false);
    for kind in ["page_cache", "device_cache", "media", "access_time"] {
        for loaded in [false, true] {
            let p = plateau(&r, kind, loaded);
            assert!(p["mbps"].as_f64().unwrap() > 0.0, "{p}");
            assert!(!p["meaning"].as_str().unwrap().is_empty(), "{p}");
        }
    }
    let access = plateau(&r, "access_time", false);
    assert_eq!(access["block_bytes"], 4096);
    // streams ≈ 1 / (access time × chunks per second per stream): 25 Mbit/s in 1 MiB chunks is 2.98 chunks/s.
    let bound = 1.0 / (access["latency_mean_ns"].as_f64().unwrap() / 1e9 * (25e6 / 8.0 / 1048576.0));
    assert!((access["streams_bound"].as_f64().unwrap() - bound).abs() < 1e-6 * bound, "{access}");
    let steps: Vec<u64> = r["cache"]["device_cache_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["region_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [1 << 20, 4 << 20, 16 << 20]);
    // The load ran beside each measured phase, at the same time (a stage of two phases).
    let loads: Vec<&serde_json::Value> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"].as_str().unwrap().starts_with("load beside"))
        .collect();
    assert_eq!(loads.len(), 4);
    // randrw:70 writes too. Summed over the loads: beside the 1 MiB media reads a busy machine managed 14
    // operations in 300 ms, and a single load without a write is then no sign of anything.
    let writes: u64 = loads.iter().map(|l| l["write"]["ops"].as_u64().unwrap_or(0)).sum();
    let reads: u64 = loads.iter().map(|l| l["read"]["ops"].as_u64().unwrap_or(0)).sum();
    assert!(writes > 0 && reads > writes, "randrw:70 reads and writes: {reads} reads, {writes} writes");
    let again = streamcap().arg("report").arg(&json).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("what it means for serving"));
    streamcap()
        .args(["report", "--format", "markdown"])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("### streamcap cache"))
        .stdout(predicate::str::contains("| plateau | MB/s | latency | what it means for serving |"));
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("movie.mkv");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let json = dir.path().join("never.json");
    streamcap()
        .args(["cache", "--load", "randrw:70", "--json"])
        .arg(&json)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("use --load randread"));
    streamcap()
        .args(["cache", "--load", "read"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("give a random mode"));
    streamcap()
        .args(["cache", "--load", "none"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("too small to tell a cache from the media"));
    streamcap().arg("cache").arg(dir.path().join("missing")).assert().code(2);
    assert!(!json.exists());
    assert_eq!(common::entries(dir.path()), ["movie.mkv"]);
}

#[test]
fn a_throttled_disk_shows_its_media_and_access_time_within_ten_percent() {
    let test = "cache on a throttled loop device";
    if !can_use_loop_devices(test) || !can_throttle(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new_direct(&dir.path().join("disk.img"), 512 << 20);
    let group = Cgroup::new("streamcap-cache");
    // 20 MiB/s binds 256 KiB reads (80 of 100 allowed per second); 100 reads/s binds 4 KiB reads (20 MiB/s
    // would allow 5 120): a media plateau of 20.97 MB/s and an access time of 10 ms. Not 1 MiB reads: a loop
    // device splits them in two (128 segments of 4 KiB at most), and this kernel's blkio throttle then charges
    // the split halves' bytes twice (1 MiB reads came to 10.6 MB/s under a 20 MiB/s limit).
    let (bps, iops) = (20u64 << 20, 100u64);
    group.limit(&device, "read_bps_device", bps);
    group.limit(&device, "read_iops_device", iops);
    let json = dir.path().join("cache.json");
    group.run_streamcap(&format!(
        "cache {} --runtime 3s --bs 256k --load none --quiet --json {}",
        device.device.display(),
        json.display()
    ));
    let r = read_json(&json);
    let media = plateau(&r, "media", false)["mbps"].as_f64().unwrap();
    let access_ms = plateau(&r, "access_time", false)["latency_mean_ns"].as_f64().unwrap() / 1e6;
    let page = plateau(&r, "page_cache", false)["mbps"].as_f64().unwrap();
    eprintln!(
        "{test}: media {media:.2} MB/s (limit {:.2}), access {access_ms:.2} ms (limit 10), page cache {page:.0}",
        bps as f64 / 1e6
    );
    assert!((media - bps as f64 / 1e6).abs() <= 0.1 * bps as f64 / 1e6, "media {media:.2} MB/s");
    assert!((access_ms - 1e3 / iops as f64).abs() <= 0.1 * 1e3 / iops as f64, "access time {access_ms:.2} ms");
    // The page cache reads RAM (GB/s). The device is held open for the whole command: its cache was dropped at
    // each last close before, and the plateau re-read the throttled device once (280–322 MB/s, or the device's
    // own 21–42 MB/s when the first pass took the whole phase).
    assert!(page > 50.0 * media, "the page cache ({page:.0} MB/s) is far above the throttled media");
    let end = &r["cache"]["device_cache_end"];
    assert!(end["words"].as_str().unwrap().contains("no drive or controller cache shows"), "{end}");
    assert_eq!(r["target"]["kind"], "block_device");
}
