//! `fill-device` (fio fill_device): the data set is the target's free space less streamcap's 64 MiB of
//! headroom. fio's surface-scan example (write until full, then verify) runs on a small ext4 filesystem on a
//! loop device, and everything is removed afterwards. Over several devices (a fio file's jobs mapped with
//! `run --device`, issue 29), each device is written to its own end, as fio writes it.

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

/// Sectors written to the loop device `name` so far (/sys/block/NAME/stat, field 7).
fn sectors_written(name: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(6).unwrap().parse().unwrap()
}

/// Issue 29: fill_device over two devices of different sizes, as one job over both (`filename=/dev/sdb:/dev/sdc`)
/// and as two jobs on one each: every device is written to its own end and nothing more (the larger was written
/// only up to the smaller's size), and fio, given the same files with the devices' real names, writes the same.
#[test]
fn fill_device_over_several_devices_writes_each_to_its_own_end_as_fio_does() {
    if !common::can_use_loop_devices("fill_device over several devices") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = LoopDevice::new(&dir.path().join("b.img"), 32 << 20);
    let c = LoopDevice::new(&dir.path().join("c.img"), 48 << 20);
    let one_job = |b: &str, c: &str| format!("[fill]\nrw=write\nbs=1m\ndirect=1\nfill_device=1\nfilename={b}:{c}\n");
    let two_jobs = |b: &str, c: &str| {
        format!("[global]\nrw=write\nbs=1m\ndirect=1\nfill_device=1\n[b]\nfilename={b}\n[c]\nfilename={c}\n")
    };
    let written = |run: &dyn Fn()| {
        let before = (sectors_written(&b.name()), sectors_written(&c.name()));
        run();
        (sectors_written(&b.name()) - before.0, sectors_written(&c.name()) - before.1)
    };
    const MIB: u64 = (1 << 20) / 512;
    let (bn, cn) = (b.device.display().to_string(), c.device.display().to_string());
    let fio = std::process::Command::new("sh").args(["-c", "command -v fio"]).output().unwrap().status.success();
    for job in [one_job, two_jobs] {
        std::fs::write(dir.path().join("fill.fio"), job("/dev/sdb", "/dev/sdc")).unwrap();
        let ours = written(&|| {
            let out = streamcap()
                .current_dir(dir.path())
                .args(["run", "--job", "fill.fio", "--quiet", "--no-history", "--allow-device-writes"])
                .arg(format!("--device=/dev/sdb={bn}"))
                .arg(format!("--device=/dev/sdc={cn}"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        });
        assert_eq!(ours, (32 * MIB, 48 * MIB), "{}", job("b", "c"));
        for (device, size) in [(&b.device, 32u64 << 20), (&c.device, 48 << 20)] {
            use std::io::{Read, Seek};
            let mut last = vec![0u8; 1 << 20];
            let mut f = std::fs::File::open(device).unwrap();
            f.seek(std::io::SeekFrom::Start(size - (1 << 20))).unwrap();
            f.read_exact(&mut last).unwrap();
            assert!(last.iter().any(|&x| x != 0), "{} was not written to its end", device.display());
        }
        if !fio {
            common::skip("fill_device over several devices: the comparison with fio (fio is not installed)");
            continue;
        }
        std::fs::write(dir.path().join("fio.fio"), job(&bn, &cn)).unwrap();
        let theirs = written(&|| {
            let out = std::process::Command::new("fio").current_dir(dir.path()).arg("fio.fio").output().unwrap();
            assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
        });
        assert_eq!(theirs, ours, "fio wrote {theirs:?}, streamcap {ours:?}");
    }
}
