//! fio job files through the real binary: a bad file is refused with exit code 2 and a message naming the
//! file, the line and the option; a good one plans; a saved result converts to fio's JSON.

mod common;

use common::{entries, streamcap};
use predicates::prelude::*;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json");

#[test]
fn a_bad_fio_file_exits_2_naming_file_line_and_option() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("bad.fio");
    std::fs::write(&job, "[global]\nioengine=libaio\n\n[randread]\nrw=randread\nbs=4q\n").unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    streamcap()
        .env_remove("RUST_BACKTRACE")
        .arg("run")
        .arg(&target)
        .arg("--job")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.fio"))
        .stderr(predicate::str::contains("line 6"))
        .stderr(predicate::str::contains("option 'bs': '4q' is not a size; expected"));
    assert!(entries(&target).is_empty(), "nothing is created for a refused job");
}

#[test]
fn an_unknown_fio_option_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, "[j]\nrw=read\nverify=md5\n").unwrap();
    streamcap()
        .arg("run")
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 3").and(predicate::str::contains("unknown option 'verify'")));
}

#[test]
fn the_randread_example_plans() {
    let dir = tempfile::tempdir().unwrap();
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/fio-randread.fio");
    streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--job", job, "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("fio-randread"));
}

#[test]
fn a_saved_result_converts_to_fio_json() {
    let output = streamcap().args(["report", FIXTURE, "--format", "fio-json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["fio version"].as_str().unwrap().starts_with("streamcap-"));
    assert_eq!(json["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(json["jobs"][1]["jobname"], "random 4k reads");
    assert!(json["jobs"][1]["read"]["iops"].as_f64().unwrap() > 0.0);
}
