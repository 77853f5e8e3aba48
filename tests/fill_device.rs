//! `fill-device` (fio fill_device): the data set is the target's free space less streamcap's 64 MiB of
//! headroom. fio's surface-scan example (write until full, then verify) runs on a small ext4 filesystem on a
//! loop device, and everything is removed afterwards.

mod common;

use std::path::Path;

use common::{LoopDevice, Mount, streamcap};

/// Free bytes of the filesystem at `path`, for an unprivileged writer (as streamcap counts them).
fn free_bytes(path: &Path) -> u64 {
    let out = std::process::Command::new("df").args(["-B1", "--output=avail"]).arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn fio_s_surface_scan_fills_the_filesystem_less_the_headroom_and_verifies_it() {
    let test = "fio_s_surface_scan_fills_the_filesystem_less_the_headroom_and_verifies_it";
    let example = Path::new("/usr/share/doc/fio/examples/surface-scan.fio");
    if !common::can_use_loop_devices(test) {
        return;
    }
    if !example.is_file() {
        common::skip(&format!("{test}: {} is missing (Debian: fio-examples)", example.display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let device = LoopDevice::new(&dir.path().join("fs.img"), 256 << 20);
    device.mkfs_ext4();
    let point = dir.path().join("fs");
    let mount = Mount::new(device.device.to_str().unwrap(), &point, &[]);
    let free = free_bytes(&mount.point);
    let json = dir.path().join("r.json");
    let out = streamcap()
        .current_dir(dir.path())
        .arg("run")
        .arg(&mount.point)
        .args(["--job", example.to_str().unwrap(), "--quiet", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result = common::read_json(&json);
    let expected = (free - (64 << 20)) / (1 << 20) * (1 << 20);
    let phases = result["phases"].as_array().unwrap();
    assert_eq!(phases[0]["data_set_bytes"].as_u64(), Some(expected), "free {free}");
    assert_eq!(phases[0]["write"]["bytes"].as_u64(), Some(expected), "the write phase wrote the whole data set");
    assert_eq!(phases[1]["read"]["bytes"].as_u64(), Some(expected), "the verify phase read it all back");
    // Every 64 KiB block was checked twice (the verify phase, then the read-back after the last phase).
    assert_eq!(result["verify"]["bad_count"].as_u64(), Some(0), "{}", result["verify"]);
    assert_eq!(result["verify"]["blocks_checked"].as_u64(), Some(2 * expected / 65536), "{}", result["verify"]);
    assert_eq!(result["verify"]["pass_complete"].as_bool(), Some(true));
    assert_eq!(common::entries(&mount.point), ["lost+found"], "the data file is removed");
    assert!(free_bytes(&mount.point) >= free - (1 << 20), "the space is given back");
}

#[test]
fn fill_device_where_there_is_nothing_to_fill_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("media.mkv");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let job = dir.path().join("fill.toml");
    std::fs::write(&job, "[[phase]]\nrw = \"write\"\nfill-device = true\n").unwrap();
    let out = streamcap().arg("run").arg(&file).args(["--job", job.to_str().unwrap(), "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fill-device fills a filesystem or a block device"));
    // A size said wins over filling.
    let out = streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--job", job.to_str().unwrap(), "--size", "8m", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("data set 8 MiB"));
}
