//! vdbench's raw access shapes run for real on files in a temporary directory: `seekpct=eof` ends after one
//! pass of each lun, `stride=` skips forward by amounts within its bounds, `hotband=` keeps the I/O in its band
//! and crowds it at the band's start, and `concatenatesds=yes` runs several luns as one.

mod common;

use std::path::Path;

use common::streamcap;

/// Runs the vdbench file `text` (with `DIR` standing for the temporary directory) and returns the result JSON.
fn run(dir: &Path, text: &str, extra: &[&str]) -> serde_json::Value {
    let job = dir.join("job.vdb");
    std::fs::write(&job, text.replace("DIR", &dir.display().to_string())).unwrap();
    let json = dir.join("r.json");
    let out =
        streamcap().args(["run", "--quiet", "--job"]).arg(&job).arg("--json").arg(&json).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    common::read_json(&json)
}

/// seekpct=eof: sequential writes that end at the end of the lun, long before elapsed=: operations × xfersize is
/// the lun's size, every byte once.
#[test]
fn seekpct_eof_ends_after_one_pass_of_the_lun() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=8m,threads=4\nwd=wd1,sd=sd1,xfersize=64k,rdpct=0,seekpct=eof\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n";
    let phase = &run(dir.path(), text, &[])["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(phase["write"]["ops"].as_u64(), Some(128), "{}", phase["write"]);
    assert_eq!(phase["write"]["bytes"].as_u64(), Some(8 << 20), "{}", phase["write"]);
    assert!(phase["duration_s"].as_f64().unwrap() < 600.0);
}

/// seekpct=eof over two sds: one pass of each, 4 MiB + 12 MiB.
#[test]
fn seekpct_eof_on_two_luns_is_one_pass_of_each() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=4m\nsd=sd2,lun=DIR/lun2,size=12m\n\
                wd=wd1,sd=sd*,xfersize=64k,rdpct=0,seekpct=-1\nrd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n";
    let phase = &run(dir.path(), text, &[])["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(phase["write"]["bytes"].as_u64(), Some(16 << 20), "{}", phase["write"]);
    assert!(phase["duration_s"].as_f64().unwrap() < 600.0);
}
