//! `streams --max` on an emulated disk: a loop device (ext4) throttled in read IOPS with cgroup v1 blkio, as
//! ../shared/CRATES.md describes. The capacity found must lie within ±15 % of the IOPS bound that streamcap
//! computes from a random-read run at the chunk size on the same device (the estimate, docs/streams.md).
//! Root only; skipped loudly where cgroup v1 blkio or loop devices are missing. The group, the mount and the
//! loop device are removed in every outcome (guards, dropped in reverse order).

mod common;

use std::path::PathBuf;

use common::{LoopDevice, Mount, can_use_loop_devices, read_json, streamcap_path};

struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn max_finds_the_iops_bound_of_a_throttled_disk() {
    if !can_use_loop_devices("streams on a throttled disk") {
        return;
    }
    let blkio = PathBuf::from("/sys/fs/cgroup/blkio");
    if !blkio.join("blkio.throttle.read_iops_device").exists() {
        eprintln!("SKIPPED streams on a throttled disk: cgroup v1 blkio throttling is not available");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    device.mkfs_ext4();
    let point = dir.path().join("mnt");
    std::fs::create_dir(&point).unwrap();
    let mount = Mount::new(device.device.to_str().unwrap(), &point, &[]);
    let group = Cgroup(blkio.join(format!("streamcap-streams-{}", std::process::id())));
    std::fs::create_dir(&group.0).unwrap();
    let numbers = std::fs::read_to_string(format!("/sys/block/{}/dev", device.name())).unwrap();
    // 40 reads/s; 1080p (8 Mbit/s) in 1 MiB chunks needs 0.95 chunks/s per stream: about 40 streams.
    std::fs::write(group.0.join("blkio.throttle.read_iops_device"), format!("{} 40", numbers.trim())).unwrap();

    let json = dir.path().join("max.json");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} streams {} --bitrate 1080p --max --duration 10s --ramp 2s \
         --buffer 4s --prebuffer 1s --media-length 60s --estimate-time 3s --quiet --json {}",
        group.0.display(),
        streamcap_path().display(),
        mount.point.display(),
        json.display()
    );
    let status = std::process::Command::new("sh").arg("-c").arg(&script).env_remove("RUST_BACKTRACE").status().unwrap();
    assert!(status.success());

    let streams = &read_json(&json)["streams"];
    let found = streams["capacity"]["streams"].as_f64().unwrap();
    let bound = streams["estimate"]["iops_bound"].as_f64().unwrap();
    eprintln!("capacity {found} against an IOPS bound of {bound:.1}: {}", streams["capacity"]["words"]);
    assert!((20.0..=100.0).contains(&bound), "the limits put the bound between 20 and 100: {bound}");
    assert!((found - bound).abs() <= 0.15 * bound, "capacity {found} is within 15 % of the bound {bound:.1}");
}
