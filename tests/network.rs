//! The network path (issue 10): the same sweep on a local directory and over a real network filesystem — sshfs
//! into a network namespace of the test's own, over a veth pair shaped with `tc` htb — where the link shows as
//! its own plateau: every sequential pass over sshfs stays under the link's rate, while the local page cache
//! serves re-reads far above it. The only figure asserted is that physical cap.

mod common;

use common::netns::{SshfsLink, can_use_sshfs};
use common::{entries, read_json, streamcap};

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
    streamcap()
        .arg("inspect")
        .arg(&link.mount)
        .assert()
        .success()
        .stdout(predicates::str::contains("network    yes: every read and write crosses the network"));
    // Nothing left behind, on either side of the link.
    assert!(entries(&link.export).is_empty(), "left in the export: {:?}", entries(&link.export));
    assert!(entries(&local_dir).is_empty(), "left locally: {:?}", entries(&local_dir));
}
