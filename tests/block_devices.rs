//! Raw block devices, on real loop devices (root only; skipped loudly otherwise): a device that carries a
//! filesystem is refused, a blank one is accepted with --allow-device-writes, a mounted one is refused even
//! with --force, and reading never needs a flag. Also a real I/O error mid-run: a loop device whose backing
//! file lives on a tmpfs too small for it fails writes once the tmpfs is full, as thin-provisioned storage does.
//! And a fio file whose jobs name their own devices, mapped with `run --device` (issue 29): each device does its
//! own jobs' I/O, as fio does with the same file on the same devices.

mod common;

use std::path::Path;

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

/// Sectors read from a block device so far (/sys/block/NAME/stat, field 3).
fn sectors_read(name: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// A fio file of three jobs on the devices it calls /dev/sdb and /dev/sdc: 8 MiB read on one, 16 MiB on the
/// other, then 32 MiB over both (fio's size spread over a job's files: 16 MiB each). `names` replaces the two.
fn two_device_job(rw: &str, names: [&str; 2]) -> String {
    let [b, c] = names;
    format!(
        "[global]\nrw={rw}\nbs=64k\ndirect=1\nsize=8m\n[a]\nfilename={b}\n[b]\nfilename={c}\nsize=16m\n\
         [both]\nstonewall\nfilename={b}:{c}\nsize=32m\n"
    )
}

/// Runs `streamcap run --job` (more `args` after it) in `dir`; the sectors each of `devices` read and wrote.
fn device_sectors(devices: &[&LoopDevice], run: impl FnOnce()) -> Vec<(u64, u64)> {
    let before: Vec<(u64, u64)> =
        devices.iter().map(|d| (sectors_read(&d.name()), sectors_written(&d.name()))).collect();
    run();
    let after = devices.iter().map(|d| (sectors_read(&d.name()), sectors_written(&d.name())));
    after.zip(before).map(|(a, b)| (a.0 - b.0, a.1 - b.1)).collect()
}

/// Issue 29: a fio file's jobs on different devices, mapped with `--device`, run each on its own, and a job over
/// `dev1:dev2` reads both: each device's own counters show its jobs' bytes. fio itself, given the same file
/// with the devices' real names, moves the same bytes on each (where fio is installed).
#[test]
fn a_fio_file_of_jobs_on_two_devices_runs_each_on_its_own_device() {
    if !can_use_loop_devices("fio jobs on two devices") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (b, c) =
        (LoopDevice::new(&dir.path().join("b.img"), 64 << 20), LoopDevice::new(&dir.path().join("c.img"), 64 << 20));
    std::fs::write(dir.path().join("two.fio"), two_device_job("read", ["/dev/sdb", "/dev/sdc"])).unwrap();
    let map = |name: &str, to: &LoopDevice| format!("--device={name}={}", to.device.display());
    let json = dir.path().join("r.json");
    let ours = device_sectors(&[&b, &c], || {
        streamcap()
            .current_dir(dir.path())
            .args(["run", "--job", "two.fio", "--quiet", "--json"])
            .arg(&json)
            .arg(map("/dev/sdb", &b))
            .arg(map("/dev/sdc", &c))
            .assert()
            .success();
    });
    const MIB_SECTORS: u64 = (1 << 20) / 512;
    // Reads of the device by others (udev's probes of a new loop device) may add a little; none may be missing.
    for ((read, written), expected) in ours.iter().zip([24, 32]) {
        assert!(*read >= expected * MIB_SECTORS && *read < (expected + 1) * MIB_SECTORS, "{ours:?}");
        assert_eq!(*written, 0);
    }
    let r = read_json(&json);
    let on = |i: usize| {
        r["phases"][i]["on"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let (bn, cn) = (b.device.display().to_string(), c.device.display().to_string());
    assert_eq!((on(0), on(1), on(2)), (vec![bn.clone()], vec![cn.clone()], vec![bn.clone(), cn.clone()]));
    let read = |i: usize| r["phases"][i]["read"]["bytes"].as_u64().unwrap();
    assert_eq!((read(0), read(1), read(2)), (8 << 20, 16 << 20, 32 << 20));

    if !std::process::Command::new("sh").args(["-c", "command -v fio"]).output().unwrap().status.success() {
        return common::skip("the comparison with fio: fio is not installed");
    }
    std::fs::write(dir.path().join("fio.fio"), two_device_job("read", [bn.as_str(), cn.as_str()])).unwrap();
    let fio = device_sectors(&[&b, &c], || {
        let out = std::process::Command::new("fio").current_dir(dir.path()).arg("fio.fio").output().unwrap();
        assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    });
    for (f, o) in fio.iter().zip(&ours) {
        assert!(f.0.abs_diff(o.0) < MIB_SECTORS, "fio {fio:?}, streamcap {ours:?}");
    }
}

/// Issue 29: the refusals of `--device`, each exit 2 before a byte is written, saying what to do: a device of
/// the file no --device maps, a mapping onto a device that does not exist, and a write to a device without
/// --allow-device-writes (with it, each device gets its own jobs' writes; and so with the devices given as TARGETs
/// in order).
#[test]
fn device_mappings_are_refused_when_incomplete_missing_or_writing_without_consent() {
    if !can_use_loop_devices("--device refusals") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (b, c) =
        (LoopDevice::new(&dir.path().join("b.img"), 64 << 20), LoopDevice::new(&dir.path().join("c.img"), 64 << 20));
    std::fs::write(dir.path().join("read.fio"), two_device_job("read", ["/dev/sdb", "/dev/sdc"])).unwrap();
    std::fs::write(dir.path().join("write.fio"), two_device_job("write", ["/dev/sdb", "/dev/sdc"])).unwrap();
    let map = |name: &str, to: &Path| format!("--device={name}={}", to.display());
    let run = |job: &str, maps: &[String]| {
        let mut cmd = streamcap();
        cmd.current_dir(dir.path()).args(["run", "--job", job, "--quiet"]).args(maps);
        cmd
    };
    run("read.fio", &[map("/dev/sdb", &b.device)])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("job 'b' names /dev/sdc, which no --device maps: add --device /dev/sdc="));
    let missing = dir.path().join("no-such-device");
    run("read.fio", &[map("/dev/sdb", &b.device), map("/dev/sdc", &missing)])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("which does not exist"));
    let both = [map("/dev/sdb", &b.device), map("/dev/sdc", &c.device)];
    let written = device_sectors(&[&b, &c], || {
        run("write.fio", &both).assert().code(2).stderr(predicate::str::contains("--allow-device-writes"));
    });
    assert!(written.iter().all(|(_, w)| *w == 0), "{written:?}");
    let written = device_sectors(&[&b, &c], || {
        run("write.fio", &both).arg("--allow-device-writes").assert().success();
    });
    const MIB_SECTORS: u64 = (1 << 20) / 512;
    assert_eq!((written[0].1, written[1].1), (24 * MIB_SECTORS, 32 * MIB_SECTORS), "{written:?}");
    // Several TARGETs take the file's devices in the order its jobs first name them, as the mapping did.
    let written = device_sectors(&[&b, &c], || {
        let mut cmd = streamcap();
        cmd.current_dir(dir.path()).args(["run", "--job", "write.fio", "--quiet", "--allow-device-writes"]);
        cmd.arg(&c.device).arg(&b.device).assert().success();
    });
    assert_eq!((written[0].1, written[1].1), (32 * MIB_SECTORS, 24 * MIB_SECTORS), "{written:?}");
}
