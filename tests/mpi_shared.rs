//! vdbench's shared file-system trees across mpirun's ranks (fsd `shared=yes` with the fwds of several hds, and
//! `fileio=(random,shared)` on several hosts), under a real `mpirun` (Open MPI) on this one host: the ranks
//! work in one tree, each creating, writing and verifying only its every n-th file, as vdbench's
//! `FileAnchor.createFileList` gives each slave "only every n-th file"; the tree is removed once, by the last
//! rank to let go of it, also after Ctrl-C; and each rank's threads share its own files. Needs the binary built
//! with `--features mpi` (scripts/test does so); skips loudly when mpirun is missing.

#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};

/// Two hds, one shared fsd of 2 directories × `files` files of 64 KiB in `anchor`, one fwd on both hds.
fn shared_job(anchor: &Path, files: u32, fwd: &str, rd: &str) -> String {
    format!(
        "hd=h1,system=alpha.example\nhd=h2,system=beta.example\n\
         fsd=fsd1,anchor={},depth=1,width=2,files={files},size=64k,shared=yes\n\
         fwd=fwd1,fsd=fsd1,host=(h1,h2),xfersize=4k{fwd}\n\
         rd=rd1,fwd=fwd1,fwdrate=max,format=restart,interval=1{rd}\n",
        anchor.display()
    )
}

/// A temporary directory with an empty `anchor` in it.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let anchor = dir.path().join("anchor");
    std::fs::create_dir(&anchor).expect("anchor made");
    (dir, anchor)
}

/// Runs `streamcap run --job JOB --json JSON` plus `extra` under `cmd` (mpirun), which must succeed.
fn run_ok(cmd: &mut std::process::Command, job: &Path, json: &Path, extra: &[&str]) -> serde_json::Value {
    cmd.arg(common::streamcap_path()).arg("run").arg("--job").arg(job).arg("--json").arg(json).args(extra);
    let out = cmd.output().expect("mpirun runs");
    let (stdout, stderr) = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_slice(&std::fs::read(json).expect("the JSON")).expect("JSON")
}

/// The files each kept run's verify manifest lists for the tree (one manifest per rank), sorted.
fn verified_files_by_rank(anchor: &Path) -> Vec<Vec<String>> {
    let base = anchor.join(".streamcap");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&base).expect("the work directories").flatten() {
        let manifest = entry.path().join("verify.json");
        if !manifest.is_file() {
            continue;
        }
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).expect("read")).expect("JSON");
        let files = json["trees"][0]["files"].as_array().expect("the tree's files");
        let mut names: Vec<String> = files.iter().map(|f| f["name"].as_str().expect("a name").to_string()).collect();
        names.sort();
        out.push(names);
    }
    out.sort();
    out
}

/// Two hds on one shared fsd of 8 files (validate=yes, random writes and reads): there is one tree, with all 8
/// files; each rank formatted (8 files together) and verified exactly its 4, rank 0 the first and third file of
/// each directory (the tree's files 0, 2, 4, 6), rank 1 the others; kept with --keep it is left whole. A
/// second run reads the kept tree (format=no) and leaves nothing in the anchor: the tree is removed once, by the
/// last rank, at the end.
#[test]
fn each_rank_makes_and_uses_its_every_other_file_of_one_shared_tree() {
    let test = "each_rank_makes_and_uses_its_every_other_file_of_one_shared_tree";
    let Some(mut cmd) = common::mpirun(test, 2) else { return };
    let (dir, anchor) = setup();
    let (job, json) = (dir.path().join("shared.vdb"), dir.path().join("r.json"));
    let text = shared_job(&anchor, 4, ",operation=read,rdpct=50,fileio=random,threads=2", ",elapsed=2");
    std::fs::write(&job, format!("validate=yes\n{text}")).expect("job written");
    let result = run_ok(&mut cmd, &job, &json, &["--keep"]);
    assert_eq!(result["phases"][0]["file_ops"]["formatted_files"], 8, "each rank made its 4 files, once");
    let checked: Vec<u64> = (result["cluster"]["verify"].as_array().expect("per-rank verification").iter())
        .map(|r| r["blocks_checked"].as_u64().expect("a count"))
        .collect();
    assert!(checked.len() == 2 && checked.iter().all(|&c| c > 0), "both ranks checked their files: {checked:?}");
    let tree = anchor.join(".streamcap/fileset-fsd1");
    let files: Vec<PathBuf> =
        common::walk(&tree).into_iter().filter(|p| p.extension().is_some_and(|e| e == "file")).collect();
    assert_eq!(files.len(), 8, "one tree with every rank's files: {files:?}");
    assert!(files.iter().all(|f| f.metadata().expect("stat").len() == 65536), "each file whole");
    let others: Vec<PathBuf> =
        common::walk(&anchor.join(".streamcap")).into_iter().filter(|p| p.starts_with(&tree)).collect();
    assert!(!others.iter().any(|p| p.to_string_lossy().contains(".rank")), "no tree of a rank's own: {others:?}");
    let (d1, d2) = ("vdb.1_1.dir/vdb_f", "vdb.1_2.dir/vdb_f");
    let name = |d: &str, f: u32| format!("{d}{f:04}.file");
    let rank0 = vec![name(d1, 1), name(d1, 3), name(d2, 1), name(d2, 3)];
    let rank1 = vec![name(d1, 2), name(d1, 4), name(d2, 2), name(d2, 4)];
    assert_eq!(verified_files_by_rank(&anchor), [rank0, rank1], "each rank stamped and checked its own files");

    let Some(mut again) = common::mpirun(test, 2) else { return };
    for run_dir in common::walk(&anchor.join(".streamcap")).into_iter().filter(|p| p.ends_with(".streamcap-run")) {
        std::fs::remove_dir_all(run_dir.parent().expect("a work directory")).expect("the kept run's directory");
    }
    let reuse = shared_job(&anchor, 4, ",operation=read,fileio=random,threads=2", ",elapsed=2");
    std::fs::write(&job, reuse.replace("format=restart", "format=no")).expect("job written");
    let result = run_ok(&mut again, &job, &json, &[]);
    let ops: Vec<u64> = (result["cluster"]["phases"][0]["ranks"].as_array().expect("ranks").iter())
        .map(|r| r["ops"].as_u64().expect("ops"))
        .collect();
    assert!(ops.len() == 2 && ops.iter().all(|&o| o > 0), "both ranks read their files: {ops:?}");
    let left = common::walk(&anchor);
    assert!(left.is_empty(), "the shared tree was removed at the end: {left:?}");
}

/// `fileio=(random,shared)` on both hds: each rank's 4 threads share its one file (2 files of the tree, one a
/// rank), as each of vdbench's hosts shares its files among its own threads; nothing is left after the run.
#[test]
fn each_ranks_threads_share_its_own_files() {
    let Some(mut cmd) = common::mpirun("each_ranks_threads_share_its_own_files", 2) else { return };
    let (dir, anchor) = setup();
    let (job, json) = (dir.path().join("shared.vdb"), dir.path().join("r.json"));
    let text = shared_job(&anchor, 1, ",operation=read,fileio=(random,shared),threads=4", ",elapsed=2");
    std::fs::write(&job, text.replace("size=64k", "size=1m")).expect("job written");
    let result = run_ok(&mut cmd, &job, &json, &[]);
    let ops = &result["phases"][0]["file_ops"];
    assert!(ops["most_threads_on_one_file"].as_u64().expect("reported") >= 2, "a rank's threads shared: {ops}");
    let left = common::walk(&anchor);
    assert!(left.is_empty(), "the shared tree was removed at the end: {left:?}");
}

/// Ctrl-C on mpirun while both ranks write into the shared tree: every rank stops, the result is marked
/// interrupted, and no tree, lock or work directory is left in the anchor.
#[test]
fn ctrl_c_leaves_no_shared_tree() {
    use std::time::Duration;
    let Some(mut cmd) = common::mpirun("ctrl_c_leaves_no_shared_tree", 2) else { return };
    let (dir, anchor) = setup();
    let (job, json) = (dir.path().join("shared.vdb"), dir.path().join("r.json"));
    let text = shared_job(&anchor, 8, ",operation=write,fileio=random,threads=2", ",elapsed=60");
    std::fs::write(&job, text).expect("job written");
    cmd.arg(common::streamcap_path()).arg("run").arg("--job").arg(&job).arg("--json").arg(&json);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut running = common::Running(cmd.spawn().expect("mpirun starts"));
    common::wait_for_file_while_running(&mut running.0, &json, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(2500));
    let status = common::interrupt_and_wait(&mut running.0, Duration::from_secs(30));
    assert!(!status.success());
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
    assert_eq!(result["status"], "interrupted", "{result}");
    let left = common::walk(&anchor);
    assert!(left.is_empty(), "every rank removed its files and the last the tree: {left:?}");
}
