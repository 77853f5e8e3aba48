//! Filesystems that refuse O_DIRECT, on a real one: ramfs (root only, to mount it; skipped loudly otherwise).
//! By default streamcap says so, falls back to buffered I/O and marks the results cache-affected; when the user
//! asked for direct I/O explicitly it refuses with the fix, and leaves nothing behind.

mod common;

use common::{Mount, entries, is_root, read_json, streamcap};
use predicates::prelude::*;

#[test]
fn without_direct_io_streamcap_falls_back_says_so_and_flags_the_cache() {
    if !is_root() {
        common::skip("direct I/O fallback: needs root to mount a ramfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ram = Mount::new("ramfs", &dir.path().join("ram"), &["-t", "ramfs"]);
    let json = dir.path().join("fallback.json");
    // The built-in job (no workload flags), made short.
    streamcap()
        .arg("run")
        .arg(&ram.point)
        .args(["--runtime", "200ms", "--ramp", "0s", "--size", "16M", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("does not support direct I/O"))
        .stdout(predicate::str::contains("[cache]"));
    let r = read_json(&json);
    let phases = r["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 6);
    assert!(phases.iter().all(|p| p["direct"] == false && p["cache_affected"] == true));
    assert!(r["notices"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("direct I/O")));
    assert!(entries(&ram.point).is_empty());

    streamcap()
        .arg("run")
        .arg(&ram.point)
        .args(["--rw", "randread", "--size", "16M", "--direct"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("O_DIRECT").and(predicate::str::contains("--buffered")));
    assert!(entries(&ram.point).is_empty(), "left behind: {:?}", entries(&ram.point));
}

#[test]
fn a_tmpfs_target_is_flagged_even_though_it_accepts_direct_io() {
    // Regression: tmpfs accepts O_DIRECT on recent kernels, so its RAM-speed figures passed as device I/O.
    if !is_root() {
        common::skip("tmpfs flag: needs root to mount a tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = Mount::new("tmpfs", &dir.path().join("tmp"), &["-t", "tmpfs", "-o", "size=256m"]);
    let json = dir.path().join("tmpfs.json");
    streamcap()
        .arg("run")
        .arg(&tmp.point)
        .args(["--rw", "randread", "--size", "16M", "--runtime", "200ms", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("keeps files in RAM"));
    let phase = &read_json(&json)["phases"][0];
    assert_eq!(phase["direct"], true);
    assert_eq!(phase["cache_affected"], true);
}
