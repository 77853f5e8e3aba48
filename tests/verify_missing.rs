//! `--verify-only` on a kept run whose files were tampered with or lost (issue 25, items 5 and 10): a symlink
//! swapped into the kept work directory is never followed, a FIFO never hangs it, and a truncated or deleted data
//! file is checked block by block as far as it goes, with the missing range reported as lost, with its offsets,
//! and exit code 1 — never "all good". Before: it read the file a symlink pointed to, and a truncated file gave
//! "0 blocks checked … all good" and then a short read.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::streamcap;
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// A target with one kept, verified run of 8 MiB in blocks of 1 MiB; its work directory and data file.
fn kept_run() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    streamcap()
        .arg("run")
        .arg(&target)
        .args(["--rw", "write", "--size", "8M", "--bs", "1M", "--verify", "crc32c", "--keep", "--quiet"])
        .assert()
        .success();
    let runs: Vec<PathBuf> = std::fs::read_dir(target.join(".streamcap")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let data = runs[0].join("data.0");
    (dir, runs[0].clone(), data)
}

struct Checked {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    json: Value,
}

/// `--verify-only crc32c` of the kept run under the sandbox's target, with a timeout (a hang fails).
fn verify_only(sandbox: &Path) -> Checked {
    let json = sandbox.join("v.json");
    let _ = std::fs::remove_file(&json);
    let output = streamcap()
        .arg("run")
        .arg(sandbox.join("t"))
        .args(["--verify-only", "crc32c", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    Checked {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        json: if json.exists() { common::read_json(&json) } else { Value::Null },
    }
}

/// (offset, len, blocks) of every lost range in the result.
fn lost(checked: &Checked) -> Vec<(u64, u64, u64)> {
    let ranges = checked.json["verify"]["lost_ranges"].as_array().cloned().unwrap_or_default();
    ranges
        .iter()
        .map(|r| (r["offset"].as_u64().unwrap(), r["len"].as_u64().unwrap(), r["blocks"].as_u64().unwrap()))
        .collect()
}

#[test]
fn verify_only_never_follows_a_symlink_swapped_into_a_kept_run() {
    let (sandbox, run, data) = kept_run();
    // A perfect copy elsewhere: were the link followed, every block would read back good.
    let elsewhere = sandbox.path().join("elsewhere");
    std::fs::rename(&data, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &data).unwrap();
    let checked = verify_only(sandbox.path());
    assert_eq!(checked.code, Some(1), "{}{}", checked.stdout, checked.stderr);
    assert!(
        checked.stdout.contains("0 blocks (0 B) checked") && !checked.stdout.contains("all good"),
        "{}",
        checked.stdout
    );
    assert!(checked.stdout.contains("a symbolic link is in its place, which is never followed"), "{}", checked.stdout);
    assert_eq!(lost(&checked), [(0, 8 * MIB, 8)]);
    // A FIFO in its place is not opened for reading (that would hang), and is lost the same way.
    std::fs::remove_file(&data).unwrap();
    rustix::fs::mknodat(rustix::fs::CWD, &data, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
    let checked = verify_only(sandbox.path());
    assert_eq!(checked.code, Some(1), "{}{}", checked.stdout, checked.stderr);
    assert!(checked.stdout.contains("named pipe (FIFO)"), "{}", checked.stdout);
    // The manifest is not read through a link either.
    std::fs::remove_file(&data).unwrap();
    std::fs::rename(&elsewhere, &data).unwrap();
    let manifest = run.join("verify.json");
    let moved = sandbox.path().join("verify.json");
    std::fs::rename(&manifest, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &manifest).unwrap();
    let refused = streamcap()
        .arg("run")
        .arg(sandbox.path().join("t"))
        .args(["--verify-only", "crc32c", "--from"])
        .arg(&run)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("verify.json is not a regular file"));
    std::fs::remove_file(&manifest).unwrap();
    std::fs::rename(&moved, &manifest).unwrap();
    let checked = verify_only(sandbox.path());
    assert_eq!(checked.code, Some(0), "put back, it is all good again: {}{}", checked.stdout, checked.stderr);
}

#[test]
fn verify_only_checks_a_truncated_file_as_far_as_it_goes_and_names_the_lost_range() {
    let (sandbox, _run, data) = kept_run();
    // Cut at 5,000,000 bytes (within block 4), and flip a byte in block 1: the intact part is still checked.
    std::fs::OpenOptions::new().write(true).open(&data).unwrap().set_len(5_000_000).unwrap();
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[(MIB + 100) as usize] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    let checked = verify_only(sandbox.path());
    assert_eq!(checked.code, Some(1), "{}{}", checked.stdout, checked.stderr);
    assert!(checked.stdout.contains("4 blocks (4 MiB) checked"), "blocks 0-3 were read: {}", checked.stdout);
    assert!(checked.stdout.contains(": 5 bad blocks:"), "one corrupted, four lost: {}", checked.stdout);
    assert!(
        checked
            .stdout
            .contains("bytes 4194304–8388608 (4 written blocks, 4 MiB): lost — the file ends at byte 5000000"),
        "{}",
        checked.stdout
    );
    assert_eq!(lost(&checked), [(4 * MIB, 4 * MIB, 4)]);
    let bad = checked.json["verify"]["bad_blocks"].as_array().unwrap();
    assert_eq!((bad.len(), bad[0]["offset"].as_u64(), bad[0]["kind"].as_str()), (1, Some(MIB), Some("corrupted")));
    assert_eq!(checked.json["verify"]["bad_count"], 5);
}

#[test]
fn verify_only_reports_a_deleted_data_file_as_lost() {
    let (sandbox, _run, data) = kept_run();
    std::fs::remove_file(&data).unwrap();
    let checked = verify_only(sandbox.path());
    assert_eq!(checked.code, Some(1), "{}{}", checked.stdout, checked.stderr);
    assert!(
        checked.stdout.contains("bytes 0–8388608 (8 written blocks, 8 MiB): lost — the file is missing (deleted)"),
        "{}",
        checked.stdout
    );
    assert_eq!(lost(&checked), [(0, 8 * MIB, 8)]);
}
