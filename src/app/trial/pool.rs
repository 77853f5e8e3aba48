//! Building one layout on the trial's devices with btrfs and taking it down again: `mkfs.btrfs -d P -m P`,
//! mount under a temporary directory, and on teardown unmount, forget the pool and `wipefs -a` every member so
//! the devices are left blank. It runs the system tools and nothing else; it never decides whether a device may
//! be written (the app checked every device before it got here).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::planning::Layout;

/// The btrfs layout a planner layout is built as, if trial can build it (mirror is btrfs raid1, and so on).
pub fn btrfs_layout(layout: Layout) -> Option<Layout> {
    use Layout::*;
    match layout {
        Single => Some(Single),
        Mirror2 | BtrfsRaid1 => Some(BtrfsRaid1),
        Mirror3 | BtrfsRaid1c3 => Some(BtrfsRaid1c3),
        Raid10 | BtrfsRaid10 => Some(BtrfsRaid10),
        Raid5 | BtrfsRaid5 => Some(BtrfsRaid5),
        Raid6 | BtrfsRaid6 => Some(BtrfsRaid6),
        Raidz1 | Raidz2 | Unraid | Unraid2 | Snapraid | Snapraid2 => None,
        SpacesSimple(_)
        | SpacesMirror(_)
        | SpacesMirror3(_)
        | SpacesParity(_)
        | SpacesParity2(_)
        | SpacesParityCache(_)
        | SpacesParity2Cache(_) => None,
    }
}

/// The `mkfs.btrfs` profile of a btrfs layout.
fn profile(layout: Layout) -> &'static str {
    match layout {
        Layout::BtrfsRaid1 => "raid1",
        Layout::BtrfsRaid1c3 => "raid1c3",
        Layout::BtrfsRaid10 => "raid10",
        Layout::BtrfsRaid5 => "raid5",
        Layout::BtrfsRaid6 => "raid6",
        _ => "single",
    }
}

/// The tools trial needs, checked before anything is touched.
pub fn check_tools() -> Result<()> {
    for tool in ["mkfs.btrfs", "btrfs", "wipefs", "mount", "umount"] {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output();
        if !found.is_ok_and(|o| o.status.success()) {
            bail!("{tool} is not installed: trial builds its layouts with btrfs-progs and util-linux; install them");
        }
    }
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !filesystems.contains("btrfs") && !Command::new("modprobe").arg("btrfs").status().is_ok_and(|s| s.success()) {
        bail!("this kernel has no btrfs (not in /proc/filesystems, and modprobe btrfs failed)");
    }
    Ok(())
}

/// One layout built over the devices. `teardown` (or drop) unmounts it and wipes every member.
pub struct Pool {
    pub mount_point: PathBuf,
    devices: Vec<PathBuf>,
    mounted: bool,
    /// The directory holding the mount point, removed once unmounted.
    dir: Option<PathBuf>,
}

fn run(cmd: &mut Command) -> Result<()> {
    let output = cmd.output().with_context(|| format!("cannot run {cmd:?}"))?;
    if !output.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(())
}

impl Pool {
    /// Makes the filesystem and mounts it. On failure whatever was written is wiped before the error returns.
    pub fn build(layout: Layout, devices: &[PathBuf]) -> Result<Pool> {
        let dir = std::env::temp_dir().join(format!("streamcap-trial-{}", crate::run::run_id()));
        let mount_point = dir.join("pool");
        // Made new, mode 0700, never an existing one: its name can be guessed, and in a world-writable /tmp
        // another user could otherwise have put a symbolic link there for the pool to be mounted through.
        let made = std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&dir);
        made.and_then(|()| {
            std::fs::create_dir(&mount_point).inspect_err(|_| {
                let _ = std::fs::remove_dir(&dir);
            })
        })
        .with_context(|| format!("cannot create the mount point {} (a new directory)", mount_point.display()))?;
        let mut pool = Pool { mount_point, devices: devices.to_vec(), mounted: false, dir: Some(dir) };
        let p = profile(layout);
        run(Command::new("mkfs.btrfs").args(["-q", "-d", p, "-m", p]).args(devices))
            .with_context(|| format!("cannot build btrfs {p}"))?;
        let options: Vec<String> = devices.iter().map(|d| format!("device={}", d.display())).collect();
        run(Command::new("mount")
            .args(["-t", "btrfs", "-o", &options.join(",")])
            .arg(&devices[0])
            .arg(&pool.mount_point))
        .with_context(|| format!("cannot mount the new btrfs {p}"))?;
        pool.mounted = true;
        Ok(pool)
    }

    /// Unmounts, forgets the pool and wipes every member's signatures. Every step is tried; the first failure
    /// is returned with what to do by hand.
    pub fn teardown(mut self) -> Result<()> {
        self.take_down()
    }

    fn take_down(&mut self) -> Result<()> {
        let mut first: Option<anyhow::Error> = None;
        if self.mounted {
            match unmount(&self.mount_point) {
                Ok(()) => self.mounted = false,
                Err(e) => first = Some(e),
            }
        }
        if !self.mounted
            && let Some(dir) = self.dir.take()
        {
            // Only empty directories: never a recursive removal next to where a pool was mounted.
            let _ = std::fs::remove_dir(&self.mount_point).and_then(|()| std::fs::remove_dir(dir));
        }
        if self.mounted {
            // Still mounted: wiping a mounted pool's members would break it under its user; say what to do.
            self.dir = None;
            let e = first.expect("set when the unmount failed");
            return Err(e.context(format!(
                "{} is still mounted: unmount it, then run wipefs -a on {}",
                self.mount_point.display(),
                self.device_list()
            )));
        }
        for device in &self.devices {
            let _ = Command::new("btrfs").args(["device", "scan", "--forget"]).arg(device).output();
            if let Err(e) = run(Command::new("wipefs").arg("-a").arg(device)) {
                first.get_or_insert(e.context(format!("cannot wipe {}: run wipefs -a on it", device.display())));
            }
        }
        self.devices.clear();
        first.map_or(Ok(()), Err)
    }

    fn device_list(&self) -> String {
        self.devices.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" ")
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if !self.devices.is_empty()
            && let Err(e) = self.take_down()
        {
            eprintln!("error: {e:#}");
        }
    }
}

/// `umount`, retried for a few seconds while the filesystem is busy (a worker thread closing its files).
fn unmount(point: &Path) -> Result<()> {
    let mut last = None;
    for _ in 0..20 {
        match run(Command::new("umount").arg(point)) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(last.expect("tried at least once"))
}

/// Wipes signatures from devices that carried none before (after a single-device measurement).
pub fn wipe(devices: &[PathBuf]) -> Result<()> {
    for device in devices {
        run(Command::new("wipefs").arg("-a").arg(device))
            .with_context(|| format!("cannot wipe {}: run wipefs -a on it", device.display()))?;
    }
    Ok(())
}
