//! Shared files (vdbench `fileio=(random,shared)`, fsd `shared=yes`; `shared = true` in a TOML file-set
//! workload) through the binary on a real tree: with sharing, four threads on one file all read it and the
//! result shows more than one of them on it at once; without, never more than one, as vdbench gives each thread
//! its own file. The combinations vdbench refuses exit 2 with the reason. No timing is asserted.

mod common;

use std::path::Path;

use common::{entries, streamcap};
use predicates::prelude::*;
use serde_json::Value;

/// One file-set phase on a tree of one 1 MiB file read at random by four threads; `shared` adds `shared = true`.
fn toml_job(shared: bool) -> String {
    format!(
        "interval = \"1s\"\n[[phase]]\nname = \"p\"\nruntime = \"1s\"\n[phase.fileset]\nformat = \"yes\"\n\
         [[phase.fileset.tree]]\nname = \"t\"\ndepth = 0\nwidth = 0\nfiles = 1\nsize = \"1m\"\n\
         [[phase.fileset.workload]]\noperation = \"read\"\nfileselect = \"sequential\"\nfileio = \"random\"\n\
         xfersize = \"4k\"\nthreads = 4\n{}",
        if shared { "shared = true\n" } else { "" }
    )
}

/// Runs `job` (written as `name`) on `dir/target`, returning the JSON result.
fn run(dir: &Path, name: &str, job: &str) -> Value {
    common::vdbench::run_on_target(dir, name, job, &[])
}

fn most_on_one_file(result: &Value, phase: usize) -> u64 {
    result["phases"][phase]["file_ops"]["most_threads_on_one_file"].as_u64().expect("the figure is reported")
}

/// Reads done by each worker (thread) of the phase.
fn reads_per_thread(result: &Value, phase: usize) -> Vec<u64> {
    let workers = result["phases"][phase]["workers"].as_array().expect("per-thread figures with shared files");
    workers.iter().map(|w| w["read"]["ops"].as_u64().unwrap_or(0)).collect()
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    dir
}

#[test]
fn four_threads_share_one_file_only_when_asked() {
    let dir = setup();
    let shared = run(dir.path(), "shared.toml", &toml_job(true));
    let reads = reads_per_thread(&shared, 0);
    assert_eq!(reads.len(), 4, "{reads:?}");
    assert!(reads.iter().all(|&r| r > 0), "every thread read the one file: {reads:?}");
    assert!(most_on_one_file(&shared, 0) >= 2, "{}", shared["phases"][0]["file_ops"]);
    let alone = run(dir.path(), "alone.toml", &toml_job(false));
    assert_eq!(most_on_one_file(&alone, 0), 1, "without sharing a file has one thread at a time");
    assert!(entries(&dir.path().join("target")).is_empty(), "the tree is removed after the run");
}

#[test]
fn a_vdbench_file_with_shared_files_runs_with_every_thread_on_the_file() {
    let dir = setup();
    let anchor = dir.path().join("target");
    // format=restart: vdbench refuses format=yes on a shared fsd (see the refusals below).
    let vdb = format!(
        "fsd=fsd1,anchor={},depth=1,width=1,files=1,size=1m,shared=yes\n\
         fwd=fwd1,fsd=fsd1,operation=read,xfersize=4k,fileio=(random,shared),threads=4\n\
         rd=rd1,fwd=fwd1,fwdrate=max,format=restart,elapsed=2,interval=1\n",
        anchor.display()
    );
    let result = run(dir.path(), "shared.vdb", &vdb);
    let reads = reads_per_thread(&result, 0);
    assert_eq!(reads.len(), 4, "{reads:?}");
    assert!(reads.iter().all(|&r| r > 0), "every thread read the one file: {reads:?}");
    assert!(most_on_one_file(&result, 0) >= 2, "{}", result["phases"][0]["file_ops"]);
}

#[test]
fn combinations_vdbench_refuses_exit_2_with_the_reason() {
    let dir = setup();
    let d = dir.path();
    let refused = |name: &str, job: String, expect: &str| {
        let file = d.join(name);
        std::fs::write(&file, job).unwrap();
        streamcap()
            .arg("run")
            .arg(d.join("target"))
            .arg("--job")
            .arg(&file)
            .env("STREAMCAP_NO_HISTORY", "1")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expect));
        assert!(entries(&d.join("target")).is_empty());
    };
    let anchor = d.join("target").display().to_string();
    let vdb = |fsd: &str, fwd: &str, rd: &str| {
        format!(
            "fsd=fsd1,anchor={anchor},depth=1,width=1,files=2,size=64k{fsd}\n\
             fwd=fwd1,fsd=fsd1,operation=read,threads=2{fwd}\nrd=rd1,fwd=fwd1,fwdrate=max,elapsed=2,interval=1{rd}\n"
        )
    };
    refused(
        "random.vdb",
        vdb("", ",fileio=(random,shared),fileselect=random", ""),
        "fileio=(random,shared) and fileselect=random are mutually exclusive",
    );
    refused("seq.vdb", vdb("", ",fileio=(sequential,shared)", ""), "vdbench shares files only for random I/O");
    refused("format.vdb", vdb(",shared=yes", ",fileio=(random,shared)", ",format=yes"), "format=clean");
    refused(
        "toml.toml",
        toml_job(true).replace("fileio = \"random\"", "fileio = \"sequential\""),
        "fileio = \"random\"",
    );
}
