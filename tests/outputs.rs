//! Results that say what happened (issue 9): output paths are checked before the run (nothing created, nothing
//! left empty), and text from files never drives the terminal.

mod common;

use std::path::Path;
use std::process::Command;

use common::{entries, is_root, streamcap, streamcap_path};
use predicates::prelude::*;

const RUN: [&str; 7] = ["--rw", "write", "--size", "8M", "--bs", "1M", "--quiet"];

#[test]
fn a_json_path_that_is_a_directory_is_refused_before_the_run() {
    // Broke: `--json DIR` ran the whole job and then lost the result.
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(target.path())
        .args(RUN)
        .arg("--json")
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a directory"));
    assert!(entries(target.path()).is_empty(), "the run must not start: {:?}", entries(target.path()));
    assert!(entries(out.path()).is_empty());
}

#[test]
fn the_same_path_for_two_outputs_is_refused() {
    // Broke: `--json F --csv F` silently lost the CSV (the JSON was renamed over it).
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("r.out");
    streamcap()
        .arg("run")
        .arg(target.path())
        .args(RUN)
        .arg("--json")
        .arg(&file)
        .arg("--csv")
        .arg(out.path().join(".").join("r.out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("name the same file"));
    assert!(entries(target.path()).is_empty());
    assert!(entries(out.path()).is_empty());
}

#[test]
fn a_json_path_over_a_device_or_the_job_file_is_refused() {
    let target = tempfile::tempdir().unwrap();
    streamcap()
        .arg("run")
        .arg(target.path())
        .args(RUN)
        .args(["--json", "/dev/null"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a regular file"));
    let job = target.path().join("job.toml");
    std::fs::write(&job, "[[phase]]\nrw = \"write\"\nsize = \"8M\"\n").unwrap();
    streamcap()
        .arg("run")
        .arg(target.path())
        .arg("--job")
        .arg(&job)
        .arg("--json")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is an input of this command"));
    assert_eq!(entries(target.path()), ["job.toml"]);
    assert!(std::fs::read_to_string(&job).unwrap().starts_with("[[phase]]"));
}

#[test]
fn an_unwritable_output_directory_is_refused_before_the_run() {
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        common::skip("an_unwritable_output_directory_is_refused_before_the_run: needs root and setpriv");
        return;
    }
    // The run is done by `nobody` in a directory it may write; the output directory is root's.
    let target = tempfile::tempdir().unwrap();
    std::fs::set_permissions(target.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::set_permissions(out.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(streamcap_path())
        .arg("run")
        .arg(target.path())
        .args(RUN)
        .arg("--json")
        .arg(out.path().join("r.json"))
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not writable"), "{stderr}");
    assert!(entries(target.path()).is_empty(), "{:?}", entries(target.path()));
    assert!(entries(out.path()).is_empty());
}

#[test]
fn a_set_up_failure_leaves_no_empty_result_files() {
    // Broke: a run that failed while setting up (here: `.streamcap` is a file) left an empty CSV and a JSON
    // with no phases, and overwrote an earlier result of the same name.
    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join(".streamcap"), "").unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("old.json"), "{\"earlier\": true}\n").unwrap();
    streamcap()
        .arg("run")
        .arg(target.path())
        .args(RUN)
        .arg("--json")
        .arg(out.path().join("old.json"))
        .arg("--csv")
        .arg(out.path().join("r.csv"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".streamcap exists and is not a directory"));
    assert_eq!(entries(out.path()), ["old.json"]);
    assert_eq!(std::fs::read_to_string(out.path().join("old.json")).unwrap(), "{\"earlier\": true}\n");
}

fn has_raw_controls(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[test]
fn report_escapes_control_characters_from_the_result_file() {
    // Broke: `report` printed escape sequences read from a JSON file straight to the terminal.
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/result-v1.json");
    let mut result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    result["phases"][0]["name"] = "evil \u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m".into();
    result["notices"] = serde_json::json!(["note \u{1b}[5m blinking"]);
    let path = dir.path().join("evil.json");
    std::fs::write(&path, serde_json::to_string(&result).unwrap()).unwrap();
    for format in ["summary", "fio-json"] {
        let output = streamcap().arg("report").arg(&path).args(["--format", format]).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{format}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(!has_raw_controls(&stdout), "{format}: raw control characters reached stdout: {stdout:?}");
        assert!(stdout.contains("\\u001b[2J"), "{format}: the escape is shown: {stdout}");
        if format == "fio-json" {
            let parsed: serde_json::Value = serde_json::from_str(&stdout).expect("still valid JSON");
            assert!(parsed.to_string().contains("evil"));
        }
    }
}

#[test]
fn job_file_text_in_plans_and_errors_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    // TOML spells the escape character \u001b inside a string; the phase name then holds a real ESC.
    std::fs::write(&job, "[[phase]]\nname = \"x\\u001b[2Jy\"\nrw = \"read\"\nsize = \"8M\"\n").unwrap();
    let output = streamcap().arg("run").arg(dir.path()).arg("--job").arg(&job).arg("--dry-run").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(!has_raw_controls(&stdout) && stdout.contains("x\\u001b[2Jy"), "{stdout:?}");
    std::fs::write(&job, "[[phase]]\nrw = \"read\u{1b}[2J\"\n").unwrap();
    let output = streamcap().arg("run").arg(dir.path()).arg("--job").arg(&job).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(!has_raw_controls(&stderr) && stderr.contains("\\u001b[2J"), "{stderr:?}");
}
