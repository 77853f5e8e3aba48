//! Device activity in results, on real stacks built from loop devices (root only; skipped loudly otherwise):
//! a run on a filesystem on a loop device shows that loop device's activity and the disk under its backing
//! file; a run on a btrfs raid1 shows both members.

mod common;

use common::{LoopDevice, Mount, can_use_loop_devices, read_json, streamcap};

fn device<'a>(phase: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    phase["devices"].as_array().unwrap().iter().find(|d| d["activity"]["name"] == name)
}

#[test]
fn a_filesystem_on_a_loop_device_shows_that_devices_activity() {
    if !can_use_loop_devices("device stats") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    disk.mkfs_ext4();
    let mount = Mount::new(&disk.device.to_string_lossy(), &dir.path().join("mnt"), &[]);
    let json = dir.path().join("stats.json");
    streamcap()
        .arg("run")
        .arg(&mount.point)
        .args(["--rw", "randread", "--size", "64M", "--iodepth", "8", "--runtime", "1s", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    let listed: Vec<&str> =
        r["target"]["devices"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(listed[0], disk.name(), "the filesystem's device comes first: {listed:?}");
    assert!(listed.len() >= 2, "the disk under the backing file is listed too: {listed:?}");

    let phase = &r["phases"][0];
    let activity = device(phase, &disk.name()).expect("the loop device's activity is in the result");
    assert_eq!(activity["role"], "filesystem device");
    let reads = activity["activity"]["reads"].as_u64().unwrap();
    let ops = phase["read"]["ops"].as_u64().unwrap();
    // Direct I/O: every 4 KiB read reaches the device (a few more may come from the filesystem itself).
    assert!(reads >= ops * 9 / 10, "device reads {reads} for {ops} operations");
    assert!(activity["activity"]["busy_pct"].as_f64().unwrap() > 0.0);
    let intervals = phase["intervals"].as_array().unwrap();
    assert!(intervals[0]["devices"].as_array().unwrap().iter().any(|d| d["name"] == disk.name().as_str()));
    // The per-device series counts reads and bytes per interval; together they are the phase's device activity
    // (the phase's samples also cover starting and joining the workers, so they may hold a few more).
    let points: Vec<&serde_json::Value> = intervals
        .iter()
        .flat_map(|i| i["devices"].as_array().unwrap())
        .filter(|d| d["name"] == disk.name().as_str())
        .collect();
    let series_reads: u64 = points.iter().map(|d| d["reads"].as_u64().unwrap()).sum();
    let series_bytes: u64 = points.iter().map(|d| d["read_bytes"].as_u64().unwrap()).sum();
    assert!(series_reads > 0 && series_reads <= reads, "series {series_reads} reads, phase {reads}");
    assert!(series_bytes >= series_reads * 4096, "4 KiB per read at least: {series_bytes} bytes");
}

#[test]
fn a_btrfs_raid1_shows_both_members() {
    if !can_use_loop_devices("btrfs members") {
        return;
    }
    if std::process::Command::new("mkfs.btrfs").arg("--version").output().is_err() {
        common::skip("btrfs members: mkfs.btrfs is not installed (apt-get install btrfs-progs)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = LoopDevice::new(&dir.path().join("a.img"), 512 << 20);
    let b = LoopDevice::new(&dir.path().join("b.img"), 512 << 20);
    let status = std::process::Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-d", "raid1", "-m", "raid1"])
        .arg(&a.device)
        .arg(&b.device)
        .status()
        .unwrap();
    assert!(status.success());
    let mount = Mount::new(&a.device.to_string_lossy(), &dir.path().join("pool"), &[]);
    let json = dir.path().join("pool.json");
    streamcap()
        .arg("run")
        .arg(&mount.point)
        .args(["--rw", "randread", "--size", "64M", "--jobs", "4", "--iodepth", "4", "--runtime", "1s"])
        .args(["--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let r = read_json(&json);
    let phase = &r["phases"][0];
    let (da, db) = (device(phase, &a.name()).expect("member a"), device(phase, &b.name()).expect("member b"));
    assert_eq!(da["role"], "btrfs pool member");
    assert_eq!(db["role"], "btrfs pool member");
    let served = da["activity"]["reads"].as_u64().unwrap() + db["activity"]["reads"].as_u64().unwrap();
    assert!(served > 0, "the members served the reads");
}

/// `streamcap run MOUNT --job JOB --buffered FLAGS`, which must succeed; its result.
fn run_buffered_job(mount: &Mount, job: &std::path::Path, flags: &[&str]) -> serde_json::Value {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("result.json");
    streamcap()
        .arg("run")
        .arg(&mount.point)
        .arg("--job")
        .arg(job)
        .args(["--buffered", "--quiet", "--json"])
        .arg(&json)
        .args(flags)
        .assert()
        .success();
    read_json(&json)
}

/// `--invalidate` and `--pre-read` on `run` (issue 10: fio's invalidate and pre_read as flags). On ext4 over a
/// loop device, whose reads are all ours: a buffered re-read after an invalidation reads from the device, with
/// `--invalidate=0` it comes from the page cache the first read filled, and with `--pre-read` even the first read
/// finds its data in RAM.
#[test]
fn invalidate_and_pre_read_decide_whether_buffered_reads_reach_the_device() {
    if !can_use_loop_devices("invalidate and pre-read") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    disk.mkfs_ext4();
    let mount = Mount::new(&disk.device.to_string_lossy(), &dir.path().join("mnt"), &[]);
    let job = dir.path().join("reread.toml");
    std::fs::write(
        &job,
        "[global]\nsize = \"32M\"\nbs = \"1M\"\nrw = \"read\"\n\n[[phase]]\nname = \"read\"\n\n[[phase]]\nname = \"re-read\"\n",
    )
    .unwrap();
    // Bytes the loop device read during each phase's measured time.
    let device_reads = |flags: &[&str]| -> Vec<u64> {
        let r = run_buffered_job(&mount, &job, flags);
        let phases = r["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2);
        for phase in phases {
            assert_eq!(phase["read"]["bytes"].as_u64(), Some(32 << 20), "each phase reads the file once");
        }
        phases.iter().map(|p| device(p, &disk.name()).unwrap()["activity"]["read_bytes"].as_u64().unwrap()).collect()
    };
    let invalidated = device_reads(&["--invalidate"]);
    assert!(invalidated[1] >= 16 << 20, "the re-read after an invalidation reaches the device: {invalidated:?}");
    let kept = device_reads(&["--invalidate=0"]);
    assert!(kept[0] >= 16 << 20, "the first read still comes from the device: {kept:?}");
    assert!(kept[1] < 4 << 20, "the re-read comes from the page cache: {kept:?}");
    let warm = device_reads(&["--pre-read"]);
    assert!(warm[0] < 4 << 20 && warm[1] < 4 << 20, "pre-read: both reads come from RAM: {warm:?}");
    eprintln!("device bytes read per phase: invalidate {invalidated:?}, invalidate=0 {kept:?}, pre-read {warm:?}");
}

/// fio's invalidate at each pass: a buffered phase that reads its file several times over (`io-size`) drops the
/// file's pages after each pass, so every pass reads from the device, as fio does; with `--invalidate=0` only the
/// first pass does and the others come from the page cache.
#[test]
fn buffered_passes_each_start_from_the_device_unless_invalidate_is_off() {
    if !can_use_loop_devices("invalidate at each pass") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    disk.mkfs_ext4();
    let mount = Mount::new(&disk.device.to_string_lossy(), &dir.path().join("mnt"), &[]);
    let job = dir.path().join("passes.toml");
    std::fs::write(
        &job,
        "[global]\nsize = \"16M\"\nbs = \"1M\"\nrw = \"read\"\nio-size = \"64M\"\n\n[[phase]]\nname = \"read\"\n",
    )
    .unwrap();
    let device_reads = |flags: &[&str]| -> u64 {
        let r = run_buffered_job(&mount, &job, flags);
        let phase = &r["phases"][0];
        assert_eq!(phase["read"]["bytes"].as_u64(), Some(64 << 20), "four passes over 16 MiB");
        device(phase, &disk.name()).unwrap()["activity"]["read_bytes"].as_u64().unwrap()
    };
    let each_pass = device_reads(&[]);
    assert!(each_pass >= 48 << 20, "each pass reads from the device: {each_pass} bytes");
    let once = device_reads(&["--invalidate=0"]);
    assert!(once < 24 << 20, "only the first pass reads from the device: {once} bytes");
    eprintln!("device bytes over four passes of 16 MiB: invalidate at each pass {each_pass}, invalidate=0 {once}");
}

/// Buffered 4 KiB random reads reach the device once each, as under fio: the kernel is told the pattern is random
/// (fio's fadvise_hint, so no read-ahead) and a pass visits each block once (fio's random map, so no re-reads from
/// the page cache). One pass over 16 MiB on ext4 over a loop device, whose reads are all ours, is then about
/// 4,096 device reads of 4 KiB. With `access-hint = false` the kernel reads ahead: fewer, larger device reads.
#[test]
fn buffered_random_reads_reach_the_device_once_each_without_read_ahead() {
    if !can_use_loop_devices("buffered random reads") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    disk.mkfs_ext4();
    let mount = Mount::new(&disk.device.to_string_lossy(), &dir.path().join("mnt"), &[]);
    let device_reads = |hint: bool| -> (u64, u64) {
        let job = dir.path().join(format!("random-{hint}.toml"));
        let text = format!(
            "[global]\nsize = \"16M\"\nbs = \"4k\"\nrw = \"randread\"\nio-size = \"16M\"\naccess-hint = {hint}\n\n\
             [[phase]]\nname = \"random\"\n"
        );
        std::fs::write(&job, text).unwrap();
        let r = run_buffered_job(&mount, &job, &[]);
        let phase = &r["phases"][0];
        assert_eq!(phase["read"]["bytes"].as_u64(), Some(16 << 20), "one pass over 16 MiB");
        let activity = &device(phase, &disk.name()).unwrap()["activity"];
        (activity["reads"].as_u64().unwrap(), activity["read_bytes"].as_u64().unwrap())
    };
    let (ops, bytes) = device_reads(true);
    eprintln!("advised: {ops} device reads, {bytes} bytes");
    assert!(ops >= 3_700, "each 4 KiB read reaches the device once: {ops} device reads for 4,096");
    assert!(bytes <= 18 << 20, "and nothing is read ahead: {bytes} bytes for 16 MiB");
    let (ops, bytes) = device_reads(false);
    eprintln!("not advised: {ops} device reads, {bytes} bytes");
    assert!(ops < 3_500, "without the hint the kernel reads ahead in larger reads: {ops} device reads");
}
