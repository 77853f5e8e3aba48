//! Which device did the work, and why, on the case issue 24 found: ext4 on a loop device (reaching its backing
//! file through the page cache, as `losetup` makes it by default) whose reads a cgroup v1 blkio throttle limits
//! to 40 MiB/s and 150 requests/s. `inspect`, `check --quick` and `streams` name the throttle with its figure
//! and record it in the JSON; the device tables list the loop device first and the host disk beneath its
//! backing file as the loop backing store, never as the busiest device; and `streams` does not call the media
//! RAM when the throttled loop device served the bytes. Root only; skipped loudly where cgroup v1 blkio or loop
//! devices are missing. The group, the mount and the loop device are removed in every outcome (guards, dropped
//! in reverse order).

mod common;

use std::process::{Command, Output};

use common::{Cgroup, LoopDevice, Mount, can_throttle, can_use_loop_devices, read_json, streamcap_path};

const READ_BPS: u64 = 40 << 20;
const READ_IOPS: u64 = 150;

/// Runs streamcap with `args` inside `group` and returns its output; asserts it succeeded.
fn run_in(group: &Cgroup, args: &[&str]) -> (String, String) {
    let script = format!("echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"", group.0.display());
    let out: Output = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(streamcap_path())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .output()
        .expect("run sh");
    let (stdout, stderr) = common::output_text(&out);
    assert!(out.status.success(), "streamcap {args:?} failed: {stdout}\n{stderr}");
    (stdout, stderr)
}

/// The device table rows of a terminal summary: (device, the whole row) for every line that starts with a
/// device name listed in `names`, in order.
fn rows<'a>(text: &'a str, names: &[&str]) -> Vec<(&'a str, &'a str)> {
    text.lines()
        .filter_map(|line| {
            let first = line.split_whitespace().next()?;
            names.contains(&first).then_some((first, line))
        })
        .collect()
}

fn backing_disk(json: &serde_json::Value) -> String {
    let devices = json["target"]["devices"].as_array().unwrap();
    let backing = devices.iter().find(|d| d["role"] == "loop backing store").expect("the backing disk is listed");
    backing["name"].as_str().unwrap().to_string()
}

#[test]
fn a_throttled_loop_device_is_named_with_its_throttle_and_its_host_disk_as_backing_store() {
    let test = "a_throttled_loop_device_is_named_with_its_throttle_and_its_host_disk_as_backing_store";
    if !can_use_loop_devices(test) || !can_throttle(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("disk.img"), 1 << 30);
    device.mkfs_ext4();
    let mount = Mount::new(device.device.to_str().unwrap(), &dir.path().join("mnt"), &[]);
    let group = Cgroup::new("sc-devices-throttle");
    group.limit(&device, "read_bps_device", READ_BPS);
    group.limit(&device, "read_iops_device", READ_IOPS);
    let loop_name = device.name();
    let target = mount.point.to_str().unwrap();
    let said = format!("{loop_name}: reads limited to 40 MiB/s (41.9 MB/s) and 150 requests/s by a blkio throttle");

    // inspect: the limit line, the JSON fact, the loop device first and its host disk as backing store.
    let inspect_json = dir.path().join("inspect.json");
    let (out, _) = run_in(&group, &["inspect", target, "--json", inspect_json.to_str().unwrap()]);
    assert!(out.contains(&format!("limits     {said}")), "{out}");
    let inspected = read_json(&inspect_json);
    let throttles = inspected["target"]["throttles"].as_array().expect("throttles recorded");
    let figures: Vec<(&str, u64)> =
        throttles.iter().map(|t| (t["kind"].as_str().unwrap(), t["limit"].as_u64().unwrap())).collect();
    assert_eq!(figures, [("read_bps", READ_BPS), ("read_iops", READ_IOPS)]);
    assert!(throttles.iter().all(|t| t["device"] == loop_name.as_str()));
    let backing = backing_disk(&inspected);
    let listed = rows(&out, &[&loop_name, &backing]);
    assert_eq!(listed.first().map(|r| r.0), Some(loop_name.as_str()), "the loop device first: {out}");
    assert!(listed.iter().any(|(name, row)| *name == backing && row.contains("loop backing store")), "{out}");

    // check --quick: the throttle among the devices, the loop device first in "which device did the work".
    let check_json = dir.path().join("check.json");
    let (out, err) = run_in(&group, &["check", target, "--quick", "--json", check_json.to_str().unwrap()]);
    assert!(out.contains(&format!("limit: {said}")), "{out}");
    assert!(err.contains(&said) && err.contains("describe the throttle"), "the plan's notice: {err}");
    let work = out.split("Which device did the work").nth(1).expect("the device table");
    let listed = rows(work, &[&loop_name, &backing]);
    assert_eq!(listed.first().map(|r| r.0), Some(loop_name.as_str()), "{work}");
    if let Some((_, row)) = listed.iter().find(|(name, _)| *name == backing) {
        assert!(row.contains("loop backing store"), "{work}");
    }
    let checked = read_json(&check_json);
    assert_eq!(checked["target"]["throttles"].as_array().map(Vec::len), Some(2));
    for format in checked["check"]["verdict"].as_array().unwrap() {
        let comparison = format["estimate"]["comparison"].as_str().unwrap_or_default();
        assert!(!comparison.contains("lives in RAM"), "the throttled loop device served them: {comparison}");
    }
    eprintln!("{}", out.split("Which device did the work").nth(1).unwrap_or_default());

    // streams --max: the busiest device of each step is the loop device, and the estimate's comparison does not
    // call its bytes RAM's ("the media lives in RAM, so both bounds describe memory copies" before).
    let streams_json = dir.path().join("streams.json");
    let args = ["streams", target, "--bitrate", "25Mbit", "--max", "--limit", "8", "--duration", "4s"];
    let (out, _) =
        run_in(&group, &[&args[..], &["--estimate-time", "2s", "--json", streams_json.to_str().unwrap()]].concat());
    let table = out.split("which device did the work").next().unwrap_or_default();
    let steps: Vec<&str> = table
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<u32>().is_ok()) && l.contains('%'))
        .collect();
    assert!(!steps.is_empty(), "{out}");
    for step in &steps {
        assert!(step.contains(&format!("% {loop_name}")) && !step.contains(&backing), "busiest: {step}\n{out}");
    }
    assert!(out.contains(&said), "{out}");
    let streams = read_json(&streams_json);
    let comparison = streams["streams"]["estimate"]["comparison"].as_str().expect("the estimate compared");
    assert!(!comparison.contains("lives in RAM"), "{comparison}");
    let step = &streams["streams"]["steps"][0];
    let loop_reads = step["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["activity"]["name"] == loop_name.as_str())
        .map(|d| d["activity"]["read_bytes"].as_u64().unwrap())
        .unwrap();
    assert!(loop_reads > 0, "the loop device served the viewers");
}
