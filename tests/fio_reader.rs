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

#[test]
fn a_fio_job_runs_and_writes_fio_logs_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let job = dir.path().join("logs.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=io_uring\ndirect=1\nsize=8m\nruntime=1\ntime_based\nlog_avg_msec=250\n\n\
         [reader]\nrw=randread\nbs=4k\nwrite_bw_log\nwrite_lat_log=lat\n",
    )
    .unwrap();
    streamcap()
        .current_dir(dir.path())
        .arg("run")
        .arg(&target)
        .arg("--job")
        .arg(&job)
        .arg("--quiet")
        .assert()
        .success();
    assert!(entries(&target).is_empty(), "the data files are gone");
    for name in ["reader_bw.1.log", "lat_lat.1.log", "lat_clat.1.log"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 3, "{name}: one line per 250 ms interval: {text}");
        for line in lines {
            let fields: Vec<u64> = line.split(", ").map(|f| f.parse().unwrap()).collect();
            assert_eq!(fields.len(), 5, "{line}");
            assert!(fields[1] > 0 && fields[2] == 0, "{line}: a positive read value");
        }
    }
}
