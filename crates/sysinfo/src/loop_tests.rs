//! Root-only tests on real loop devices: ext4 on a whole loop device, ext4 on a partition of one, and a btrfs
//! raid1 pool over two. They check the topology walk, the safety checks and diskstats against what the kernel
//! really builds, which no fixed text can.
//!
//! Each test skips itself loudly when it is not root or a tool is missing, writes only under its temporary
//! directory, and undoes every mount and loop device in every outcome (the guards' `Drop` runs on panic too).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::units::{Bytes, MIB};

use super::topology::{ROLE_BTRFS_MEMBER, ROLE_FILESYSTEM, ROLE_LOOP_BACKING, ROLE_PARTITION_DISK};
use super::*;

const IMAGE_SIZE: u64 = 256 * MIB;

fn have_tool(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).any(|dir| dir.join(name).is_file())
}

/// Whether the test can run here; says why not on stderr.
fn can_run(test: &str, tools: &[&str]) -> bool {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED {test}: needs root to attach loop devices and mount");
        return false;
    }
    if !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIPPED {test}: no /dev/loop-control (loop driver missing)");
        return false;
    }
    if let Some(missing) = tools.iter().find(|t| !have_tool(t)) {
        eprintln!("SKIPPED {test}: `{missing}` is not installed");
        return false;
    }
    true
}

/// Runs a command and returns its stdout; panics with its stderr on failure (tests only).
fn run(program: &str, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sparse_image(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).and_then(|f| f.set_len(IMAGE_SIZE)).expect("create sparse image");
    path
}

/// An attached loop device, detached on drop.
struct LoopDevice {
    path: PathBuf,
}

impl LoopDevice {
    fn attach(image: &Path, partscan: bool) -> LoopDevice {
        let mut args: Vec<&std::ffi::OsStr> = vec!["-f".as_ref(), "--show".as_ref()];
        if partscan {
            args.push("-P".as_ref());
        }
        args.push(image.as_os_str());
        LoopDevice { path: PathBuf::from(run("losetup", &args).trim()) }
    }

    fn name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // btrfs remembers scanned members; forget this one so a later user of the same loop number starts clean.
        let _ = Command::new("btrfs").args(["device", "scan", "--forget"]).arg(&self.path).output();
        match Command::new("losetup").arg("-d").arg(&self.path).output() {
            Ok(out) if out.status.success() => {}
            other => eprintln!("WARNING: could not detach {}: {other:?}", self.path.display()),
        }
    }
}

/// A mount, unmounted on drop (lazily if a plain unmount fails, so the loop device can still be detached).
struct Mount {
    dir: PathBuf,
}

impl Mount {
    fn new(device: &Path, dir: &Path) -> Mount {
        std::fs::create_dir_all(dir).expect("create mount point");
        run("mount", &[device.as_os_str(), dir.as_os_str()]);
        Mount { dir: std::fs::canonicalize(dir).expect("canonical mount point") }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.dir).output().is_ok_and(|o| o.status.success());
        if !ok {
            let lazy = Command::new("umount").arg("-l").arg(&self.dir).output();
            eprintln!("WARNING: plain umount of {} failed; lazy umount: {lazy:?}", self.dir.display());
        }
    }
}

fn names(devices: &[BlockDevice]) -> Vec<String> {
    devices.iter().map(|d| d.name.clone()).collect()
}

/// The devices beneath the temp dir must all appear beneath the loop device, the first as its backing store.
fn assert_backing_listed(beneath: &[BlockDevice], under_image: &[BlockDevice]) {
    let first = under_image.first().expect("the temp dir lives on a block device here");
    let found = beneath.iter().find(|d| d.name == first.name).unwrap_or_else(|| panic!("{first:?} in {beneath:?}"));
    assert!(found.role.starts_with(ROLE_LOOP_BACKING), "{found:?}");
    for dev in under_image {
        assert!(beneath.iter().any(|d| d.name == dev.name), "{} missing from {:?}", dev.name, names(beneath));
    }
}

#[test]
fn ext4_on_a_loop_device_is_seen_through_every_layer() {
    if !can_run("ext4_on_a_loop_device", &["losetup", "mkfs.ext4", "mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let image = sparse_image(dir.path(), "disk.img");
    let under_image = devices_beneath(dir.path());
    if under_image.is_empty() {
        eprintln!("SKIPPED ext4_on_a_loop_device: the temp dir is on a filesystem without a block device");
        return;
    }
    let lo = LoopDevice::attach(&image, false);

    let blank = inspect_device(&lo.path).expect("inspect blank loop device");
    assert_eq!(blank.signature, None, "{blank:?}");
    assert!(blank.mounted_at.is_empty() && blank.in_use_by.is_empty() && blank.hazards().is_empty(), "{blank:?}");
    assert_eq!((blank.device.kind, blank.device.size), (DeviceKind::Loop, Bytes(IMAGE_SIZE)));
    assert_eq!(blank.device.backing_file, Some(std::fs::canonicalize(&image).expect("canonical image")));

    run("mkfs.ext4", &["-q".as_ref(), lo.path.as_os_str()]);
    let formatted = inspect_device(&lo.path).expect("inspect formatted loop device");
    assert_eq!(formatted.signature.as_deref(), Some("ext4 filesystem"));

    let mount = Mount::new(&lo.path, &dir.path().join("mnt"));
    let beneath = devices_beneath(&mount.dir);
    assert_eq!(beneath[0].name, lo.name(), "{beneath:?}");
    assert_eq!(beneath[0].role, ROLE_FILESYSTEM);
    assert_backing_listed(&beneath, &under_image);

    let mounted = inspect_device(&lo.path).expect("inspect mounted loop device");
    assert_eq!(mounted.mounted_at, vec![mount.dir.clone()]);
    assert!(mounted.hazards().iter().any(|h| h.starts_with("mounted at")), "{mounted:?}");

    let fs = filesystem_of(&mount.dir).expect("filesystem facts");
    assert_eq!((fs.fs_type.as_str(), fs.mount_point.as_path()), ("ext4", mount.dir.as_path()));
    assert_eq!(fs.source, lo.path.to_string_lossy());
    assert!(fs.total > Bytes(200 * MIB) && fs.total <= Bytes(IMAGE_SIZE) && fs.free <= fs.total, "{fs:?}");

    // Writing and syncing a file must show up as writes on the loop device in /proc/diskstats.
    let before = read_diskstats().expect("diskstats");
    let file = mount.dir.join("data");
    let data = vec![0x5au8; 4 * MIB as usize];
    std::fs::write(&file, &data).and_then(|()| std::fs::File::open(&file)?.sync_all()).expect("write data");
    let after = read_diskstats().expect("diskstats");
    let pick = |s: &[DiskStat]| s.iter().find(|d| d.name == lo.name()).cloned().expect("loop device in diskstats");
    let activity = DiskActivity::between(&pick(&before), &pick(&after), Duration::from_secs(1));
    assert!(activity.write_bytes >= Bytes(4 * MIB), "{activity:?}");

    match direct_io_alignment(&file) {
        Some(align) => assert!(align.offset >= 512 && align.mem.is_power_of_two(), "{align:?}"),
        None => eprintln!("note: this kernel reports no STATX_DIOALIGN for ext4 files"),
    }
}

#[test]
fn a_partition_lists_its_disk_and_makes_the_disk_busy() {
    if !can_run("a_partition_lists_its_disk", &["losetup", "mkfs.ext4", "mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let image = sparse_image(dir.path(), "disk.img");
    // A DOS partition table with one Linux partition from 1 MiB to the end.
    let mut mbr = [0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&((IMAGE_SIZE / 512 - 2048) as u32).to_le_bytes());
    mbr[510..].copy_from_slice(&[0x55, 0xaa]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &mbr, 0))
        .expect("write MBR");
    let under_image = devices_beneath(dir.path());
    let lo = LoopDevice::attach(&image, true);
    let part_name = format!("{}p1", lo.name());
    let part_path = PathBuf::from("/dev").join(&part_name);
    // Kernels built without the DOS partition parser (this VM's) ignore the table; partx reads it in user
    // space and adds the partition with the BLKPG ioctl instead.
    if !part_path.exists() && have_tool("partx") {
        run("partx", &["-a".as_ref(), lo.path.as_os_str()]);
    }
    for _ in 0..100 {
        if part_path.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !part_path.exists() {
        eprintln!("SKIPPED a_partition_lists_its_disk: no {} appeared (no partition support)", part_path.display());
        return;
    }

    let disk = BlockDevice::from_name(&lo.name()).expect("loop disk");
    assert_eq!(disk.partitions(), vec![part_name.clone()]);
    let part = BlockDevice::from_name(&part_name).expect("partition");
    assert_eq!((part.kind, part.parent.as_deref()), (DeviceKind::Partition, Some(lo.name().as_str())));
    assert_eq!(part.size, Bytes(IMAGE_SIZE - MIB));
    assert_eq!(part.scheduler, disk.scheduler, "a partition reports its disk's scheduler");
    let table = inspect_device(&lo.path).expect("inspect partitioned disk");
    assert_eq!(table.signature.as_deref(), Some("MBR (DOS) partition table"));

    run("mkfs.ext4", &["-q".as_ref(), part_path.as_os_str()]);
    let mount = Mount::new(&part_path, &dir.path().join("mnt"));
    let beneath = devices_beneath(&mount.dir);
    assert_eq!(names(&beneath[..2]), vec![part_name.clone(), lo.name()]);
    assert_eq!((beneath[0].role.as_str(), beneath[1].role.as_str()), (ROLE_FILESYSTEM, ROLE_PARTITION_DISK));
    if !under_image.is_empty() {
        assert_backing_listed(&beneath, &under_image);
    }
    let busy = inspect_device(&lo.path).expect("inspect disk with mounted partition");
    assert_eq!(busy.mounted_at, vec![mount.dir.clone()], "the disk is busy through its partition");
    let part_safety = inspect_device(&part_path).expect("inspect partition");
    assert_eq!(part_safety.signature.as_deref(), Some("ext4 filesystem"));
}

#[test]
fn a_btrfs_raid1_pool_lists_every_member() {
    if !can_run("a_btrfs_raid1_pool", &["losetup", "mkfs.btrfs", "mount", "umount"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (image1, image2) = (sparse_image(dir.path(), "m1.img"), sparse_image(dir.path(), "m2.img"));
    let under_image = devices_beneath(dir.path());
    let l1 = LoopDevice::attach(&image1, false);
    let l2 = LoopDevice::attach(&image2, false);
    let args = ["-q", "-f", "-d", "raid1", "-m", "raid1"];
    let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    argv.extend([l1.path.as_os_str(), l2.path.as_os_str()]);
    run("mkfs.btrfs", &argv);

    let unmounted = inspect_device(&l2.path).expect("inspect unmounted member");
    assert_eq!(unmounted.signature.as_deref(), Some("btrfs filesystem"));
    let pool_entry = unmounted.in_use_by.iter().find(|u| u.starts_with("btrfs pool ")).expect("pool named");
    assert!(pool_entry.ends_with("(not mounted)"), "{pool_entry}");
    let uuid = pool_entry.trim_start_matches("btrfs pool ").trim_end_matches(" (not mounted)").to_string();

    let mount = Mount::new(&l1.path, &dir.path().join("mnt"));
    let beneath = devices_beneath(&mount.dir);
    let mut members: Vec<String> = names(&beneath[..2]);
    members.sort();
    let mut want = vec![l1.name(), l2.name()];
    want.sort();
    assert_eq!(members, want, "both members first: {beneath:?}");
    assert!(beneath[..2].iter().all(|d| d.role == ROLE_BTRFS_MEMBER), "{beneath:?}");
    if !under_image.is_empty() {
        assert_backing_listed(&beneath, &under_image);
    }

    // Mounted through l1, but l2 is just as much in use.
    let member = inspect_device(&l2.path).expect("inspect mounted member");
    assert_eq!(member.mounted_at, vec![mount.dir.clone()]);
    assert!(member.in_use_by.contains(&format!("btrfs pool {uuid} (mounted)")), "{member:?}");
    assert_eq!(filesystem_of(&mount.dir).expect("btrfs facts").fs_type, "btrfs");
}

#[test]
fn blkid_names_what_the_built_in_probe_does_not_know() {
    if !can_run("blkid_names_what_the_probe_does_not_know", &["losetup", "mkfs.minix", "blkid"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let image = sparse_image(dir.path(), "minix.img");
    let lo = LoopDevice::attach(&image, false);
    run("mkfs.minix", &[lo.path.as_os_str()]);
    let mut head = vec![0u8; safety::PROBE_LEN];
    let n = std::fs::File::open(&lo.path)
        .and_then(|f| std::os::unix::fs::FileExt::read_at(&f, &mut head, 0))
        .expect("read loop device");
    assert_eq!(probe_signature(&head[..n]), None, "minix is not in the built-in probe");
    let minix = inspect_device(&lo.path).expect("inspect minix loop device");
    assert_eq!(minix.signature.as_deref(), Some("minix (reported by blkid)"));
}

#[test]
fn a_loop_alias_is_the_same_file_at_its_offset_under_any_name() {
    // Regression (issue 25, item 3): a second loop device over a mounted image was judged by its own name only.
    if !can_run("a_loop_alias_is_the_same_file", &["losetup", "mkfs.ext4", "mount", "umount"]) {
        return;
    }
    use super::topology::{Store, extents_of, first_overlap};
    let dir = tempfile::tempdir().expect("tempdir");
    let image = sparse_image(dir.path(), "fs.img");
    let first = LoopDevice::attach(&image, false);
    let args: Vec<&std::ffi::OsStr> = vec!["-f".as_ref(), "--show".as_ref(), "-o".as_ref(), "1M".as_ref()];
    let alias = LoopDevice { path: PathBuf::from(run("losetup", &[&args[..], &[image.as_os_str()]].concat()).trim()) };
    // Through a hard link that is then removed: the kernel still knows the inode; the name in sysfs is gone.
    let link = dir.path().join("link.img");
    std::fs::hard_link(&image, &link).expect("hard link");
    let linked = LoopDevice::attach(&link, false);
    std::fs::remove_file(&link).expect("remove the link");

    let extents = |lo: &LoopDevice| extents_of(&BlockDevice::from_path(&lo.path).expect("a loop device"));
    let file = |lo: &LoopDevice| extents(lo).into_iter().find(|e| matches!(e.store, Store::File { .. }));
    let (whole, shifted, again) = (file(&first).unwrap(), file(&alias).unwrap(), file(&linked).unwrap());
    assert_eq!((whole.start, whole.end), (0, IMAGE_SIZE));
    assert_eq!((shifted.start, shifted.end), (MIB, IMAGE_SIZE), "the alias's bytes start 1 MiB into the file");
    assert_eq!((whole.store, again.store), (shifted.store, shifted.store), "one file under every name");
    assert!(first_overlap(&extents(&alias), &extents(&first)).is_some());

    let unused = inspect_device(&alias.path).expect("inspect the alias");
    assert!(unused.overlaps.is_empty(), "nothing is mounted yet: {unused:?}");
    run("mkfs.ext4", &["-q".as_ref(), first.path.as_os_str()]);
    let _mount = Mount::new(&first.path, &dir.path().join("mnt"));
    for lo in [&alias, &linked] {
        let safety = inspect_device(&lo.path).expect("inspect an alias of a mounted image");
        assert_eq!(safety.overlaps.len(), 1, "{safety:?}");
        assert!(
            safety.overlaps[0].starts_with(&format!("the same bytes as {} (mounted at", first.name())),
            "{safety:?}"
        );
        assert!(safety.mounted_at.is_empty() && safety.in_use_by.is_empty(), "by its own name it is unused");
    }
}
