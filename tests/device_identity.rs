//! Devices by identity and exclusive use (issue 25, items 3 and 6): a loop device that is, under another name,
//! the bytes of a mounted filesystem's image is refused whatever the flags, and the image stays byte-identical;
//! two write runs, two trials, or two checks never share a device or a directory's tree — the second is refused
//! naming the first, before it touches anything. Root only (loop devices); each test says SKIPPED otherwise.
//! The tests wait for observable progress (sectors written, a file appearing), never for a time.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{LoopDevice, Mount, Running, can_use_loop_devices, streamcap, streamcap_path};

/// A hash of the whole file, read in 1 MiB pieces.
fn digest(path: &Path) -> u64 {
    use std::io::Read;
    let mut file = std::fs::File::open(path).expect("open");
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).expect("read");
        if n == 0 {
            return hasher.digest();
        }
        hasher.update(&buf[..n]);
    }
}

fn losetup(args: &[&str], backing: &Path) -> LoopDevice {
    let out = Command::new("losetup").args(["-f", "--show"]).args(args).arg(backing).output().expect("losetup");
    assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
    LoopDevice { device: device.into(), backing: backing.to_path_buf() }
}

#[test]
fn a_loop_alias_of_a_mounted_image_is_refused_whatever_the_flags() {
    // Regression (audit item 3): `losetup -o 128M fs.img` while fs.img was mounted through another loop device
    // was accepted: a write run exited 0 without --force and changed a file inside the mounted ext4. At offset
    // 0 the ext4 signature stopped it, but --force let it through.
    let test = "a_loop_alias_of_a_mounted_image_is_refused";
    if !can_use_loop_devices(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("fs.img");
    let mounted = LoopDevice::new(&image, 512 << 20);
    mounted.mkfs_ext4();
    let point = dir.path().join("mnt");
    let _mount = Mount::new(mounted.device.to_str().unwrap(), &point, &[]);
    let victim: Vec<u8> = (0..200u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(point.join("victim"), &victim).unwrap();
    // Read-only from here on, so that nothing but a write through an alias could change the image. A remount,
    // not an unmount and a second mount: in the 2026-11-29 00:45 CI the second mount failed ("already mounted or
    // mount point busy") while other tests ran beside it, the first mount's superblock still held.
    let remount = Command::new("mount").args(["-o", "remount,ro"]).arg(&point).status().unwrap();
    assert!(remount.success(), "mount -o remount,ro {}", point.display());
    let before = digest(&image);
    for offset in ["0", "128M"] {
        let alias = losetup(&["-o", offset], &image);
        for force in [&[][..], &["--force"][..]] {
            let out = streamcap()
                .args(["run", alias.device.to_str().unwrap(), "--rw", "write", "--bs", "1M", "--size", "64M"])
                .arg("--allow-device-writes")
                .args(force)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "offset {offset} {force:?}: {stderr}");
            let names = format!("the same bytes as {} (mounted at {}", mounted.name(), point.display());
            assert!(stderr.contains(&names), "offset {offset} {force:?}: the overlap is named: {stderr}");
            assert!(stderr.contains("fs.img") && stderr.contains("never this"), "{stderr}");
        }
    }
    assert_eq!(digest(&image), before, "the mounted image changed");
    // A loop device over another image is not in anything's way.
    let other = LoopDevice::new(&dir.path().join("other.img"), 128 << 20);
    let out = streamcap()
        .args(["run", other.device.to_str().unwrap(), "--rw", "write", "--size", "16M", "--allow-device-writes"])
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// 512-byte sectors written to the device so far (/sys/block/NAME/stat, seventh field).
fn sectors_written(device: &LoopDevice) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", device.name())).unwrap();
    stat.split_whitespace().nth(6).unwrap().parse().unwrap()
}

/// Waits until `child` has written more than 4 MiB to `device` (counted from now).
fn wait_for_writes(child: &mut Child, device: &LoopDevice) {
    let base = sectors_written(device);
    let give_up = Instant::now() + Duration::from_secs(120);
    while sectors_written(device) - base < 8192 {
        if Instant::now() > give_up || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            panic!("never wrote to {}: {stderr}", device.device.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a work directory under `base` holds a `data.0` (tolerating directories that come and go).
fn has_data_file(base: &Path) -> bool {
    let Ok(dirs) = std::fs::read_dir(base) else { return false };
    dirs.flatten().any(|d| d.path().join("data.0").exists())
}

fn interrupt(child: Running) -> (Option<i32>, String) {
    let mut child = child;
    let status = common::interrupt_and_wait(&mut child.0, Duration::from_secs(60));
    let mut stderr = String::new();
    if let Some(mut pipe) = child.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    (status.code(), stderr)
}

fn spawn(args: &[&str], dir: &Path) -> Child {
    Command::new(streamcap_path())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .env("TMPDIR", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start streamcap")
}

#[test]
fn two_write_runs_on_one_loop_device_never_share_it() {
    let test = "two_write_runs_on_one_loop_device_never_share_it";
    if !can_use_loop_devices(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    let path = device.device.to_str().unwrap();
    let args = ["run", path, "--rw", "write", "--bs", "1M", "--size", "200M", "--rate", "10M", "--allow-device-writes"];
    let mut first = Running(spawn(&args, dir.path()));
    wait_for_writes(&mut first.0, &device);
    let out =
        streamcap().args(["run", path, "--rw", "write", "--size", "16M", "--allow-device-writes"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let holder = format!("in use by another streamcap (pid {} on host", first.0.id());
    assert!(stderr.contains(&holder) && stderr.contains("streamcap run"), "the first run is named: {stderr}");
    let (code, stderr) = interrupt(first);
    assert_eq!(code, Some(130), "the first run went on undisturbed until Ctrl-C: {stderr}");
}

#[test]
fn a_second_trial_on_the_same_device_is_refused_before_it_touches_it() {
    // Regression (audit item 6): a second trial passed its checks while the first measured the device alone (no
    // mount, no signature), and ran `wipefs -a` on it when its own measurement was refused.
    let test = "a_second_trial_on_the_same_device_is_refused";
    if !can_use_loop_devices(test) || !common::have_btrfs() {
        if can_use_loop_devices(test) {
            common::skip(&format!("{test}: btrfs is not available"));
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("d0.img"), 768 << 20);
    let path = device.device.to_str().unwrap();
    let trial = ["trial", path, "--layouts", "single", "--allow-device-writes", "--yes", "--quiet"];
    let mut first = Running(spawn(&[&trial[..], &["--size", "16M", "--runtime", "10s"]].concat(), dir.path()));
    // Modelling the drive: the first trial writes to the device alone, before any pool exists.
    wait_for_writes(&mut first.0, &device);
    let written = sectors_written(&device);
    let out = streamcap().args(trial).args(["--size", "16M", "--runtime", "3s"]).env("TMPDIR", dir.path()).output();
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let holder = format!("in use by another streamcap (pid {} on host", first.0.id());
    assert!(stderr.contains(&holder) && stderr.contains("streamcap trial"), "the first trial is named: {stderr}");
    assert!(stderr.contains("trial touches nothing"), "{stderr}");
    assert!(!stderr.contains("wipe"), "{stderr}");
    assert!(sectors_written(&device) >= written, "a counter only grows");
    let (code, stderr) = interrupt(first);
    assert_eq!(code, Some(130), "the first trial went on until Ctrl-C: {stderr}");
    assert!(!stderr.contains("error:"), "the first trial was not disturbed: {stderr}");
}

#[test]
fn a_second_check_of_one_directory_is_refused_before_its_first_phase() {
    // Regression (audit item 6): two checks of one directory ran side by side for five phases before the second
    // was refused at the small-file tree, with advice to use --wait, which check did not accept.
    let target = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = target.path().to_str().unwrap();
    let mut first = Running(spawn(&["check", dir, "--quick", "--quiet", "--no-html"], work.path()));
    let base = target.path().join(".streamcap");
    let give_up = Instant::now() + Duration::from_secs(120);
    while !has_data_file(&base) {
        assert!(Instant::now() < give_up && first.0.try_wait().unwrap().is_none(), "the first check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let json = work.path().join("second.json");
    let started = Instant::now();
    let out = streamcap()
        .args(["check", dir, "--quick", "--no-html", "--json"])
        .arg(&json)
        .current_dir(work.path())
        .output()
        .unwrap();
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.0.id())) && stderr.contains("--wait"), "{stderr}");
    assert!(!stdout.contains("[1/"), "refused before its first phase:\n{stdout}");
    if json.exists() {
        let result = common::read_json(&json);
        assert_eq!(result["phases"].as_array().map(Vec::len), Some(0), "no phase ran: {result}");
    }
    eprintln!("the second check was refused after {:.1} s", started.elapsed().as_secs_f64());
    // The advice works: check accepts --wait.
    let out = streamcap().args(["check", dir, "--quick", "--wait", "--dry-run"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, stderr) = interrupt(first);
    assert_eq!(code, Some(130), "{stderr}");
}
