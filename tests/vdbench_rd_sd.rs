//! vdbench rds that name sds but no wd, through the binary: vdbench runs a copy of the latest `wd=default` on
//! the rd's sds (`RD_entry.selectWhichWdsToUse`), with the rd's own `xfersize=`/`rdpct=` as loops of one value;
//! the real-world survey (docs/vdbench.md) found them refused with "wd= is missing". An rd with neither is
//! still refused.

mod common;

use common::streamcap;
use predicates::prelude::*;

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_rd_with_sds_and_no_wd_runs_the_latest_wd_default() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // A wd1 that no rd names: vdbench does not use it for rds without wd= (it clones wd=default).
    let job = write(
        dir.path(),
        "rdsd.vdb",
        &format!(
            "sd=sd1,lun={d}/lun1,size=16m,threads=2\nwd=default,xfersize=8k\nwd=default,rdpct=0\n\
             wd=wd1,sd=sd1,xfersize=64k,rdpct=100\n\
             rd=default,sd=sd*,iorate=max,elapsed=2,interval=1\nrd=writes\nrd=reads_32k,rdpct=100,xfersize=32k\n"
        ),
    );
    streamcap()
        .args(["run", "--dry-run", "--job"])
        .arg(&job)
        .assert()
        .success()
        .stdout(predicate::str::contains("an rd that names sds but no wd runs the latest wd=default").count(1))
        .stdout(predicate::str::contains("phase 1: writes").and(predicate::str::contains("reads_32k")))
        .stdout(predicate::str::contains("block size 8 KiB").and(predicate::str::contains("block size 32 KiB")))
        .stdout(predicate::str::contains("64 KiB").not());
    let json = dir.path().join("r.json");
    streamcap().args(["run", "--job"]).arg(&job).arg("--json").arg(&json).assert().success();
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let phases = result["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2, "one phase per rd");
    let ops = |p: &serde_json::Value, dir: &str| p[dir]["ops"].as_f64().unwrap_or(0.0);
    assert!(ops(&phases[0], "write") > 0.0 && ops(&phases[0], "read") == 0.0, "rd=writes: wd=default's rdpct=0");
    assert!(ops(&phases[1], "read") > 0.0 && ops(&phases[1], "write") == 0.0, "rd=reads_32k: the rd's rdpct=100");
    assert_eq!(phases[0]["bs"], "8K");
    assert_eq!(phases[1]["bs"], "32K");
}

#[test]
fn without_a_wd_default_the_rd_runs_vdbench_built_in_defaults_and_an_rd_without_sds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let job = write(
        dir.path(),
        "plain.vdb",
        &format!("sd=sd1,lun={d}/lun1,size=16m\nrd=rd1,sd=sd1,iorate=max,elapsed=2,interval=1\n"),
    );
    // vdbench's defaults: 4k, all reads, random.
    streamcap()
        .args(["run", "--dry-run", "--job"])
        .arg(&job)
        .assert()
        .success()
        .stdout(predicate::str::contains("rw randread").and(predicate::str::contains("block size 4 KiB")));
    let bad = write(
        dir.path(),
        "bad.vdb",
        &format!("sd=sd1,lun={d}/lun1,size=16m\nwd=wd1,sd=sd1\nrd=rd1,iorate=max,elapsed=2,interval=1\n"),
    );
    streamcap()
        .args(["run", "--dry-run", "--job"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("rd=rd1: wd= is missing"));
}
