//! `streamcap trial` on four blank loop devices throttled into emulated drives like tests/plan_validation.rs
//! (root-group blkio limits on the test's own devices, reset in every outcome): mirror, raid10 and parity are
//! built in turn, measured briefly and wiped; the table shows measured against predicted for all three, the exit
//! code is 0 and the devices are blank afterwards (`blkid -p` and `wipefs` find nothing). And the refusals: a
//! device holding a filesystem, a missing --allow-device-writes, no --yes off a terminal — each exit 2 with
//! every device exactly as it was. And Ctrl-C in the middle of a layout's measurement: exit 130, the pool
//! unmounted, every device blank, the partial table printed and kept in the JSON. Root only; skipped loudly
//! without loop devices, blkio throttling or btrfs.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    LoopDevice, RootThrottle, can_build_btrfs, can_build_throttled_btrfs, read_json, streamcap, streamcap_path,
    throttled_catalogue,
};
use rustix::process::{Pid, Signal, kill_process};

const MEMBER_BYTES: u64 = 768 << 20;
/// Read bytes/s, write bytes/s, read requests/s, write requests/s per device (as plan_validation).
const LIMITS: [u64; 4] = [30_000_000, 20_000_000, 150, 1000];

fn devices(dir: &Path, n: usize) -> Vec<LoopDevice> {
    (0..n).map(|i| LoopDevice::new(&dir.join(format!("d{i}.img")), MEMBER_BYTES)).collect()
}

fn paths(devices: &[LoopDevice]) -> Vec<String> {
    devices.iter().map(|d| d.device.display().to_string()).collect()
}

/// What `blkid -p` and `wipefs` find on the device ("" when blank).
fn signatures(device: &LoopDevice) -> String {
    let blkid = Command::new("blkid").arg("-p").arg(&device.device).output().unwrap();
    let wipefs = Command::new("wipefs").arg("--noheadings").arg(&device.device).output().unwrap();
    assert!(wipefs.status.success(), "wipefs: {}", String::from_utf8_lossy(&wipefs.stderr));
    format!("{}{}", String::from_utf8_lossy(&blkid.stdout), String::from_utf8_lossy(&wipefs.stdout)).trim().to_string()
}

/// Runs `trial` over four throttled loop devices with `layouts`, and checks what every trial must leave: every
/// device blank, exit 0, one measured row set per layout (4 figures, each with its ratio), the table printed.
/// Returns the result's layouts and the table.
fn trial_on_four(layouts: &str, runtime: &str, size: &str, format: &str) -> (Vec<serde_json::Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let devices = devices(dir.path(), 4);
    let catalogue = dir.path().join("drives.toml");
    std::fs::write(&catalogue, throttled_catalogue(MEMBER_BYTES, LIMITS)).unwrap();
    let json = dir.path().join("trial.json");
    let throttle = RootThrottle::new(&devices, LIMITS);
    let output = streamcap()
        .arg("trial")
        .args(paths(&devices))
        .args(["--layouts", layouts, "--allow-device-writes", "--yes", "--quiet"])
        .args(["--drives", catalogue.to_str().unwrap(), "--size", size, "--runtime", runtime, "--chunk", "256k"])
        .args(["--format", format])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    drop(throttle);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    for device in &devices {
        assert_eq!(signatures(device), "", "{} is not blank after the trial", device.device.display());
    }
    assert!(output.status.success(), "exit {:?}", output.status.code());
    let result = read_json(&json);
    assert_eq!(result["schema"], "streamcap.trial");
    let layouts = result["layouts"].as_array().unwrap().clone();
    for layout in &layouts {
        assert_eq!(layout["status"], "measured", "{layout}");
        assert_eq!(layout["members"], 4);
        let figures = layout["figures"].as_array().unwrap();
        assert_eq!(figures.len(), 4, "{layout}");
        for f in figures {
            let (predicted, measured) = (f["predicted"].as_f64().unwrap(), f["measured"].as_f64().unwrap());
            assert!(predicted > 0.0 && measured > 0.0, "{f}");
            assert!((f["ratio"].as_f64().unwrap() - measured / predicted).abs() < 1e-9, "{f}");
        }
        // Issue 28: the write is the members' rate, not a cache's — every byte measured reached them within the
        // phase (a mirror writes each twice). 0.95: the writes in flight when the ramp ended.
        let on_devices = figures[0]["on_devices"].as_f64().unwrap();
        assert!(on_devices >= 0.95, "the devices wrote {on_devices} × what was measured: {}", figures[0]);
        assert!(stdout.contains(&format!("{} × 4", layout["layout"].as_str().unwrap())), "{stdout}");
    }
    assert!(stdout.contains("measured ÷ predicted"), "{stdout}");
    (layouts, stdout)
}

/// The CI test (issue 26: it took 408 s with three layouts): one layout, short phases, and a format of 40 Mbit/s
/// whose capacity on this mirror is a few streams, so the search needs half the steps of 1080p's 28 (128 → 90 s)
/// — what every layout's trial must do (build, measure, compare, wipe) is proved once. The three-layout comparison is the ignored
/// test below (docs/planning.md, "Trial: measured against predicted").
#[test]
fn trial_builds_measures_and_wipes_a_mirror() {
    let test = "trial of a mirror";
    if !can_build_throttled_btrfs(test) {
        return;
    }
    let (layouts, _) = trial_on_four("mirror", "1s", "16M", "40Mbit");
    let names: Vec<&str> = layouts.iter().map(|l| l["layout"].as_str().unwrap()).collect();
    assert_eq!(names, ["btrfs-raid1"]);
}

/// The comparison of issue 28 on four throttled drives: mirror, raid10 and parity built in turn, every figure
/// printed with its ratio. Minutes long: run it by hand (`cargo test --test trial -- --ignored`); its last
/// measured figures are in docs/planning.md.
#[test]
#[ignore = "several minutes: the three-layout comparison, run by hand (docs/planning.md)"]
fn trial_compares_mirror_raid10_and_parity_with_the_planner() {
    let test = "trial of mirror, raid10 and parity";
    if !can_build_throttled_btrfs(test) {
        return;
    }
    let (layouts, _) = trial_on_four("mirror,raid10,parity", "2s", "32M", "1080p");
    let names: Vec<&str> = layouts.iter().map(|l| l["layout"].as_str().unwrap()).collect();
    assert_eq!(names, ["btrfs-raid1", "btrfs-raid10", "btrfs-raid5"]);
    for layout in &layouts {
        for f in layout["figures"].as_array().unwrap() {
            eprintln!("{} {}: measured ÷ predicted {:.2}", layout["layout"], f["figure"], f["ratio"]);
        }
    }
}

/// Issue 28's target: without a catalogue, trial measures the first device alone and models the drive from it
/// (its throttle found, its rotational flag not believed); every sequential and random prediction of mirror,
/// raid10 and parity within ±15 % of its measurement. Minutes long: run by hand (docs/planning.md).
#[test]
#[ignore = "several minutes: the drive measured, then three layouts, run by hand (docs/planning.md)"]
fn trial_models_a_throttled_drive_within_fifteen_percent() {
    let test = "trial with a measured drive";
    if !can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices = devices(dir.path(), 4);
    let json = dir.path().join("trial.json");
    let throttle = RootThrottle::new(&devices, LIMITS);
    let output = streamcap()
        .arg("trial")
        .args(paths(&devices))
        .args(["--layouts", "mirror,raid10,parity", "--allow-device-writes", "--yes", "--quiet"])
        .args(["--size", "32M", "--runtime", "2s", "--chunk", "256k", "--engine", "sync", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    drop(throttle);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(output.status.success(), "exit {:?}", output.status.code());
    assert!(stderr.contains("the drive as measured:") && stderr.contains("is throttled"), "{stderr}");
    let result = read_json(&json);
    let mut off = Vec::new();
    for layout in result["layouts"].as_array().unwrap() {
        for f in layout["figures"].as_array().unwrap().iter().take(3) {
            let ratio = f["ratio"].as_f64().unwrap();
            eprintln!("{} {}: measured ÷ predicted {ratio:.2}", layout["layout"], f["figure"]);
            // Parity's write was 1.19–1.59 × its prediction when the phase wrote 32 MiB once (0.44 s): the
            // throttle's first slice, not the model; every raw phase is timed after a ramp since.
            if !(0.85..=1.15).contains(&ratio) {
                off.push(format!("{} {} {ratio:.2}", layout["layout"], f["figure"]));
            }
        }
    }
    assert!(off.is_empty(), "outside ±15 %: {off:?}");
}

/// Runs a trial that must be refused: exit 2, the reason on stderr, every device as it was.
fn refused(devices: &[LoopDevice], extra: &[&str], reason: &str) {
    let before: Vec<String> = devices.iter().map(signatures).collect();
    let output = streamcap()
        .arg("trial")
        .args(paths(devices))
        .args(["--layouts", "mirror,parity", "--drives", "examples/drives.toml", "--drive", "870evo-4tb"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(reason), "{stderr}");
    let after: Vec<String> = devices.iter().map(signatures).collect();
    assert_eq!(before, after, "a refused trial changed a device");
}

#[test]
fn trial_refuses_a_device_holding_a_filesystem_and_touches_nothing() {
    if !can_build_btrfs("trial refuses a device with a filesystem") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices = devices(dir.path(), 3);
    devices[1].mkfs_ext4();
    assert!(signatures(&devices[1]).contains("ext4"));
    let holds = format!("{} holds a", devices[1].device.display());
    refused(&devices, &["--allow-device-writes", "--yes"], &holds);
}

#[test]
fn trial_refuses_without_allow_device_writes_or_a_yes_off_the_terminal() {
    if !can_build_btrfs("trial refuses without --allow-device-writes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices = devices(dir.path(), 3);
    refused(&devices, &["--yes"], "add --allow-device-writes");
    // stdin is not a terminal under the test harness: trial cannot ask, so it needs --yes.
    refused(&devices, &["--allow-device-writes"], "add --yes");
}

/// Mount points under `dir` (from /proc/self/mountinfo; octal escapes of spaces do not occur in a tempdir).
fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let prefix = dir.to_str().unwrap();
    info.lines().filter_map(|l| l.split(' ').nth(4)).filter(|p| p.starts_with(prefix)).map(String::from).collect()
}

/// 512-byte sectors read from the device (/sys/block/NAME/stat, third field).
fn sectors_read(device: &LoopDevice) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", device.name())).unwrap();
    stat.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Waits until the first layout's sequential read is under way. The sequential write is over once the mounted
/// pool's devices have served more reads than the 16 MiB it wrote (the safety checks and mkfs read before the
/// mount; mounting reads a few metadata blocks). A loop device's counters outlive attachments: count from the
/// mount.
fn wait_for_the_first_layout_s_reads(child: &mut std::process::Child, devices: &[LoopDevice], tmp: &Path) {
    let give_up = Instant::now() + Duration::from_secs(120);
    let mut mounted_at: Option<u64> = None;
    loop {
        let read: u64 = devices.iter().map(sectors_read).sum();
        match mounted_at {
            None if mounts_under(tmp).len() == 1 => mounted_at = Some(read),
            Some(base) if read - base > 2 * 16 * 1024 => break,
            _ => {}
        }
        if Instant::now() > give_up || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            panic!("trial never started reading a layout: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_during_a_layout_tears_it_down_and_keeps_the_partial_table() {
    if !can_build_btrfs("trial stops on Ctrl-C") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let devices = devices(dir.path(), 2);
    // trial mounts its pools under the temporary directory: the test's own, so it can see them.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let json = dir.path().join("trial.json");
    let mut child = Command::new(streamcap_path())
        .arg("trial")
        .args(paths(&devices))
        .args(["--layouts", "mirror,single", "--allow-device-writes", "--yes", "--quiet"])
        .args(["--drives", "examples/drives.toml", "--drive", "870evo-4tb", "--size", "16M", "--runtime", "30s"])
        .arg("--json")
        .arg(&json)
        .env("TMPDIR", &tmp)
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_the_first_layout_s_reads(&mut child, &devices, &tmp);
    kill_process(Pid::from_raw(child.id() as i32).unwrap(), Signal::INT).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));

    assert_eq!(output.status.code(), Some(130), "an interrupted trial exits as an interrupted run");
    assert_eq!(mounts_under(&tmp), Vec::<String>::new(), "a pool is still mounted");
    for device in &devices {
        assert_eq!(signatures(device), "", "{} is not blank after Ctrl-C", device.device.display());
    }
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    assert!(stdout.contains("measured ÷ predicted") && stdout.contains("Interrupted"), "{stdout}");
    let result = read_json(&json);
    assert_eq!(result["interrupted"], true);
    let layouts = result["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 1, "the second layout was not built after Ctrl-C: {layouts:?}");
    assert_eq!(layouts[0]["layout"], "btrfs-raid1");
    assert_eq!(layouts[0]["status"], "interrupted");
    let figures = layouts[0]["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 4, "the partial table keeps every prediction");
    assert!(figures[0]["measured"].as_f64().is_some_and(|w| w > 0.0), "the finished write is kept: {}", figures[0]);
    assert!(figures[3]["measured"].is_null(), "no stream search ran: {}", figures[3]);
}
