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

/// vdbench's Data Validation: validate=yes is streamcap's verification (every read checked, everything written
/// read back at the end); read_after_write also re-reads each write at once, which file-system runs refuse
/// (their validate=yes is tests/verify_fileset.rs).
#[test]
fn validate_yes_verifies_every_block_written_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let run = |validate: &str| {
        let job = dir.path().join("v.vdb");
        let lun = dir.path().join("lun");
        std::fs::write(
            &job,
            format!(
                // rd0 writes the whole lun once (seekpct=eof), so the read-back at the end covers all of it
                // however few random I/Os rd1 gets through on a loaded machine.
                "validate={validate}\nsd=sd1,lun={},size=8m\nwd=wd0,sd=sd1,xfersize=64k,rdpct=0,seekpct=eof\n\
                 wd=wd1,sd=sd1,xfersize=4k,rdpct=50\nrd=rd0,wd=wd0,iorate=max,elapsed=60,interval=1\n\
                 rd=rd1,wd=wd1,iorate=max,elapsed=2,interval=1\n",
                lun.display()
            ),
        )
        .unwrap();
        let json = dir.path().join("r.json");
        let out = streamcap().args(["run", "--quiet", "--job"]).arg(&job).arg("--json").arg(&json).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        common::read_json(&json)
    };
    for validate in ["yes", "read_after_write"] {
        let result = run(validate);
        let verify = &result["verify"];
        assert_eq!(verify["algorithm"], "crc32c", "{validate}: {verify}");
        assert_eq!(verify["bad_count"], 0, "{validate}: {verify}");
        assert_eq!(verify["pass_complete"], true, "{validate}: {verify}");
        assert!(verify["blocks_checked"].as_u64().unwrap() >= 2048, "{validate}: the 8 MiB lun read back: {verify}");
        let backlog = &result["config"]["verify"]["backlog"];
        assert_eq!(backlog.as_u64(), (validate == "read_after_write").then_some(1), "{validate}: {backlog}");
    }
    let job = dir.path().join("fs.vdb");
    std::fs::write(
        &job,
        "validate=read_after_write\nfsd=fsd1,anchor=/tmp/a,depth=1,width=1,files=2,size=4k\n\
         fwd=fwd1,fsd=fsd1,operation=read,xfersize=4k\nrd=rd1,fwd=fwd1,fwdrate=max,format=yes,elapsed=2,interval=1\n",
    )
    .unwrap();
    let out = streamcap().args(["run", "--dry-run", "--job"]).arg(&job).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("for raw (sd/wd) runs only"));
}

/// vdbench's maxdata below 100 is passes over the luns: maxdata=2 on an 8 MiB lun writes 16 MiB and ends there,
/// long before its elapsed time.
#[test]
fn maxdata_below_100_is_passes_over_the_luns() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("m.vdb");
    std::fs::write(
        &job,
        format!(
            "sd=sd1,lun={},size=8m\nwd=wd1,sd=sd1,xfersize=64k,rdpct=0,seekpct=0\n\
             rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=2\n",
            dir.path().join("lun").display()
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = streamcap().args(["run", "--quiet", "--job"]).arg(&job).arg("--json").arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let phase = &common::read_json(&json)["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(phase["write"]["bytes"].as_u64(), Some(16 << 20), "{}", phase["write"]);
    assert!(phase["duration_s"].as_f64().unwrap() < 600.0);
}
