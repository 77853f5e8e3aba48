//! Data verification of file sets end to end (vdbench's `validate=yes` on fsd/fwd runs): every file the format
//! step and the workloads write carries verified blocks, every read and the final read-back check them, a kept
//! tree is checked again by `--verify-only` after one of its files was damaged by hand, and — through the FUSE
//! fault-injection filesystem (tests/faultfs, root only) — a bit flipped on its way to a file is caught.

mod common;
mod faultfs;

use std::path::Path;

use common::streamcap;
use faultfs::{Fault, FaultMount, Op, Rule};
use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
}

impl Run {
    fn text(&self) -> String {
        format!("exit {}\n{}{}", self.code, self.stdout, self.stderr)
    }

    /// (file, offset, kind) of every bad block listed.
    fn bad(&self) -> Vec<(String, u64, String)> {
        let blocks = self.json["verify"]["bad_blocks"].as_array().expect("a verify section");
        blocks
            .iter()
            .map(|b| {
                (b["file"].as_str().unwrap().into(), b["offset"].as_u64().unwrap(), b["kind"].as_str().unwrap().into())
            })
            .collect()
    }
}

/// `streamcap run TARGET ARGS --json …`.
fn run(target: &Path, args: &[&str]) -> Run {
    let out = tempfile::tempdir().expect("a directory for the result");
    let json = out.path().join("result.json");
    let output = streamcap().arg("run").arg(target).args(args).arg("--json").arg(&json).output().unwrap();
    Run {
        code: output.status.code().expect("exited"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        json: if json.exists() { common::read_json(&json) } else { Value::Null },
    }
}

/// A vdbench parameter file in `dir` with one fsd anchored at `anchor` and the fwd `fwd` (its operation and
/// sizes), formatted and run for `elapsed` seconds.
fn vdbench_job(dir: &Path, anchor: &Path, fsd: &str, fwd: &str, elapsed: u32) -> std::path::PathBuf {
    let job = dir.join("fs.vdb");
    let text = format!(
        "validate=yes\nfsd=fsd1,anchor={},{fsd}\nfwd=fwd1,fsd=fsd1,{fwd}\n\
         rd=rd1,fwd=fwd1,fwdrate=max,format=yes,elapsed={elapsed},interval=1\n",
        anchor.display()
    );
    std::fs::write(&job, text).unwrap();
    job
}

fn overwrite(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, offset).unwrap();
}

/// The "done when" for file sets: a vdbench file-system run with validate=yes checks what it wrote and
/// passes; kept with --keep, its tree is checked again by --verify-only (0 on sound data), and after three
/// bytes of one block of one file are overwritten by hand, --verify-only exits 1 naming that file, the
/// block's offset and `corrupted`.
#[test]
fn a_file_system_run_with_validate_passes_and_a_block_corrupted_in_its_kept_tree_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (target, jobs) = (dir.path().join("t"), tempfile::tempdir().unwrap());
    std::fs::create_dir(&target).unwrap();
    let fsd = "depth=1,width=2,files=3,size=64k";
    let fwd = "operation=read,rdpct=50,fileio=random,xfersize=(4k,50,8k,50),threads=2";
    let job = vdbench_job(jobs.path(), &target, fsd, fwd, 2);

    let written = run(&target, &["--keep", "--quiet", "--job", job.to_str().unwrap()]);
    assert_eq!(written.code, 0, "{}", written.text());
    let verify = &written.json["verify"];
    assert_eq!((verify["algorithm"].as_str(), verify["block_bytes"].as_u64()), (Some("crc32c"), Some(4096)));
    assert_eq!(verify["bad_count"], 0, "{verify}");
    assert_eq!(verify["pass_complete"], true, "{verify}");
    // Six files of sixteen 4 KiB blocks, all read back at the end, besides what the workload's reads checked.
    assert!(verify["blocks_checked"].as_u64().unwrap() >= 96, "{verify}");

    let clean = run(&target, &["--verify-only", "crc32c"]);
    assert_eq!(clean.code, 0, "{}", clean.text());
    assert_eq!(clean.json["verify"]["blocks_checked"], 96, "every block of the kept tree: {}", clean.text());

    let file = target.join(".streamcap/fileset-fsd1/vdb.1_2.dir/vdb_f0002.file");
    overwrite(&file, 3 * 4096 + 700, b"rot");
    let checked = run(&target, &["--verify-only", "crc32c"]);
    assert_eq!(checked.code, 1, "{}", checked.text());
    assert_eq!(checked.bad(), vec![(file.display().to_string(), 3 * 4096, "corrupted".to_string())]);
    assert!(checked.stdout.contains("corrupted — expected crc32c 0x"), "{}", checked.text());
}

/// FUSE: one write of the format step reaches the file with a bit flipped. The workload only reads, so the
/// flipped block stays as stored: the reads that meet it and the read-back at the end report exactly that
/// block, `corrupted`, and the run exits 1.
#[test]
fn a_bit_flipped_on_the_way_to_a_file_set_file_is_caught() {
    let Some(fs) = FaultMount::new("a_bit_flipped_on_the_way_to_a_file_set_file_is_caught") else { return };
    fs.add(Rule::new(Op::Write, Fault::FlipBit { byte: 5 * 4096 + 123, bit: 3 }).file("vdb_f0002.file").times(1));
    let jobs = tempfile::tempdir().unwrap();
    let job = vdbench_job(
        jobs.path(),
        &fs.point,
        "depth=1,width=1,files=4,size=64k,openflags=o_direct",
        "operation=read,fileio=random,xfersize=4k",
        2,
    );
    let r = run(&fs.point, &["--quiet", "--job", job.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.text());
    let flipped: Vec<_> = fs.injected().into_iter().filter(|i| matches!(i.fault, Fault::FlipBit { .. })).collect();
    assert_eq!(flipped.len(), 1, "{flipped:?}");
    let file = fs.point.join(".streamcap/fileset-fsd1/vdb.1_1.dir/vdb_f0002.file");
    assert_eq!(r.bad(), vec![(file.display().to_string(), flipped[0].offset + 5 * 4096, "corrupted".to_string())]);
    assert_eq!(r.json["verify"]["bad_count"], 1, "found by reads and the read-back, listed once");
    assert!(fs.leftovers().is_empty(), "{:?}", fs.leftovers());
}
