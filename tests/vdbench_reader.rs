//! vdbench parameter files through the binary: a bad file is refused with exit code 2 and a message naming the
//! file, the line and the keyword; a good file plans (--dry-run) with the command line's --set overrides.

mod common;

use common::streamcap;
use predicates::prelude::*;

#[test]
fn a_bad_parameter_file_names_the_file_line_and_keyword() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("bad.vdb");
    std::fs::write(
        &job,
        "* a typo on line 3\nsd=sd1,lun=/tmp/x,size=1g\nwd=wd1,sd=sd1,xfersizze=4k\nrd=rd1,wd=wd1,iorate=max\n",
    )
    .unwrap();
    streamcap()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .arg("--job")
        .arg(&job)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.vdb"))
        .stderr(predicate::str::contains("line 3"))
        .stderr(predicate::str::contains("'xfersizze'"))
        .stderr(predicate::str::contains("expected one of"));
}

#[test]
fn an_unmapped_windows_anchor_asks_for_anchor() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/vdbench-small-files.vdb");
    streamcap()
        .args(["run", "--dry-run", "--job", example])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 1"))
        .stderr(predicate::str::contains("--anchor H:=DIR"));
}

#[test]
fn the_randread_example_plans_with_set_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.bin");
    std::fs::File::create(&data).unwrap().set_len(1 << 30).unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/vdbench-randread.vdb");
    streamcap()
        .args(["run", "--dry-run", "--job", example, "--set"])
        .arg(format!("lun={}", data.display()))
        .args(["--set", "threads=16", "--elapsed", "20s"])
        .assert()
        .success()
        .stdout(predicate::str::contains("rd1"))
        .stdout(predicate::str::contains("16"));
}
