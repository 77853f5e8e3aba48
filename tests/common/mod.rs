//! Helpers shared by the integration tests: the binary under test, and guards for loop devices, mounts and
//! cgroups that undo themselves in every outcome (a panicking test still detaches and unmounts).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod hosts;
pub mod netns;
pub mod nginx;
pub mod vdbench;

/// The streamcap binary, with an environment that does not change its output.
pub fn streamcap() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("streamcap").expect("the binary is built by cargo test");
    // Never the user's history database (tests of the history pass --history-db and remove this).
    cmd.env_remove("RUST_BACKTRACE").env_remove("RUST_LOG").env("STREAMCAP_NO_HISTORY", "1");
    cmd
}

pub fn streamcap_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("streamcap")
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Says why a test cannot run here and lets it return. Under `scripts/test` as root (which sets
/// STREAMCAP_TEST_STRICT=1 after installing every package the tests need) a skip is a failure instead: a test
/// that skips in CI is a test CI does not run, and nobody reads the captured output of a passing test.
pub fn skip(why: &str) {
    if std::env::var_os("STREAMCAP_TEST_STRICT").is_some_and(|v| v == "1") {
        panic!("this test would be skipped ({why}), but STREAMCAP_TEST_STRICT=1 says everything it needs is here");
    }
    eprintln!("SKIPPED {why}");
}

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// Returns false (after saying so loudly) when the test cannot run here.
pub fn can_use_loop_devices(test: &str) -> bool {
    if !is_root() {
        skip(&format!("{test}: needs root for loop devices"));
        return false;
    }
    for tool in ["losetup", "mkfs.ext4", "mount", "umount"] {
        if !have(tool) {
            skip(&format!("{test}: {tool} is not installed"));
            return false;
        }
    }
    true
}

fn run(cmd: &mut Command) -> String {
    let output = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(output.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A loop device over a sparse file; detached on drop.
pub struct LoopDevice {
    pub device: PathBuf,
    pub backing: PathBuf,
}

/// A temporary directory for loop devices' backing files: in memory (/dev/shm) where it exists. On the host's
/// shared virtual disk the members' I/O queued behind other tests' writes and write-back (beside three writers
/// the disk was 98 % busy and a throttled pool's reads got half their throttle), so the figures were the
/// neighbours' load and not the throttle's. Elsewhere, the system's temporary directory.
pub fn backing_dir() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").expect("a directory under /dev/shm"),
        false => tempfile::tempdir().expect("a temporary directory"),
    }
}

impl LoopDevice {
    pub fn new(backing: &Path, size: u64) -> LoopDevice {
        std::fs::File::create(backing).and_then(|f| f.set_len(size)).expect("create the backing file");
        let device = run(Command::new("losetup").args(["-f", "--show"]).arg(backing));
        LoopDevice { device: PathBuf::from(device), backing: backing.to_path_buf() }
    }

    /// A loop device that reaches its backing file with direct I/O (`losetup --direct-io=on`), so its reads are
    /// the backing disk's and not the page cache's (streamcap treats a cached loop device as memory).
    pub fn new_direct(backing: &Path, size: u64) -> LoopDevice {
        std::fs::File::create(backing).and_then(|f| f.set_len(size)).expect("create the backing file");
        let device = run(Command::new("losetup").args(["-f", "--show", "--direct-io=on"]).arg(backing));
        LoopDevice { device: PathBuf::from(device), backing: backing.to_path_buf() }
    }

    pub fn name(&self) -> String {
        self.device.file_name().unwrap().to_string_lossy().to_string()
    }

    pub fn mkfs_ext4(&self) {
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&self.device));
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // btrfs remembers scanned members; forget this one so a later user of the same loop number starts clean.
        let _ = Command::new("btrfs").args(["device", "scan", "--forget"]).arg(&self.device).output();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

/// A mount; unmounted on drop (lazily if busy, so a failing test never leaves it behind).
pub struct Mount {
    pub point: PathBuf,
}

impl Mount {
    pub fn new(source: &str, point: &Path, args: &[&str]) -> Mount {
        std::fs::create_dir_all(point).expect("create the mount point");
        run(Command::new("mount").args(args).arg(source).arg(point));
        Mount { point: point.to_path_buf() }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.point).status().is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.point).status();
        }
    }
}

/// Everything under `dir`, for "nothing left behind" checks.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    names.sort();
    names
}

/// Every path below `dir`, at any depth, for "nothing left behind" checks of whole trees.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("valid JSON")
}

/// The cgroup v1 blkio hierarchy, where loop devices are throttled into emulated drives (../shared/CRATES.md).
pub const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// Returns false (after saying so loudly) when cgroup v1 blkio throttling is missing.
pub fn can_throttle(test: &str) -> bool {
    let ok = Path::new(BLKIO).join("blkio.throttle.read_iops_device").exists();
    if !ok {
        skip(&format!("{test}: cgroup v1 blkio throttling is not available"));
    }
    ok
}

/// A blkio cgroup with read limits on some devices; removed on drop (its processes have exited by then).
pub struct Cgroup(pub PathBuf);

impl Cgroup {
    /// A fresh group; tests of one binary run in parallel, so each group also gets a number of its own.
    pub fn new(name: &str) -> Cgroup {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = Path::new(BLKIO).join(format!("{name}-{}-{n}", std::process::id()));
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        Cgroup(path)
    }

    /// Limits reads from `device` issued by the group's processes: `file` is `read_iops_device` or
    /// `read_bps_device`.
    pub fn limit(&self, device: &LoopDevice, file: &str, value: u64) {
        let numbers = std::fs::read_to_string(format!("/sys/block/{}/dev", device.name())).unwrap();
        let path = self.0.join(format!("blkio.throttle.{file}"));
        std::fs::write(&path, format!("{} {value}", numbers.trim()))
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Runs streamcap with `args` inside the group; asserts it succeeded.
    pub fn run_streamcap(&self, args: &str) {
        let script =
            format!("echo $$ > {}/cgroup.procs && exec {} {args}", self.0.display(), streamcap_path().display());
        let status = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env_remove("RUST_BACKTRACE")
            .env("STREAMCAP_NO_HISTORY", "1")
            .status()
            .unwrap();
        assert!(status.success(), "{script} failed: {status}");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// ext4 on a fresh loop device, mounted, with a blkio group limiting its reads (`file` = `value`): the emulated
/// disk of the throttled tests. Dropped group first, then the mount, the device and the temporary directory.
pub struct ThrottledExt4 {
    pub group: Cgroup,
    pub mount: Mount,
    pub device: LoopDevice,
    pub dir: tempfile::TempDir,
}

impl ThrottledExt4 {
    /// `None` (said loudly) where loop devices or cgroup v1 blkio are missing.
    pub fn new(test: &str, size: u64, group: &str, file: &str, value: u64) -> Option<ThrottledExt4> {
        if !can_use_loop_devices(test) || !can_throttle(test) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let device = LoopDevice::new(&dir.path().join("disk.img"), size);
        device.mkfs_ext4();
        let mount = Mount::new(device.device.to_str().unwrap(), &dir.path().join("mnt"), &[]);
        let group = Cgroup::new(group);
        group.limit(&device, file, value);
        Some(ThrottledExt4 { group, mount, device, dir })
    }
}

/// The cgroup v1 memory hierarchy, for runs under a smaller RAM than the host's.
pub const MEMORY: &str = "/sys/fs/cgroup/memory";

/// A cgroup v1 memory group with a limit; removed on drop (its processes have exited by then).
pub struct MemoryCgroup(pub PathBuf);

impl MemoryCgroup {
    /// A fresh group limited to `limit` bytes, or `None` (said loudly) when v1 memory cgroups are missing.
    pub fn new(test: &str, name: &str, limit: u64) -> Option<MemoryCgroup> {
        if !is_root() || !Path::new(MEMORY).join("memory.limit_in_bytes").exists() {
            skip(&format!("{test}: needs root and the cgroup v1 memory controller at {MEMORY}"));
            return None;
        }
        let path = Path::new(MEMORY).join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        let group = MemoryCgroup(path);
        let file = group.0.join("memory.limit_in_bytes");
        std::fs::write(&file, limit.to_string()).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
        Some(group)
    }

    /// Runs streamcap with `args` inside the group and returns its output.
    pub fn run_streamcap(&self, args: &[&str]) -> std::process::Output {
        let script = format!("echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"", self.0.display());
        Command::new("sh")
            .arg("-c")
            .arg(&script)
            .arg(streamcap_path())
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .env("STREAMCAP_NO_HISTORY", "1")
            .output()
            .expect("run sh")
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Whether `test` can build a btrfs pool over throttled loop devices (loop devices, a blkio throttle, btrfs),
/// skipping it with the reason when not.
pub fn can_build_throttled_btrfs(test: &str) -> bool {
    can_build_btrfs(test) && can_throttle(test)
}

/// Whether `test` can build a btrfs filesystem or pool over loop devices (loop devices, btrfs), skipping it with
/// the reason when not.
pub fn can_build_btrfs(test: &str) -> bool {
    if !can_use_loop_devices(test) {
        return false;
    }
    if !have_btrfs() {
        skip(&format!("{test}: btrfs (kernel module or btrfs-progs) is not available"));
        return false;
    }
    true
}

/// Whether btrfs (the kernel's and btrfs-progs) is here to build pools.
pub fn have_btrfs() -> bool {
    let tools = Command::new("sh").arg("-c").arg("command -v mkfs.btrfs && command -v btrfs").output();
    let module = std::fs::read_to_string("/proc/filesystems").is_ok_and(|f| f.contains("btrfs"));
    tools.is_ok_and(|o| o.status.success()) && module
}

/// Root-group blkio limits on some loop devices; every limit is reset to 0 on drop. The root group, because
/// btrfs issues parity and checksummed writes from kernel threads that a child group would not throttle.
pub struct RootThrottle {
    numbers: Vec<String>,
}

const LIMIT_FILES: [&str; 4] = ["read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"];

impl RootThrottle {
    /// `limits`: read bytes/s, write bytes/s, read requests/s, write requests/s, per device.
    pub fn new(devices: &[LoopDevice], limits: [u64; 4]) -> RootThrottle {
        let numbers: Vec<String> = devices
            .iter()
            .map(|d| std::fs::read_to_string(format!("/sys/block/{}/dev", d.name())).unwrap().trim().to_string())
            .collect();
        let throttle = RootThrottle { numbers };
        for (file, value) in LIMIT_FILES.iter().zip(limits) {
            throttle.write(file, value);
        }
        throttle
    }

    fn write(&self, file: &str, value: u64) {
        for number in &self.numbers {
            let path = Path::new(BLKIO).join(format!("blkio.throttle.{file}"));
            std::fs::write(&path, format!("{number} {value}")).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

impl Drop for RootThrottle {
    fn drop(&mut self) {
        for file in LIMIT_FILES {
            for number in &self.numbers {
                let _ = std::fs::write(Path::new(BLKIO).join(format!("blkio.throttle.{file}")), format!("{number} 0"));
            }
        }
    }
}

/// Builds a btrfs pool of `profile` (data and metadata: raid1, raid10, …) over `members`; the caller mounts the
/// first member.
pub fn mkfs_btrfs(profile: &str, members: &[LoopDevice]) {
    let mut cmd = Command::new("mkfs.btrfs");
    cmd.args(["-f", "-q", "-d", profile, "-m", profile]);
    cmd.args(members.iter().map(|m| &m.device));
    run(&mut cmd);
}

/// Reads counted by the blkio throttle on `device` since boot, from every group (the root group's `_recursive`
/// files): (requests, bytes). The throttle counts each bio it charges, after a large one is split to the
/// device's limits and before neighbours are merged, so bytes ÷ requests is the request size its IOPS limit
/// sees, which /proc/diskstats (merged requests) does not show.
pub fn throttled_reads(device: &LoopDevice) -> (u64, u64) {
    let numbers = std::fs::read_to_string(format!("/sys/block/{}/dev", device.name())).unwrap_or_default();
    let numbers = numbers.trim();
    let read = |file: &str| -> u64 {
        let text = std::fs::read_to_string(Path::new(BLKIO).join(file)).unwrap_or_default();
        text.lines()
            .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [device, "Read", count] if device == numbers => count.parse::<u64>().ok(),
                _ => None,
            })
            .sum()
    };
    (read("blkio.throttle.io_serviced_recursive"), read("blkio.throttle.io_service_bytes_recursive"))
}

/// A drive catalogue with one entry, "throttled-loop", describing a loop device of `capacity` bytes under a
/// `RootThrottle` of `limits` (as `RootThrottle::new`).
pub fn throttled_catalogue(capacity: u64, limits: [u64; 4]) -> String {
    let [read, write, read_iops, write_iops] = limits;
    format!(
        "[[drive]]\nname = \"throttled-loop\"\nproduct = \"loop device throttled by cgroup blkio\"\n\
         capacity = {capacity}\nprice = \"10 USD\"\nread = \"{read}B/s\"\nwrite = \"{write}B/s\"\n\
         rotational = false\nrandom_read_iops = {read_iops}\nrandom_write_iops = {write_iops}\n\
         # a loop device takes 128 segments of 4 KiB per request\nmax_request = \"512k\"\n\
         # the throttle counts every bio before the block layer merges neighbours\nmerges = false\n"
    )
}

/// `mpirun` with the flags a root user on one host needs; `None` (after saying SKIPPED) when it is missing.
pub fn mpirun(test: &str, ranks: u32) -> Option<Command> {
    let found = Command::new("sh").args(["-c", "command -v mpirun"]).output().is_ok_and(|o| o.status.success());
    if !found {
        skip(&format!("{test}: mpirun is not installed (Debian: openmpi-bin)"));
        return None;
    }
    let mut cmd = Command::new("mpirun");
    // `plm isolated` starts every rank on this host without an ssh or rsh agent, which a fresh machine may lack.
    cmd.args(["--allow-run-as-root", "--oversubscribe", "--mca", "plm", "isolated", "-np", &ranks.to_string()]);
    cmd.env_remove("RUST_BACKTRACE");
    cmd.env("STREAMCAP_NO_HISTORY", "1");
    Some(cmd)
}

/// A finished command's stdout and stderr as text.
pub fn output_text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `streamcap run DIR --job FILE --dry-run` of a job written to `dir/file` must be refused with exit 2 and a
/// message containing `expected`.
pub fn refused_dry_run(dir: &Path, file: &str, text: &str, expected: &str) {
    let job = dir.join(file);
    std::fs::write(&job, text).unwrap();
    let out = streamcap().arg("run").arg(dir).args(["--job", job.to_str().unwrap(), "--dry-run"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
    assert!(stderr.contains(expected), "{file}: expected '{expected}' in: {stderr}");
}

/// Sends SIGINT to `child`, as Ctrl-C on its terminal would, and waits at most `limit` for it to end.
pub fn interrupt_and_wait(child: &mut std::process::Child, limit: std::time::Duration) -> std::process::ExitStatus {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child has a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("send SIGINT");
    let give_up = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        assert!(std::time::Instant::now() < give_up, "the process did not stop after Ctrl-C");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Waits until `path` exists (a run's JSON is first written when its phase starts) while `child` still runs;
/// fails the test if the child ends first or `limit` passes.
pub fn wait_for_file_while_running(child: &mut std::process::Child, path: &Path, limit: std::time::Duration) {
    let give_up = std::time::Instant::now() + limit;
    while !path.exists() {
        assert!(child.try_wait().expect("wait for the child").is_none(), "the run ended before the phase started");
        assert!(std::time::Instant::now() < give_up, "the phase never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A child process (a run, or mpirun and so its ranks) that is killed and reaped when the test ends, whatever
/// happens in it.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
