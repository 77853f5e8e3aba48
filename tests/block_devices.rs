//! Raw block devices, on real loop devices (root only; skipped loudly otherwise): a device that carries a
//! filesystem is refused, a blank one is accepted with --allow-device-writes, a mounted one is refused even
//! with --force, and reading never needs a flag. Also a real I/O error mid-run: a loop device whose backing
//! file lives on a tmpfs too small for it fails writes once the tmpfs is full, as thin-provisioned storage does.

mod common;

use common::{LoopDevice, Mount, can_use_loop_devices, read_json, streamcap};
use predicates::prelude::*;

#[test]
fn a_device_with_a_filesystem_is_refused_and_a_blank_one_accepted_with_the_flag() {
    if !can_use_loop_devices("device safety") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let blank = LoopDevice::new(&dir.path().join("blank.img"), 64 << 20);
    let formatted = LoopDevice::new(&dir.path().join("ext4.img"), 64 << 20);
    formatted.mkfs_ext4();
    let write = ["--rw", "write", "--bs", "1M", "--size", "16M"];

    streamcap()
        .arg("run")
        .arg(&blank.device)
        .args(write)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--allow-device-writes"));
    streamcap()
        .arg("run")
        .arg(&formatted.device)
        .args(write)
        .arg("--allow-device-writes")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("ext4").and(predicate::str::contains("--force")));
    let untouched = std::process::Command::new("blkid").arg("-p").arg(&formatted.device).output().unwrap();
    assert!(String::from_utf8_lossy(&untouched.stdout).contains("ext4"), "the filesystem is still there");

    let json = dir.path().join("blank.json");
    streamcap()
        .arg("run")
        .arg(&blank.device)
        .args(write)
        .args(["--allow-device-writes", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    assert_eq!(r["target"]["kind"], "block_device");
    assert_eq!(r["phases"][0]["write"]["bytes"].as_u64().unwrap(), 16 << 20);

    // Reading needs no permission, even from a device that holds a filesystem.
    streamcap()
        .arg("run")
        .arg(&formatted.device)
        .args(["--rw", "randread", "--size", "16M", "--runtime", "300ms", "--quiet"])
        .assert()
        .success();
}

#[test]
fn a_mounted_device_is_refused_even_with_force() {
    if !can_use_loop_devices("mounted device") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("m.img"), 64 << 20);
    device.mkfs_ext4();
    let _mount = Mount::new(&device.device.to_string_lossy(), &dir.path().join("mnt"), &[]);
    streamcap()
        .arg("run")
        .arg(&device.device)
        .args(["--rw", "write", "--size", "8M", "--allow-device-writes", "--force"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mounted at"));
}

#[test]
fn an_io_error_mid_run_stops_the_phase_and_is_recorded_with_path_and_offset() {
    if !can_use_loop_devices("I/O errors") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Declared before the loop device so that it is dropped (unmounted) after the device is detached.
    let small = Mount::new("tmpfs", &dir.path().join("small"), &["-t", "tmpfs", "-o", "size=24m"]);
    let device = LoopDevice::new(&small.point.join("thin.img"), 128 << 20);
    let json = dir.path().join("eio.json");
    streamcap()
        .arg("run")
        .arg(&device.device)
        .args(["--rw", "write", "--bs", "1M", "--iodepth", "4", "--size", "96M", "--allow-device-writes", "--json"])
        .arg(&json)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("stopped by an I/O error"));
    let r = read_json(&json);
    assert_eq!(r["status"], "io_error");
    let phase = &r["phases"][0];
    assert_eq!(phase["status"], "io_error");
    let written = phase["write"]["bytes"].as_u64().unwrap();
    assert!(written > 0 && written < 96 << 20, "wrote {written} bytes before the error");
    let error = &phase["errors"]["records"][0];
    assert_eq!(error["op"], "write");
    assert_eq!(error["path"], device.device.to_string_lossy().as_ref());
    assert!(matches!(error["errno"].as_i64(), Some(5 | 28)), "EIO or ENOSPC: {error}");
    assert!(error["offset"].as_u64().unwrap() >= 16 << 20, "the error comes once the tmpfs is full: {error}");

    // With --continue-on-error the phase goes on, counts every failure, and the exit code still says so.
    let json = dir.path().join("continue.json");
    streamcap()
        .arg("run")
        .arg(&device.device)
        .args(["--rw", "write", "--bs", "1M", "--size", "96M", "--allow-device-writes", "--continue-on-error"])
        .args(["--quiet", "--json"])
        .arg(&json)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("error: phase").and(predicate::str::contains("failed operations")));
    let r = read_json(&json);
    let phase = &r["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert!(phase["errors"]["count"].as_u64().unwrap() > 10);
}

/// Sectors written to a block device so far (/sys/block/NAME/stat, field 7).
fn sectors_written(name: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(6).unwrap().parse().unwrap()
}

/// Issue 29: verification on a block device was refused. fio verifies a device where its blocks lie, and so does
/// streamcap: a verified write phase on a loop device, then a verified read phase; a block changed on the device
/// between them (through the loop device's backing file) is caught and named, and every other block is good.
#[test]
fn a_verified_job_on_a_block_device_catches_a_block_changed_beneath_it() {
    if !can_use_loop_devices("verify on a device") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("v.img"), 64 << 20);
    let name = device.name();
    let job = format!(
        "[global]\nfilename={}\nbs=64k\nsize=16m\ndirect=1\nverify=crc32c\n[w]\nrw=randwrite\n\
         [r]\nstonewall\nrw=randread\nruntime=8\ntime_based\n",
        device.device.display()
    );
    std::fs::write(dir.path().join("v.fio"), job).unwrap();
    let before = sectors_written(&name);
    let mut child = std::process::Command::new(common::streamcap_path())
        .current_dir(dir.path())
        .args(["run", "--job", "v.fio", "--allow-device-writes", "--json", "v.json", "--quiet", "--no-history"])
        .spawn()
        .unwrap();
    // Once the 16 MiB are on the device the write phase is over: change 16 bytes of the block at 1 MiB.
    let started = std::time::Instant::now();
    while sectors_written(&name) < before + (16 << 20) / 512 {
        assert!(started.elapsed().as_secs() < 120, "the write phase did not finish");
        assert!(child.try_wait().unwrap().is_none(), "streamcap ended before its read phase");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let backing = std::fs::OpenOptions::new().write(true).open(&device.backing).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&backing, &[0xAA; 16], (1 << 20) + 4096).unwrap();
    drop(backing);
    let status = child.wait().unwrap();
    let v = read_json(&dir.path().join("v.json"))["verify"].clone();
    assert_ne!(status.code(), Some(0), "a bad block fails the run: {v}");
    assert_eq!(v["bad_count"], 1, "{v}");
    assert_eq!(v["bad_blocks"][0]["offset"], 1 << 20, "{v}");
    assert_eq!(v["algorithm"], "crc32c");
}
