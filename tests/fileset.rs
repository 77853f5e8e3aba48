//! File-set phases end to end: the real binary on a real tree in a temp directory. Every operation type, the
//! format modes (yes, only, restart, no, clean), the vdbench small-files workload scaled down, and bad input.

mod common;

use std::path::{Path, PathBuf};

use common::{entries, streamcap};
use predicates::prelude::*;
use serde_json::Value;

const TREE: &str = r#"
[[phase.fileset.tree]]
name = "t"
depth = 1
width = 2
files = 4
size = "8k"
"#;

/// A phase running `operation` with fileselect `select` on the tree above, formatted as `format`.
fn phase(name: &str, format: &str, operation: &str, select: &str, runtime: &str) -> String {
    format!(
        "[[phase]]\nname = \"{name}\"\nruntime = \"{runtime}\"\n[phase.fileset]\nformat = \"{format}\"\n{TREE}\n\
         [[phase.fileset.workload]]\noperation = \"{operation}\"\nfileselect = \"{select}\"\nxfersize = \"4k\"\n\
         threads = 1\n"
    )
}

fn run(dir: &Path, job: &str, keep: bool) -> Value {
    let file = dir.join("job.toml");
    std::fs::write(&file, format!("interval = \"1s\"\n{job}")).unwrap();
    let json = dir.join("r.json");
    let mut cmd = streamcap();
    cmd.arg("run").arg(dir.join("target")).arg("--job").arg(&file).arg("--json").arg(&json).arg("--quiet");
    if keep {
        cmd.arg("--keep");
    }
    cmd.assert().success();
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn ops(result: &Value, phase: usize, op: &str) -> u64 {
    result["phases"][phase]["file_ops"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .map_or(0, |o| o["ops"].as_u64().unwrap())
}

fn root(dir: &Path) -> PathBuf {
    dir.join("target/.streamcap/fileset-t")
}

/// (directories, files) under the tree root, not counting the marker.
fn count(dir: &Path) -> (usize, usize) {
    let (mut dirs, mut files) = (0, 0);
    let Ok(top) = std::fs::read_dir(root(dir)) else { return (0, 0) };
    for entry in top.flatten() {
        if entry.path().is_dir() {
            dirs += 1;
            files += std::fs::read_dir(entry.path()).unwrap().count();
        }
    }
    (dirs, files)
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    dir
}

#[test]
fn format_only_restart_and_clean_create_what_they_say() {
    let dir = setup();
    let d = dir.path();
    let r = run(d, &phase("fmt", "only", "read", "random", "1s"), true);
    assert_eq!(count(d), (2, 8));
    assert_eq!(r["phases"][0]["file_ops"]["formatted_files"], 8);
    assert!(
        std::fs::read_dir(root(d).join("vdb.1_1.dir")).unwrap().all(|e| e.unwrap().metadata().unwrap().len() == 8192)
    );
    // Restart creates only what is missing.
    std::fs::remove_file(root(d).join("vdb.1_1.dir/vdb_f0002.file")).unwrap();
    std::fs::remove_file(root(d).join("vdb.1_2.dir/vdb_f0004.file")).unwrap();
    std::fs::write(root(d).join("vdb.1_2.dir/vdb_f0001.file"), b"short").unwrap();
    let r = run(d, &phase("restart", "restart", "getattr", "once", "5s"), true);
    assert_eq!(r["phases"][0]["file_ops"]["formatted_files"], 3, "two missing, one short");
    assert_eq!(r["phases"][0]["file_ops"]["formatted_dirs"], 0);
    assert_eq!(ops(&r, 0, "getattr"), 8);
    assert_eq!(count(d), (2, 8));
    // Clean removes the tree; without --keep nothing is left at all.
    run(d, &phase("clean", "clean", "read", "random", "1s"), false);
    assert!(entries(&d.join("target")).is_empty(), "{:?}", entries(&d.join("target")));
}

#[test]
fn every_operation_does_what_it_says_on_disk() {
    let dir = setup();
    let d = dir.path();
    // delete → rmdir → mkdir → create, each over the whole tree once.
    let job = [
        phase("delete", "yes", "delete", "once", "10s"),
        phase("rmdir", "no", "rmdir", "once", "10s"),
        phase("mkdir", "no", "mkdir", "once", "10s"),
        phase("create", "no", "create", "once", "10s"),
    ]
    .join("\n");
    let r = run(d, &job, true);
    assert_eq!((ops(&r, 0, "delete"), ops(&r, 1, "rmdir"), ops(&r, 2, "mkdir")), (8, 2, 2));
    assert_eq!((ops(&r, 3, "create"), ops(&r, 3, "write")), (8, 16), "two 4k writes per 8k file");
    assert_eq!(count(d), (2, 8));
    // The metadata operations and transfers, each on existing files.
    let job = ["getattr", "setattr", "access", "open", "close", "read", "write"]
        .map(|op| phase(op, "no", op, "once", "10s"))
        .join("\n");
    let r = run(d, &job, true);
    for (i, op) in ["getattr", "setattr", "access", "open", "open", "read", "write"].iter().enumerate() {
        assert_eq!(ops(&r, i, op), if *op == "read" || *op == "write" { 16 } else { 8 }, "{op}");
        assert_eq!(r["phases"][i]["errors"]["count"], 0, "{op}");
    }
    assert_eq!(ops(&r, 3, "close"), 8);
    // copy and move need missing files: delete half by hand.
    for f in ["vdb_f0001.file", "vdb_f0002.file"] {
        for sub in ["vdb.1_1.dir", "vdb.1_2.dir"] {
            std::fs::remove_file(root(d).join(sub).join(f)).unwrap();
        }
    }
    let r = run(d, &phase("copy", "no", "copy", "sequential", "10s"), true);
    let copies = ops(&r, 0, "copy");
    assert!(copies >= 1 && count(d).1 == 4 + copies as usize, "{copies} copies, {:?}", count(d));
    std::fs::remove_file(root(d).join("vdb.1_1.dir/vdb_f0003.file")).ok();
    let before = count(d).1;
    let r = run(d, &phase("move", "no", "move", "random", "1s"), false);
    assert!(ops(&r, 0, "move") >= 1);
    let _ = before;
    assert!(entries(&d.join("target")).is_empty(), "the tree is removed without --keep");
}

#[test]
fn the_small_files_workload_runs_and_leaves_nothing_behind() {
    let dir = setup();
    let job = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/jobs/fileset-small-files.toml"))
        .unwrap()
        .replace("files = 25600", "files = 20")
        .replace("runtime = \"30s\"", "runtime = \"2s\"")
        .replace("threads = 64", "threads = 4")
        .replace("interval = \"1s\"\n", "");
    let r = run(dir.path(), &job, false);
    let f = &r["phases"][0]["file_ops"];
    assert!(f["requested"]["rate"].as_f64().unwrap() > 0.0);
    for op in ["read", "write", "open", "close"] {
        assert!(ops(&r, 0, op) > 0, "{op}");
    }
    assert!(f["read_mbps"].as_f64().unwrap() > 0.0 && f["write_mbps"].as_f64().unwrap() > 0.0);
    assert_eq!(f["xfer_bytes"], 1024);
    assert!(!r["phases"][0]["intervals"][0]["file_ops"].as_array().unwrap().is_empty());
    assert!(entries(&dir.path().join("target")).is_empty());
}

#[test]
fn bad_file_set_input_is_refused_and_creates_nothing() {
    let dir = setup();
    let d = dir.path();
    let refused = |job: String, expect: &str| {
        let file = d.join("bad.toml");
        std::fs::write(&file, job).unwrap();
        streamcap()
            .arg("run")
            .arg(d.join("target"))
            .arg("--job")
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expect));
        assert!(entries(&d.join("target")).is_empty());
    };
    let good = phase("p", "yes", "read", "random", "1s");
    refused(good.replace("width = 2", "width = 0"), "width must be at least 1");
    refused(good.replace("threads = 1", "threads = 1\ntree = \"nope\""), "no tree named nope");
    refused(
        good.replace("depth = 1", &format!("anchor = \"{}\"\ndepth = 1", d.join("bad.toml").display())),
        "not a directory",
    );
    refused(good.replace("size = \"8k\"", "size = \"1P\""), "not enough free space");
}
