//! The network path (issue 10): the same sweep on a local directory and over a real network filesystem — sshfs
//! into a network namespace of the test's own, over a veth pair shaped with `tc` htb — where the link shows as
//! its own plateau: every sequential pass over sshfs stays under the link's rate, while the local page cache
//! serves re-reads far above it; `cache` and `streams` over it are capped by the link too. The only figures
//! asserted are that physical cap.

mod common;

use std::path::Path;

use common::netns::{SshfsLink, can_use_sshfs};
use common::{entries, read_json, streamcap, walk};
use predicates::prelude::PredicateBooleanExt;

/// The link's rate. Not 1 Gbit/s: on this 2-core development VM sshfs tops out near 62 MB/s over an unshaped
/// (1 Gbit/s-shaped) link — ssh's encryption on a busy CPU is then the limit, not the link. At 200 Mbit/s
/// (25 MB/s) the link is well below both that and the local disk (~400 MB/s direct writes), so the plateau is
/// the link's.
const RATE_MBIT: u64 = 200;
/// htb lets a short burst through above the rate; 15 % covers it and the rounding of short phases.
const SLACK: f64 = 1.15;

fn sweep(dir: &std::path::Path, json: &std::path::Path) -> serde_json::Value {
    let assert = streamcap()
        .arg("sweep")
        .arg(dir)
        .args(["--sizes", "8M,32M", "--records", "1M", "--json"])
        .arg(json)
        .assert()
        .success();
    eprintln!("{}", String::from_utf8_lossy(&assert.get_output().stdout));
    read_json(json)
}

/// The MB/s of every sequential pass of every point (random reads repeat records, which sshfs may serve from
/// the data it already holds for the open file).
fn sequential(result: &serde_json::Value) -> Vec<(String, f64)> {
    let mut figures = Vec::new();
    for point in result["sweep"]["points"].as_array().expect("sweep points") {
        let mode = if point["direct"].as_bool().unwrap() { "direct" } else { "buffered" };
        for pass in ["write_mbps", "rewrite_mbps", "read_mbps", "reread_mbps"] {
            let mbps = point[pass].as_f64().unwrap_or_else(|| panic!("{pass} in {point}"));
            figures.push((format!("{} {mode} {pass}", point["size_bytes"]), mbps));
        }
    }
    figures
}

#[test]
fn over_sshfs_the_shaped_link_caps_the_sweep_and_the_summary_names_it() {
    let test = "over_sshfs_the_shaped_link_caps_the_sweep_and_the_summary_names_it";
    if !can_use_sshfs(test) {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let local_dir = out.path().join("local");
    std::fs::create_dir(&local_dir).unwrap();
    let local = sweep(&local_dir, &out.path().join("local.json"));

    let link = SshfsLink::new(RATE_MBIT);
    let remote = sweep(&link.mount, &out.path().join("sshfs.json"));
    assert_eq!(remote["target"]["filesystem"]["fs_type"], "fuse.sshfs");

    let cap = RATE_MBIT as f64 / 8.0;
    for (what, mbps) in sequential(&remote) {
        eprintln!("sshfs {what}: {mbps:.1} MB/s (link {cap} MB/s)");
        assert!(mbps <= SLACK * cap, "over sshfs {what} measured {mbps:.1} MB/s, above the {cap} MB/s link");
    }
    // The local page cache serves buffered re-reads far above the link: the cap is the network's, not the
    // machine's.
    let local_rereads: Vec<f64> = sequential(&local)
        .into_iter()
        .filter(|(what, _)| what.contains("buffered reread"))
        .map(|(_, mbps)| mbps)
        .collect();
    eprintln!("local buffered re-reads: {local_rereads:?} MB/s");
    assert!(local_rereads.iter().all(|&m| m > 4.0 * cap), "local re-reads {local_rereads:?} are not above the link");

    let words = remote["sweep"]["words"].as_str().unwrap();
    assert!(words.starts_with("the ceiling is the network link:"), "{words}");
    assert!(words.contains("fuse.sshfs"), "{words}");
    let local_words = local["sweep"]["words"].as_str().unwrap();
    assert!(!local_words.contains("network"), "{local_words}");
    streamcap().arg("inspect").arg(&link.mount).assert().success().stdout(
        predicates::str::contains("network    yes: every read and write crosses the network")
            .and(predicates::str::contains("as the server reports it for its export")),
    );
    // Nothing left behind, on either side of the link.
    assert!(entries(&link.export).is_empty(), "left in the export: {:?}", entries(&link.export));
    assert!(entries(&local_dir).is_empty(), "left locally: {:?}", entries(&local_dir));
}

/// `cache`, `streams` and `check` over the same kind of link: the media plateau and the MB/s the viewers were
/// served stay under the link's rate, although the viewers ask for more than it carries; the words name the
/// network, not a disk or RAM; and nothing is left in the export (the io_uring engine's registered files once
/// left sshfs's `.fuse_hidden…` copies behind for a moment, and the run failed with "Directory not empty").
#[test]
fn over_sshfs_cache_and_streams_are_capped_by_the_link() {
    let test = "over_sshfs_cache_and_streams_are_capped_by_the_link";
    if !can_use_sshfs(test) {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let link = SshfsLink::new(RATE_MBIT);
    cache_over_the_link(&link, out.path());
    streams_over_the_link(&link, out.path());
    check_over_the_link(&link, out.path());
}

/// `cache` over sshfs: no plateau is a local disk's, and the media plateau is the link's.
fn cache_over_the_link(link: &SshfsLink, out: &Path) {
    let cap = RATE_MBIT as f64 / 8.0;
    let json = out.join("cache.json");
    let assert = streamcap()
        .arg("cache")
        .arg(&link.mount)
        .args(["--size", "64M", "--runtime", "1s", "--load", "none", "--json"])
        .arg(&json)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    eprintln!("{stdout}");
    // Over a network filesystem no plateau is a local disk's, and the media plateau is the link's.
    for wrong in ["no disk touched", "what the disks sustain", "no drive or controller cache"] {
        assert!(!stdout.contains(wrong), "'{wrong}' over sshfs:\n{stdout}");
    }
    assert!(stdout.contains("what the network link (or the server) sustains"), "{stdout}");
    let cache = read_json(&json);
    assert_eq!(cache["target"]["filesystem"]["fs_type"], "fuse.sshfs");
    let plateaus = cache["cache"]["plateaus"].as_array().expect("plateaus");
    let media = plateaus.iter().find(|p| p["kind"] == "media").expect("a media plateau");
    let mbps = media["mbps"].as_f64().unwrap();
    eprintln!("sshfs cache media plateau: {mbps:.1} MB/s (link {cap} MB/s)");
    assert!(mbps > 0.0 && mbps <= SLACK * cap, "the media plateau over sshfs measured {mbps:.1} MB/s");
    assert!(entries(&link.export).is_empty(), "cache left in the export: {:?}", entries(&link.export));
}

/// `streams` over sshfs: every step is served at most what the link carries.
fn streams_over_the_link(link: &SshfsLink, out: &Path) {
    let cap = RATE_MBIT as f64 / 8.0;
    // Twelve 25 Mbit/s viewers ask for 37.5 MB/s; the link carries 25.
    let json = out.join("streams.json");
    let assert = streamcap()
        .arg("streams")
        .arg(&link.mount)
        .args(["--bitrate", "25Mbit", "--count", "12", "--duration", "4s", "--media-length", "10s", "--json"])
        .arg(&json)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    eprintln!("{stdout}");
    assert!(stdout.contains("over the network: ") && stdout.contains("is a fuse.sshfs filesystem"), "{stdout}");
    let streams = read_json(&json);
    assert_eq!(streams["target"]["filesystem"]["fs_type"], "fuse.sshfs");
    for step in streams["streams"]["steps"].as_array().expect("steps") {
        let served = step["delivered_mbps"].as_f64().unwrap();
        eprintln!("sshfs streams served: {served:.1} MB/s (link {cap} MB/s)");
        assert!(served > 0.0 && served <= SLACK * cap, "viewers over sshfs were served {served:.1} MB/s");
    }
    assert!(entries(&link.export).is_empty(), "streams left in the export: {:?}", entries(&link.export));
}

/// `check --quick` over sshfs: the streams were served from the file server, across the network.
fn check_over_the_link(link: &SshfsLink, out: &Path) {
    let json = out.join("check.json");
    // A 256 MiB library instead of the quick profile's 2 GiB: every byte of it crosses the 25 MB/s link (80 s for
    // 2 GiB), and over a network filesystem the viewers' bytes are the server's whatever the library's size. Not
    // kept for a next check (`--remove-library`): nothing stays in the export.
    let args = ["--quick", "--library-size", "256M", "--remove-library", "--json"];
    let assert = streamcap().arg("check").arg(&link.mount).args(args).arg(&json).assert();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    eprintln!("{stdout}");
    let check = read_json(&json);
    let cache = &check["check"]["cache"];
    assert_eq!(cache["served_from"], "media", "{cache}");
    assert!(cache["served_words"].as_str().unwrap().starts_with("the file server, across the network"), "{cache}");
    assert!(!stdout.contains("no disk touched") && !stdout.contains("media stayed in RAM"), "{stdout}");
    assert!(entries(&link.export).is_empty(), "check left in the export: {:?}", walk(&link.export));
}
