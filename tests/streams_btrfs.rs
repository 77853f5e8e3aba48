//! Which member of a btrfs raid1 serves a stream's reads. Two loop devices, each throttled in read IOPS with
//! cgroup v1 blkio (emulated drives, ../shared/CRATES.md), form a raid1 (data and metadata); `streams --count 1`
//! and `--count 8` run on it, and the result's per-device activity (from /proc/diskstats) must show one member
//! serving the single viewer and both serving the eight.
//!
//! Why: btrfs raid1 picks the mirror of a read by the reading task's pid (read_policy "pid": pid modulo the
//! number of copies). streamcap's sync reads are issued from its scheduler threads, so what decides is the
//! scheduler threads, not the viewers (io_uring's direct reads on btrfs are issued by io-wq workers instead, so
//! the plan has io_uring's viewers read with sync there: the last test): one viewer gets one thread and so one mirror, and eight viewers dealt to four threads get four
//! consecutive thread ids, which land on both mirrors (all four would need the same parity). Root only; skipped
//! loudly without loop devices, cgroup v1 blkio or btrfs. The group, the mount and the loop devices are removed
//! in every outcome. Without `--workers`, the plan gives each viewer its own thread on such a pool, and eight
//! viewers are served by both members with either engine. The same must be visible in the terminal summary (issue 10): its table of which device did
//! the work lists both members with their share of the pool's bytes.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::{Cgroup, LoopDevice, Mount, read_json, streamcap};

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Reads per pool member during the step, by device name.
fn member_reads(json: &std::path::Path) -> Vec<(String, u64)> {
    let result = read_json(json);
    let step = &result["streams"]["steps"][0];
    assert_eq!(step["errors"].as_u64(), Some(0), "no read failed: {}", step["first_error"]);
    step["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["role"] == "btrfs pool member")
        .map(|d| (d["activity"]["name"].as_str().unwrap().to_string(), d["activity"]["reads"].as_u64().unwrap()))
        .collect()
}

/// The share column of each pool member in the terminal summary (`streamcap report` prints the same summary a
/// live run does), in percent.
fn summary_shares(json: &std::path::Path) -> Vec<u32> {
    let out = streamcap().arg("report").arg(json).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("which device did the work"), "{text}");
    let shares: Vec<u32> = text
        .lines()
        .filter(|l| l.contains("btrfs pool member"))
        .map(|l| l.split_whitespace().last().unwrap().trim_end_matches('%').parse().unwrap())
        .collect();
    eprintln!("{text}");
    assert_eq!(shares.len(), 2, "both members are in the summary:\n{text}");
    shares
}

/// A btrfs raid1 (data and metadata) of two 512 MiB loop devices, each throttled to 200 reads a second, in the
/// cgroup `group`. Fields drop in order: the group, then the mount, then the devices.
struct Raid1 {
    group: Cgroup,
    mount: Mount,
    _devices: [LoopDevice; 2],
}

impl Raid1 {
    fn new(dir: &std::path::Path, group: &str) -> Raid1 {
        let devices = [1, 2].map(|i| LoopDevice::new(&dir.join(format!("m{i}.img")), 512 << 20));
        let mkfs = std::process::Command::new("mkfs.btrfs")
            .args(["-f", "-q", "-d", "raid1", "-m", "raid1"])
            .args(devices.iter().map(|d| &d.device))
            .output()
            .unwrap();
        assert!(mkfs.status.success(), "mkfs.btrfs: {}", String::from_utf8_lossy(&mkfs.stderr));
        let mount = Mount::new(devices[0].device.to_str().unwrap(), &dir.join("pool"), &[]);
        let group = Cgroup::new(group);
        for member in &devices {
            group.limit(member, "read_iops_device", 200);
        }
        Raid1 { group, mount, _devices: devices }
    }
}

#[test]
fn raid1_activity_shows_one_member_for_one_viewer_and_both_for_many() {
    let test = "streams on a btrfs raid1";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Raid1 { group, mount, .. } = &Raid1::new(dir.path(), "streamcap-raid1");

    let mut shares = Vec::new();
    let mut summaries = Vec::new();
    // btrfs's default read policy picks a raid1 copy by the submitting thread's pid (pid % copies). The sync engine
    // reads from the worker threads themselves, whose pids are handed out one after another as they start; with
    // io_uring the reads could be issued from the kernel's io-wq threads instead, whose pids interleave with the
    // workers', and all eight viewers then sometimes landed on one copy. Eight workers for eight viewers.
    for (count, workers) in [(1, 4), (8, 8)] {
        let json = dir.path().join(format!("raid1-{count}.json"));
        group.run_streamcap(&format!(
            "streams {} --bitrate 8Mbit --chunk 256k --count {count} --workers {workers} --engine sync --duration 4s \
             --ramp 500ms --buffer 3s --prebuffer 1s --media-length 30s --quiet --json {}",
            mount.point.display(),
            json.display()
        ));
        let reads = member_reads(&json);
        assert_eq!(reads.len(), 2, "both members are listed: {reads:?}");
        let total: u64 = reads.iter().map(|(_, n)| n).sum();
        assert!(total >= 10, "the viewers read from the pool's members: {reads:?}");
        let busiest = reads.iter().map(|(_, n)| *n).max().unwrap();
        eprintln!("{count} viewer(s): reads per member {reads:?}");
        shares.push((count, busiest as f64 / total as f64, reads));
        summaries.push(summary_shares(&json));
    }
    let (_, one, reads) = &shares[0];
    assert!(*one >= 0.9, "one viewer is served by one member: {reads:?}");
    let (_, many, reads) = &shares[1];
    assert!(*many <= 0.85, "eight viewers on eight threads are served by both members: {reads:?}");
    assert!(summaries[0].iter().max() >= Some(&90), "the summary shows one member serving one viewer: {summaries:?}");
    assert!(summaries[1].iter().max() <= Some(&85), "the summary shows both serving eight: {summaries:?}");
    assert!(summaries[1].iter().min() >= Some(&15), "{summaries:?}");
}

/// Without `--workers` the plan chooses the threads (crates/plan/src/streams_threads.rs): on a raid1 whose read policy
/// picks the copy by the reading thread, one per viewer, with either engine, so eight viewers are served by both
/// members as a server with a reader per stream would be; the plan says why.
#[test]
fn raid1_viewers_get_a_thread_each_and_both_copies_serve_them() {
    let test = "streams on a btrfs raid1 with the plan's threads";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Raid1 { group, mount, .. } = &Raid1::new(dir.path(), "streamcap-raid1-threads");
    let args = |engine: &str| {
        format!(
            "streams {} --bitrate 8Mbit --chunk 256k --count 8 --engine {engine} --duration 4s --ramp 500ms --buffer 3s \
             --prebuffer 1s --media-length 30s",
            mount.point.display()
        )
    };
    let plan =
        streamcap().args(args("sync").split(' ')).arg("--dry-run").env("STREAMCAP_NO_HISTORY", "1").output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout).to_string() + &String::from_utf8_lossy(&plan.stderr);
    assert!(
        plan.contains("btrfs raid1 of 2 devices picks the copy a read goes to by the reading thread")
            && plan.contains("one scheduler thread per viewer"),
        "the plan says why it gives each viewer a thread:\n{plan}"
    );
    for engine in ["sync", "io_uring"] {
        let json = dir.path().join(format!("threads-{engine}.json"));
        group.run_streamcap(&format!("{} --quiet --json {}", args(engine), json.display()));
        let reads = member_reads(&json);
        let total: u64 = reads.iter().map(|(_, n)| n).sum();
        let busiest = reads.iter().map(|(_, n)| *n).max().unwrap_or(0);
        eprintln!("{engine}: reads per member {reads:?}");
        assert!(total >= 10, "{engine}: the viewers read from the pool's members: {reads:?}");
        assert!(
            busiest as f64 / total as f64 <= 0.85,
            "{engine}: eight viewers on their own threads are served by both members: {reads:?}"
        );
    }
}

/// Bytes each pool member read over the step, by device name.
fn member_bytes(json: &std::path::Path) -> (Vec<(String, u64)>, serde_json::Value) {
    let result = read_json(json);
    let step = result["streams"]["steps"][0].clone();
    assert_eq!(step["errors"].as_u64(), Some(0), "no read failed: {}", step["first_error"]);
    let members = step["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["role"] == "btrfs pool member")
        .map(|d| (d["activity"]["name"].as_str().unwrap().to_string(), d["activity"]["read_bytes"].as_u64().unwrap()))
        .collect();
    (members, step)
}

/// io_uring's direct reads on btrfs are refused inline (btrfs answers a non-blocking direct read over a page with
/// EAGAIN) and issued by io-wq kernel workers, whose pids, not the viewers' threads, picked the copy: one member of
/// a pair read 61.8 % of a step, its mirror 17.6 %. On a pool whose read policy is pid the plan has io_uring's
/// viewers read with the sync engine, a thread each, and says why; twelve viewers then load both copies alike:
/// neither member reads under 45 % of the step's member bytes, and the members read what the viewers received.
/// Meanwhile this test starts threads in a loop, taking ids between the viewers' as any busy machine does:
/// before streamcap spread its threads' ids over the copies (crates/run/src/spread.rs), twelve viewers would
/// split 6 : 6 only about one time in four.
#[test]
fn raid1_io_uring_viewers_read_from_their_own_threads_and_load_both_copies() {
    let test = "io_uring streams on a btrfs raid1";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Raid1 { group, mount, .. } = &Raid1::new(dir.path(), "streamcap-raid1-uring");
    let args = format!(
        "streams {} --bitrate 8Mbit --chunk 1m --count 12 --engine io_uring --duration 6s --ramp 500ms --buffer 4s \
         --prebuffer 2s --media-length 40s",
        mount.point.display()
    );
    let plan = streamcap().args(args.split_whitespace()).arg("--dry-run").env("STREAMCAP_NO_HISTORY", "1").output();
    let plan = plan.unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout).to_string() + &String::from_utf8_lossy(&plan.stderr);
    assert!(
        plan.contains("io_uring's direct reads are issued by kernel workers")
            && plan.contains("the viewers read with the sync engine"),
        "the plan says why io_uring's viewers read with sync on this pool:\n{plan}"
    );
    let json = dir.path().join("uring.json");
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::thread::spawn(|| {}).join();
            }
        });
        // Stops the loop however the run ends (a panic too), or the scope would wait for it forever.
        let _stop = StopOnDrop(&stop);
        group.run_streamcap(&format!("{args} --quiet --json {}", json.display()));
    });
    let (members, step) = member_bytes(&json);
    assert_eq!(step["engine"], "sync", "the viewers read with the sync engine: {}", step["engine"]);
    assert_eq!(members.len(), 2, "both members are listed: {members:?}");
    let total: u64 = members.iter().map(|(_, b)| b).sum();
    let received = step["read_bytes"].as_u64().unwrap_or(0);
    eprintln!("io_uring asked, 12 viewers: bytes per member {members:?}, viewers received {received}");
    assert!(total >= 12 << 20, "the viewers read from the pool's members: {members:?}");
    assert!(
        total as f64 >= 0.9 * received as f64,
        "the members read what the viewers received: {total} of {received} ({members:?})"
    );
    for (name, bytes) in &members {
        assert!(
            *bytes as f64 >= 0.45 * total as f64,
            "{name} read {bytes} of {total} bytes: twelve viewers on their own threads load both copies ({members:?})"
        );
    }
}
