//! `streamcap plan` against measurements on real btrfs pools (raid1 of 2 and of 4, raid10 of 4, raid5 of 3) built over
//! loop devices that cgroup v1 blkio throttles into emulated drives (30 MB/s reads, 20 MB/s writes, 150 read
//! and 1,000 write requests per second each). The limits are set in the root group for the test's own loop
//! devices, so writes that btrfs issues from kernel threads (raid5 parity, checksummed direct writes) are
//! throttled too (a child group would not see them, ../shared/CRATES.md); they are reset to 0 in every outcome.
//!
//! On each pool: sequential 1 MiB writes and reads (one job, queue depth 4), random 4 KiB reads by 1 and by 8
//! synchronous threads (vdbench's threads: one read each in flight; with 8, the chance that btrfs's pid policy
//! sends every thread to the same copy, 2 in 256, is small enough for a test), and `streams --max` (8 Mbit/s, 256 KiB
//! chunks, one scheduler thread). The planner is given the same drives as a catalogue written from the
//! throttle figures, and its prediction must lie within ±15 % of each measurement. Where a figure depends on
//! which copy btrfs's pid policy picks for reads that io_uring may hand to its worker threads (stream capacity
//! on raid1 and raid10), the measurement must lie between the planner's one-copy and all-copies answers
//! (docs/planning.md, "Validation"). Every comparison is printed, passed or not. A figure off its bound is
//! measured once more (the raw phases, or `streams --max`) and passes if that is within it: beside a busy slow tier
//! the kernel's blk-throttle now and then holds every read of a throttled device for up to two seconds.
//!
//! The raid1 of 4 holds less data than one btrfs data chunk, which lies on 2 of its 4 members: the planner is
//! told the data set (`--data-set`) and must predict the reads of those two members, not of all four.
//!
//! The pools are small (64 MiB of data, 30 s of media), each step of the capacity search judges 4 s of playback
//! (6 s before: every figure stayed within its bounds, and each pool took 10-20 s less), on raid1 and raid10 a
//! step above the pool's capacity fails after 20 s, not 30, of buffers that do not fill (`QUICKER_FAIL`), and the
//! search runs its edge once (`--confirm 0`: the bounds are wider than one more run of the edge would narrow them), so each pool
//! takes about two minutes, most of it `streams --max`'s steps. Each pool's rates are its own devices' throttles and take a few % of a
//! CPU, so nextest runs two pools at once (test group `pools`, .config/nextest.toml); under `cargo test` they
//! take turns (a mutex). Root only; skipped loudly without loop devices, cgroup v1 blkio or btrfs.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use common::{LoopDevice, Mount, RootThrottle, can_build_throttled_btrfs, read_json, streamcap, throttled_catalogue};

/// Emulated drive: bytes/s and requests/s per member.
const READ_BPS: u64 = 30_000_000;
const WRITE_BPS: u64 = 20_000_000;
const READ_IOPS: u64 = 150;
const WRITE_IOPS: u64 = 1000;
const MEMBER_BYTES: u64 = 768 << 20;
const LIMITS: [u64; 4] = [READ_BPS, WRITE_BPS, READ_IOPS, WRITE_IOPS];

static SERIAL: Mutex<()> = Mutex::new(());

/// A mounted btrfs pool over throttled loop devices. Fields drop in order: limits off, unmount, detach.
struct Pool {
    _throttle: RootThrottle,
    mount: Mount,
    _devices: Vec<LoopDevice>,
}

/// The pool's members are files in `backing`, its mount point `point`.
fn build_pool(backing: &Path, point: &Path, profile: &str, members: usize) -> Pool {
    let devices: Vec<LoopDevice> =
        (0..members).map(|i| LoopDevice::new(&backing.join(format!("m{i}.img")), MEMBER_BYTES)).collect();
    let mkfs = Command::new("mkfs.btrfs")
        .args(["-f", "-q", "-d", profile, "-m", "raid1"])
        .args(devices.iter().map(|d| &d.device))
        .output()
        .unwrap();
    assert!(mkfs.status.success(), "mkfs.btrfs -d {profile}: {}", String::from_utf8_lossy(&mkfs.stderr));
    let mount = Mount::new(devices[0].device.to_str().unwrap(), point, &[]);
    let throttle = RootThrottle::new(&devices, LIMITS);
    Pool { _throttle: throttle, mount, _devices: devices }
}

/// The raw phases: 64 MiB written once, then read back sequentially, then at random by 1 and 8 threads. The write
/// phase's half-second ramp is not measured: blk-throttle lets a member that starts from idle dispatch a whole
/// 100 ms slice at once, 2 MB a member, which over 64 MiB on four members (1.6 s) read as +14 % above the
/// throttle (46 MB/s for 40 on raid10 and raid5, the bound is 15 %); after the ramp every member is busy and
/// the measured writes go at the throttle's rate.
const JOB: &str = r#"
[global]
size = "64M"
direct = true
[[phase]]
name = "seq write"
rw = "write"
bs = "1M"
iodepth = 4
ramp = "500ms"
[[phase]]
name = "seq read"
rw = "read"
bs = "1M"
iodepth = 4
runtime = "4s"
[[phase]]
name = "random read, 1 thread"
rw = "randread"
bs = "4k"
engine = "sync"
runtime = "4s"
[[phase]]
name = "random read, 8 threads"
rw = "randread"
bs = "4k"
engine = "sync"
jobs = 8
runtime = "4s"
"#;

const STREAMS: &str = "--bitrate 8Mbit --chunk 256k --workers 1 --duration 4s --ramp 1s --buffer 2s \
     --prebuffer 1s --media-length 30s --precision 10 --confirm 0 --no-estimate --quiet";

/// For the pools whose stream capacity is judged against a range (raid1, raid10: one copy × 0.85 … all copies ×
/// 1.15), not the default 30 s: a step above the pool's capacity fails when its first viewer's buffer is still not
/// full at that bound, so each failing step of the search lasted 30 s (raid10: three of them, 90 s of its 139 s
/// search), while their passing edges were full within 15 s (raid10's 19 viewers, the slowest; raid1 of two's 52
/// within 12 s). Not raid5, judged within ±15 % of one figure, its edge the nearest of the four to its bound (28 of
/// 29): with 20 s it found 24 (−17 %) once, its 26 and 28 not full in time beside another session's 20 GB `dd` to
/// the host's disk, and 28 on its retry.
const QUICKER_FAIL: &str = "--steady-within 20s";

/// The raw phases' rates: sequential writes and reads (MB/s), random 4k reads by 1 and by 8 threads (reads/s).
struct Raw {
    seq_write: f64,
    seq_read: f64,
    random_1: f64,
    random_8: f64,
}

/// Runs the raw phases on the pool.
fn measure_raw(dir: &Path, pool: &Pool) -> Raw {
    let started = std::time::Instant::now();
    let job = dir.join("job.toml");
    std::fs::write(&job, JOB).unwrap();
    let raw = dir.join("raw.json");
    let target = pool.mount.point.to_str().unwrap();
    streamcap()
        .args(["run", target, "--job", job.to_str().unwrap(), "--quiet", "--json", raw.to_str().unwrap()])
        .assert()
        .success();
    eprintln!("raw phases: {:.1} s", started.elapsed().as_secs_f64());
    let phases = read_json(&raw)["phases"].clone();
    let rate = |i: usize, class: &str, key: &str| phases[i][class][key].as_f64().unwrap();
    // Each phase's operations per interval: a hold of the throttle (`validate` measures again) shows as a gap.
    for phase in phases.as_array().into_iter().flatten() {
        let ops: Vec<String> = phase["intervals"].as_array().into_iter().flatten().map(interval_ops).collect();
        eprintln!("  {}: operations per interval {}", phase["name"], ops.join(" "));
    }
    Raw {
        seq_write: rate(0, "write", "mbps"),
        seq_read: rate(1, "read", "mbps"),
        random_1: rate(2, "read", "iops"),
        random_8: rate(3, "read", "iops"),
    }
}

/// One interval's reads and writes, as a number to print.
fn interval_ops(point: &serde_json::Value) -> String {
    let ops = |class: &str| point[class]["ops"].as_u64().unwrap_or(0);
    (ops("read") + ops("write")).to_string()
}

/// `streams --max` on the pool: its capacity.
fn measure_streams(dir: &Path, pool: &Pool, stream_limit: u32, quicker_fail: bool) -> f64 {
    let started = std::time::Instant::now();
    let target = pool.mount.point.to_str().unwrap();
    let streams = dir.join("streams.json");
    let extra = if quicker_fail { QUICKER_FAIL } else { "" };
    let args = format!("streams {target} {STREAMS} {extra} --max --limit {stream_limit} --json {}", streams.display());
    streamcap().args(args.split_whitespace()).assert().success();
    eprintln!("streams --max: {:.1} s", started.elapsed().as_secs_f64());
    let result = read_json(&streams);
    // Each step and its length: the search is most of a pool's time.
    for step in result["streams"]["steps"].as_array().into_iter().flatten() {
        let (count, passed, took) = (&step["count"], &step["meets_target"], step["duration_s"].as_f64().unwrap_or(0.0));
        eprintln!("  step of {count} viewers: passed {passed}, {took:.1} s");
    }
    result["streams"]["capacity"]["streams"].as_f64().unwrap()
}

/// The planner's answer for `members` emulated drives in `layout`, for `threads` random readers and
/// `reader_threads` stream reader threads (absent: many).
fn predict(dir: &Path, pool: &PoolSpec, threads: u32, reader_threads: Option<u32>) -> serde_json::Value {
    let PoolSpec { layout, members, data_set, .. } = *pool;
    let catalogue = dir.join("drives.toml");
    std::fs::write(&catalogue, throttled_catalogue(MEMBER_BYTES, LIMITS)).unwrap();
    let json = dir.join(format!("plan-{threads}-{reader_threads:?}.json"));
    let mut cmd = streamcap();
    cmd.args(["plan", "--drives", catalogue.to_str().unwrap(), "--layouts", layout, "--count"])
        .arg(members.to_string())
        .args(["--mix", "8Mbit:1", "--chunk", "256k", "--file-workload"])
        .arg(format!("rdpct=100,xfersize=4k,threads={threads}"))
        .args(["--json", json.to_str().unwrap()]);
    if let Some(t) = reader_threads {
        cmd.args(["--reader-threads", &t.to_string()]);
    }
    if let Some(size) = data_set {
        cmd.args(["--data-set", size]);
    }
    cmd.assert().success();
    read_json(&json)["answers"][0]["healthy"].clone()
}

/// One comparison: prints it, returns whether it passed.
fn check(pool: &str, what: &str, predicted: f64, measured: f64) -> bool {
    let off = (measured - predicted) / predicted * 100.0;
    let ok = off.abs() <= 15.0;
    eprintln!("| {pool} | {what} | {predicted:.1} | {measured:.1} | {off:+.0} % | {} |", if ok { "ok" } else { "OFF" });
    ok
}

/// A pool to validate: mkfs profile, planner layout, members; the data set told to the planner (`None`: data on
/// every member); whether its stream capacity depends on btrfs's pid policy.
#[derive(Clone, Copy)]
struct PoolSpec {
    profile: &'static str,
    layout: &'static str,
    members: usize,
    data_set: Option<&'static str>,
    pid_dependent_streams: bool,
}

/// What the planner said for one pool: its answers for one random reader (with one stream reader thread), for
/// eight random readers, and for one random reader with many stream reader threads.
struct Predicted {
    one: serde_json::Value,
    eight: serde_json::Value,
    many: serde_json::Value,
}

fn figure(answer: &serde_json::Value, key: &str) -> f64 {
    answer[key].as_f64().unwrap()
}

/// The raw figures against the planner, one row each: which passed.
fn raw_rows(name: &str, p: &Predicted, m: &Raw) -> [bool; 4] {
    eprintln!("| pool | figure | predicted | measured | off | |");
    [
        check(name, "seq write MB/s", figure(&p.one, "seq_write_mbps"), m.seq_write),
        check(name, "seq read MB/s (1 job)", figure(&p.one, "seq_read_one_mbps"), m.seq_read),
        check(name, "random 4k reads/s, 1 thread", figure(&p.one, "reads_per_s"), m.random_1),
        check(name, "random 4k reads/s, 8 threads", figure(&p.eight, "reads_per_s"), m.random_8),
    ]
}

/// The stream capacity against the planner: within ±15 % of the one-copy answer, or where btrfs's pid policy
/// decides which copy serves (`pid_dependent`) between one copy × 0.85 and all copies × 1.15.
fn streams_row(name: &str, p: &Predicted, measured: f64, pid_dependent: bool) -> bool {
    let (low, high) = (figure(&p.one, "streams"), figure(&p.many, "streams"));
    if !pid_dependent {
        return check(name, "streams (8 Mbit/s)", low, measured);
    }
    let inside = measured >= low * 0.85 && measured <= high * 1.15;
    let verdict = if inside { "ok" } else { "OFF" };
    eprintln!(
        "| {name} | streams (8 Mbit/s) | {low:.0} (one copy) … {high:.0} (all copies) | {measured:.0} | | {verdict} |"
    );
    inside
}

fn validate(test: &str, spec: PoolSpec) {
    let PoolSpec { profile, members, pid_dependent_streams, .. } = spec;
    if !can_build_throttled_btrfs(test) {
        return;
    }
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // The members' backing files in memory (`common::backing_dir`), as check_pool_hint's and scripts/validate's, so
    // that other tests' disk writes do not set a pool's figures.
    let backing = common::backing_dir();
    let predicted = Predicted {
        one: predict(dir.path(), &spec, 1, Some(1)),
        eight: predict(dir.path(), &spec, 8, None),
        many: predict(dir.path(), &spec, 1, None),
    };
    let built = std::time::Instant::now();
    let pool = build_pool(backing.path(), &dir.path().join("pool"), profile, members);
    eprintln!("pool built in {:.1} s", built.elapsed().as_secs_f64());
    let name = format!("btrfs {profile} × {members}");
    let limit = (figure(&predicted.many, "streams") * 1.5) as u32 + 4;
    let mut raw = raw_rows(&name, &predicted, &measure_raw(dir.path(), &pool));
    let measured = measure_streams(dir.path(), &pool, limit, pid_dependent_streams);
    let mut streams = streams_row(&name, &predicted, measured, pid_dependent_streams);
    // A figure off its bound is measured once more, and passes if that measurement is within it. Beside a busy
    // slow tier, blk-throttle holds every read of a throttled device now and then for 0.5-2.3 s (traced
    // 2026-11-29: no throttle timer and no dispatch work ran for 2.09 s while the kernel's workers were idle,
    // and the intervals of that phase read 434 455 0 1 reads/s), which no drive the planner models does: it cost
    // raid5 a step of its stream search or a raw figure in one try of four (docs/testing.md, "The throttle's
    // holds"). A planner that is wrong is wrong twice.
    if !raw.iter().all(|&ok| ok) {
        eprintln!("{name}: a raw figure is off; the raw phases once more");
        let again = raw_rows(&name, &predicted, &measure_raw(dir.path(), &pool));
        raw.iter_mut().zip(again).for_each(|(first, second)| *first |= second);
    }
    if !streams {
        eprintln!("{name}: the stream capacity is off; streams --max once more");
        let measured = measure_streams(dir.path(), &pool, limit, pid_dependent_streams);
        streams = streams_row(&name, &predicted, measured, pid_dependent_streams);
    }
    drop(pool);
    let ok = raw.iter().all(|&ok| ok) && streams;
    assert!(ok, "{name}: a measurement is off the planner's prediction twice (tables above)");
}

const RAID1: PoolSpec =
    PoolSpec { profile: "raid1", layout: "btrfs-raid1", members: 2, data_set: None, pid_dependent_streams: true };

#[test]
fn plan_predicts_a_btrfs_raid1_of_two_throttled_drives() {
    validate("plan against btrfs raid1", RAID1);
}

/// Guards the data-set rule: 64 MiB of data and 30 MB of media fit in one data chunk, on 2 of the 4 members, so
/// one reader gets one member's 150 reads/s (the planner said 600 when it assumed data on all four).
#[test]
fn plan_predicts_a_btrfs_raid1_of_four_throttled_drives_holding_less_than_a_chunk() {
    validate("plan against btrfs raid1 × 4", PoolSpec { members: 4, data_set: Some("96M"), ..RAID1 });
}

#[test]
fn plan_predicts_a_btrfs_raid10_of_four_throttled_drives() {
    validate("plan against btrfs raid10", PoolSpec { profile: "raid10", layout: "btrfs-raid10", members: 4, ..RAID1 });
}

#[test]
fn plan_predicts_a_btrfs_raid5_of_three_throttled_drives() {
    let raid5 =
        PoolSpec { profile: "raid5", layout: "btrfs-raid5", members: 3, data_set: None, pid_dependent_streams: false };
    validate("plan against btrfs raid5", raid5);
}
