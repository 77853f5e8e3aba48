//! Helpers of the tests that run vdbench files for real: run a file and read its result, and read what
//! streamcap stamped into the blocks of a kept lun.

use std::path::Path;

use super::{read_json, streamcap};

/// Runs the vdbench file `text` (with `DIR` standing for the temporary directory `dir`, which holds its luns)
/// with `extra` arguments, and returns the result JSON; the run must succeed.
pub fn run_file(dir: &Path, text: &str, extra: &[&str]) -> serde_json::Value {
    let job = dir.join("job.vdb");
    std::fs::write(&job, text.replace("DIR", &dir.display().to_string())).unwrap();
    let json = dir.join("r.json");
    let out =
        streamcap().args(["run", "--quiet", "--job"]).arg(&job).arg("--json").arg(&json).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    read_json(&json)
}

/// Runs the job `job` (written as `name` in `dir`) on the target `dir/target` with `extra` arguments, and returns
/// the result JSON (saved as `name.json`); the run must succeed.
pub fn run_on_target(dir: &Path, name: &str, job: &str, extra: &[&str]) -> serde_json::Value {
    let file = dir.join(name);
    std::fs::write(&file, job).unwrap();
    let json = dir.join(format!("{name}.json"));
    streamcap()
        .arg("run")
        .arg(dir.join("target"))
        .arg("--job")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .arg("--quiet")
        .args(extra)
        .assert()
        .success();
    read_json(&json)
}

/// The bytes of the file `name` of the run kept (`--keep`) in `dir`'s work directory.
pub fn kept_file(dir: &Path, name: &str) -> Vec<u8> {
    let run = std::fs::read_dir(dir.join(".streamcap")).unwrap().next().unwrap().unwrap().path();
    std::fs::read(run.join(name)).unwrap()
}

/// The stamp (offset, write counter) of each 4 KiB block of the kept lun `name`: streamcap stamps every 4 KiB it
/// writes with them (src/run/pattern.rs).
pub fn stamps_of(dir: &Path, name: &str) -> Vec<(u64, u64)> {
    let word = |block: &[u8], at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap());
    kept_file(dir, name).chunks(4096).map(|block| (word(block, 0), word(block, 8))).collect()
}
