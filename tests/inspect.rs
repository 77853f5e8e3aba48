//! `streamcap inspect` on real things: a temporary directory (any user), btrfs raid1, raid10 and raid5 pools over
//! loop devices (root: the profile, members, raw and usable capacity must be right), and a run inside a cgroup v1
//! memory group of 128 MiB (root: the effective RAM must be the group's limit, not the host's RAM). Tests that
//! lack root, btrfs or the memory controller say SKIPPED; loop devices, mounts and groups are removed in every
//! outcome by the guards in tests/common.

mod common;

use std::path::Path;
use std::process::Command;

use common::{LoopDevice, MemoryCgroup, Mount, read_json, streamcap};
use predicates::prelude::*;

const GIB: u64 = 1 << 30;

#[test]
fn a_directory_is_described_without_creating_anything() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("media");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("inspect.json");
    streamcap()
        .arg("inspect")
        .arg(&target)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("target     directory on "))
        .stdout(predicate::str::contains("memory     "))
        .stdout(predicate::str::contains("in RAM     "));
    assert!(common::entries(&target).is_empty(), "inspect writes nothing into the target");
    let r = read_json(&json);
    assert_eq!((r["schema"].as_str(), r["status"].as_str()), (Some("streamcap.run"), Some("completed")));
    assert_eq!(r["phases"].as_array().map(Vec::len), Some(0));
    assert_eq!(r["target"]["kind"], "directory");
    let ram = r["host"]["ram"].as_u64().unwrap();
    let effective = r["host"]["effective_ram"].as_u64().unwrap();
    assert!(effective > 0 && effective <= ram, "effective RAM {effective} within RAM {ram}");
    if let Some(pool) = r["target"].get("pool") {
        assert!(!pool["members"].as_array().unwrap().is_empty(), "{pool}");
    }
    // A saved inspect result renders as an inspect view again.
    streamcap().arg("report").arg(&json).assert().success().stdout(predicate::str::contains("in RAM     "));
}

#[test]
fn a_missing_target_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("never.json");
    streamcap()
        .arg("inspect")
        .arg(dir.path().join("no-such-dir"))
        .arg("--json")
        .arg(&json)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist: give an existing directory, file or block device"));
    assert!(!json.exists());
}

/// Builds a btrfs pool of `members` loop devices of 1 GiB with the given profiles, runs `inspect --json` on its
/// mount point and hands the pool object to `check` with the loop devices' names.
fn inspect_pool(test: &str, members: usize, data: &str, metadata: &str, check: impl Fn(&serde_json::Value, &[String])) {
    if !common::can_build_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices: Vec<LoopDevice> =
        (0..members).map(|i| LoopDevice::new(&dir.path().join(format!("m{i}.img")), GIB)).collect();
    let mkfs = Command::new("mkfs.btrfs")
        .args(["-f", "-q", "-d", data, "-m", metadata])
        .args(devices.iter().map(|d| &d.device))
        .output()
        .unwrap();
    assert!(mkfs.status.success(), "mkfs.btrfs: {}", String::from_utf8_lossy(&mkfs.stderr));
    let mount = Mount::new(devices[0].device.to_str().unwrap(), &dir.path().join("pool"), &[]);
    let json = dir.path().join("pool.json");
    let assert = streamcap().arg("inspect").arg(&mount.point).arg("--json").arg(&json).assert().success();
    let text = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    eprintln!("{text}");
    assert!(text.contains(&format!("pool       btrfs {data}")), "the terminal names the profile:\n{text}");
    let result = read_json(&json);
    let names: Vec<String> = devices.iter().map(LoopDevice::name).collect();
    check(&result["target"]["pool"], &names);
}

/// The common facts of a pool: kind, profiles, members (in the loop devices' order) and raw size.
fn assert_pool(pool: &serde_json::Value, names: &[String], data: &str, metadata: &str) {
    assert_eq!(pool["kind"], "btrfs", "{pool}");
    assert_eq!((pool["profile"].as_str(), pool["metadata_profile"].as_str()), (Some(data), Some(metadata)));
    let members: Vec<&str> = pool["members"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(members, expected, "every loop device is a member");
    for m in pool["members"].as_array().unwrap() {
        assert_eq!(m["size"].as_u64(), Some(GIB), "{m}");
        assert_eq!(m["role"], "btrfs pool member");
        assert!(m.get("rotational").is_some_and(|r| r.is_boolean()) && m.get("scheduler").is_some(), "{m}");
    }
    assert_eq!(pool["raw"].as_u64(), Some(names.len() as u64 * GIB));
    assert_eq!(pool["missing_members"].as_u64(), Some(0));
    if Path::new("/sys/fs/btrfs/features").exists() && pool.get("read_policy").is_some() {
        assert!(pool["read_policy"].as_str().is_some_and(|p| !p.is_empty()), "{pool}");
    }
}

/// Within 1 % of `expected` (btrfs keeps the first MiB of each member).
fn assert_usable(pool: &serde_json::Value, expected: u64) {
    let usable = pool["usable"].as_u64().unwrap();
    assert!(usable.abs_diff(expected) * 100 <= expected, "usable {usable}, expected about {expected}: {pool}");
}

#[test]
fn btrfs_raid1_of_two_holds_one_member() {
    inspect_pool("inspect btrfs raid1", 2, "raid1", "raid1", |pool, names| {
        assert_pool(pool, names, "raid1", "raid1");
        assert_usable(pool, GIB);
        // statvfs halves the raw size for raid1, which is right for equal members: no note.
        assert_eq!(pool.get("capacity_note"), None, "{pool}");
    });
}

#[test]
fn btrfs_raid10_of_four_holds_two_members() {
    inspect_pool("inspect btrfs raid10", 4, "raid10", "raid10", |pool, names| {
        assert_pool(pool, names, "raid10", "raid10");
        assert_usable(pool, 2 * GIB);
    });
}

#[test]
fn btrfs_raid5_of_three_holds_two_members_and_statvfs_is_corrected() {
    inspect_pool("inspect btrfs raid5", 3, "raid5", "raid1", |pool, names| {
        assert_pool(pool, names, "raid5", "raid1");
        assert_usable(pool, 2 * GIB);
        // statvfs shows raid5 at its raw size; the note says why the usable figure is lower.
        assert_eq!(pool["statvfs_total"].as_u64(), Some(3 * GIB), "{pool}");
        assert!(pool["capacity_note"].as_str().is_some_and(|n| n.contains("parity")), "{pool}");
        assert_eq!(pool["data"]["profile"], "raid5");
    });
}

#[test]
fn effective_ram_inside_a_128_mib_memory_cgroup_is_the_limit() {
    let test = "effective RAM in a memory cgroup";
    let Some(group) = MemoryCgroup::new(test, "streamcap-inspect", 128 << 20) else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("inside.json");
    let output = group.run_streamcap(&["inspect", dir.path().to_str().unwrap(), "--json", json.to_str().unwrap()]);
    assert!(output.status.success(), "inspect inside the group: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("128 MiB effective (memory cgroup limit"), "the terminal says so:\n{text}");
    let host = &read_json(&json)["host"];
    assert_eq!(host["effective_ram"].as_u64(), Some(128 << 20), "{host}");
    assert_eq!(host["memory_limit"].as_u64(), Some(128 << 20), "{host}");
    let file = group.0.join("memory.limit_in_bytes");
    assert_eq!(host["memory_limit_file"].as_str(), Some(file.to_str().unwrap()));
    assert!(host["ram"].as_u64().unwrap() > 128 << 20, "the host's own RAM is kept beside it: {host}");
}
