//! Direct means direct, proved (issue 24): every stream step sets the bytes its viewers received beside the bytes
//! the devices beneath read (/proc/diskstats, a pool's members together), and a step whose devices read less is
//! cache-served and does not count.
//!
//! On btrfs raid1 and raid10 over four loop devices, each throttled in reads with cgroup v1 blkio (emulated
//! drives), twenty viewers run with io_uring and with the sync engine: in every step the members read what the
//! viewers received, within 5 %. What broke: io_uring read a 1 MiB chunk through a 256 KiB buffer as one
//! vectored read whose pieces share that buffer, which btrfs quietly serves from the page cache
//! (`check_direct_read`), so the members read the media once (30 MB) while the viewers received 350 MB, and the
//! JSON said `direct: true`. Then buffered reads of a small file, which the page cache holds after the first
//! pass: every passing count is cache-served and the capacity search reports none. (On these pools, whose read
//! policy picks a copy by thread, the plan now has io_uring's viewers read with the sync engine, since io_uring's
//! btrfs direct reads are issued by its kernel workers; io_uring's chained reads on btrfs are proved by
//! tests/engine_conformance.rs on a single-device btrfs.)
//!
//! Root only; skipped loudly without loop devices, cgroup v1 blkio or btrfs. The group, the mount and the loop
//! devices are removed in every outcome. Loads are a few MB/s: nothing depends on the machine's speed.

mod common;

use std::path::{Path, PathBuf};

use common::{Cgroup, LoopDevice, Mount, read_json, streamcap};

/// A btrfs pool over four throttled loop devices, mounted; undone on drop (group, mount, then devices).
struct Pool {
    group: Cgroup,
    mount: Mount,
    _members: Vec<LoopDevice>,
}

impl Pool {
    fn new(dir: &Path, profile: &str) -> Pool {
        let members: Vec<LoopDevice> =
            (1..=4).map(|n| LoopDevice::new(&dir.join(format!("{profile}-{n}.img")), 512 << 20)).collect();
        let mkfs = std::process::Command::new("mkfs.btrfs")
            .args(["-f", "-q", "-d", profile, "-m", profile])
            .args(members.iter().map(|m| &m.device))
            .output()
            .unwrap();
        assert!(mkfs.status.success(), "mkfs.btrfs: {}", String::from_utf8_lossy(&mkfs.stderr));
        let mount = Mount::new(members[0].device.to_str().unwrap(), &dir.join(profile), &[]);
        let group = Cgroup::new(&format!("sc-direct-{profile}"));
        for member in &members {
            group.limit(member, "read_bps_device", 40 << 20);
        }
        Pool { group, mount, _members: members }
    }

    fn point(&self) -> PathBuf {
        self.mount.point.clone()
    }
}

/// Every step's figures: (count, bytes the viewers read, bytes the members read, cache-served, words).
fn steps(json: &Path) -> Vec<(u64, u64, u64, bool, String)> {
    let result = read_json(json);
    let steps = result["streams"]["steps"].as_array().expect("steps").clone();
    steps
        .iter()
        .map(|s| {
            assert_eq!(s["errors"].as_u64(), Some(0), "no read failed: {}", s["first_error"]);
            let members: u64 = s["devices"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["role"] == "btrfs pool member")
                .map(|d| d["activity"]["read_bytes"].as_u64().unwrap())
                .sum();
            assert_eq!(s["device_read_bytes"].as_u64(), Some(members), "the step's figure is the members' sum: {s}");
            (
                s["count"].as_u64().unwrap(),
                s["read_bytes"].as_u64().unwrap(),
                members,
                s["cache_served"].as_bool().unwrap_or(false),
                s["served_words"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn on_btrfs_raid1_and_raid10_the_members_read_what_the_viewers_received_with_either_engine() {
    let test = "stream steps proved by the members of btrfs raid1 and raid10";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for profile in ["raid1", "raid10"] {
        let pool = Pool::new(dir.path(), profile);
        for engine in ["io_uring", "sync"] {
            let json = dir.path().join(format!("{profile}-{engine}.json"));
            // Sync keeps one read in flight per thread: enough threads for twenty 8 Mbit/s viewers.
            pool.group.run_streamcap(&format!(
                "streams {} --bitrate 8Mbit --count 20 --workers 8 --engine {engine} --duration 6s --media-length 30s \
                 --quiet --json {}",
                pool.point().display(),
                json.display()
            ));
            let result = read_json(&json);
            assert_eq!(result["streams"]["direct"], true, "{profile} {engine}");
            assert_eq!(result["streams"]["media_files"], 1, "{profile} {engine}: one file, every viewer on it");
            for (count, viewers, members, cached, words) in steps(&json) {
                eprintln!("{profile} {engine}: {count} viewers read {viewers} B, the members {members} B: {words}");
                assert!(viewers >= 20 << 20, "{profile} {engine}: twenty viewers read at least 1 MiB each");
                let ratio = members as f64 / viewers as f64;
                assert!(
                    (0.95..=1.05).contains(&ratio),
                    "{profile} {engine}: the members read {members} B for {viewers} B received ({ratio:.3})"
                );
                assert!(!cached, "{profile} {engine}: {words}");
                assert!(words.starts_with("served by the devices"), "{words}");
            }
        }
    }
}

#[test]
fn buffered_reads_of_a_small_file_are_cache_served_and_give_no_capacity() {
    let test = "buffered stream reads of a small file on btrfs raid1";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::new(dir.path(), "raid1");
    let json = dir.path().join("buffered.json");
    // A 10 s file (10 MB) watched by 4, then 8, then 16 viewers for 3 s: the page cache holds it after the first
    // pass, so the members read at most the file while the viewers receive several times it.
    pool.group.run_streamcap(&format!(
        "streams {} --bitrate 8Mbit --max --limit 16 --no-estimate --buffered --workers 4 --duration 3s \
         --media-length 10s --quiet --json {}",
        pool.point().display(),
        json.display()
    ));
    let result = read_json(&json);
    assert_eq!(result["streams"]["direct"], false);
    let steps = steps(&json);
    assert!(!steps.is_empty());
    for (count, viewers, members, cached, words) in &steps {
        eprintln!("{count} viewers read {viewers} B from the page cache, the members {members} B: {words}");
        assert!(*cached, "{count} viewers: {words}");
        assert!(words.starts_with("cache-served"), "{words}");
    }
    let answer = &result["streams"]["capacity"];
    assert_eq!(answer["streams"], 0, "no count the devices served: {answer}");
    assert!(answer["not_measured"].as_str().unwrap().contains("served from a cache"), "{answer}");
    let summary = streamcap().arg("report").arg(&json).output().unwrap();
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(text.contains("cache-served"), "the summary says so:\n{text}");
}

/// The default library (each viewer its own title) on a btrfs raid10, read with io_uring: the members read what
/// the viewers received, title after title.
#[test]
fn a_library_on_btrfs_raid10_is_served_by_its_members() {
    let test = "a library of titles on btrfs raid10";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::new(dir.path(), "raid10");
    let json = dir.path().join("library.json");
    pool.group.run_streamcap(&format!(
        "streams {} --bitrate 8Mbit --count 12 --library-size 192M --duration 5s --quiet --json {}",
        pool.point().display(),
        json.display()
    ));
    let result = read_json(&json);
    assert!(result["streams"]["media_files"].as_u64().unwrap() > 1, "a library: {}", result["streams"]["library"]);
    for (count, viewers, members, cached, words) in steps(&json) {
        eprintln!("library: {count} viewers read {viewers} B, the members {members} B: {words}");
        let ratio = members as f64 / viewers as f64;
        assert!((0.95..=1.05).contains(&ratio), "the members read {members} B for {viewers} B ({ratio:.3})");
        assert!(!cached, "{words}");
    }
}

/// Pages of `file` in the page cache (util-linux `fincore`), or `None` when the tool is missing.
fn cached_pages(file: &Path) -> Option<u64> {
    let out = std::process::Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "PAGES"])
        .arg(file)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Near the pool's limit, sixty viewers of one file in 256 KiB chunks, with io_uring on one thread and with the
/// sync engine on thirty-two: the members read every byte the viewers received, and none of the file is left in
/// the page cache. What broke: btrfs reads into user memory with page faults disabled, and a slot buffer never
/// touched before made it read the rest of the chunk through the page cache (`btrfs_direct_read` →
/// `filemap_read`); the other viewers of the file then got those pages from RAM (5–7 % of the bytes, 11.5 MiB
/// of the 29 MiB file cached afterwards).
#[test]
fn near_its_limit_a_btrfs_raid1_reads_every_byte_and_caches_nothing() {
    let test = "stream reads of one file near a btrfs raid1's limit";
    if !common::can_build_throttled_btrfs(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::new(dir.path(), "raid1");
    for (engine, workers) in [("io_uring", 1), ("sync", 32)] {
        let json = dir.path().join(format!("near-{engine}.json"));
        pool.group.run_streamcap(&format!(
            "streams {} --bitrate 8Mbit --count 60 --chunk 256k --engine {engine} --workers {workers} --duration 3s \
             --ramp 500ms --buffer 1s --prebuffer 500ms --media-length 30s --keep --quiet --json {}",
            pool.point().display(),
            json.display()
        ));
        for (count, viewers, members, cached, words) in steps(&json) {
            eprintln!("{engine}: {count} viewers read {viewers} B, the members {members} B: {words}");
            assert!(!cached, "{engine}: {words}");
            assert!(members as f64 >= 0.99 * viewers as f64, "{engine}: {members} B read for {viewers} B received");
        }
        let media: Vec<PathBuf> =
            common::walk(&pool.point()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "bin")).collect();
        assert_eq!(media.len(), 1, "{media:?}");
        match cached_pages(&media[0]) {
            Some(pages) => assert_eq!(pages, 0, "{engine}: {pages} pages of the media were read into the page cache"),
            None => eprintln!("fincore is missing: the page cache of the media is not checked"),
        }
        std::fs::remove_dir_all(pool.point().join(".streamcap")).unwrap();
    }
}
