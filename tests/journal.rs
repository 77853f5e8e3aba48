//! Journaled runs end to end (`--journal`, vdbench journal=yes): a run killed with SIGKILL in the middle of its
//! writes leaves its data and its journal, and `--verify-only` checks the data against the journal with no
//! false alarm — blocks whose write was in flight may hold the new or the old data — while a block damaged
//! afterwards is found, also one that the journal says was in flight.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{streamcap, streamcap_path};
use serde_json::Value;

const BLOCK: u64 = 16 << 10;
const IN_FLIGHT: u8 = 0x80;

/// The only file called `name` in a work directory under `target/.streamcap`.
fn work_file(target: &Path, name: &str) -> Option<PathBuf> {
    let dirs = std::fs::read_dir(target.join(".streamcap")).ok()?;
    dirs.flatten().map(|d| d.path().join(name)).find(|p| p.is_file())
}

/// Blocks the journal says are written (not in flight).
fn written_blocks(map: &[u8]) -> Vec<usize> {
    map.iter().enumerate().filter(|(_, k)| **k != 0 && **k & IN_FLIGHT == 0).map(|(i, _)| i).collect()
}

/// `streamcap run TARGET --verify-only crc32c --json …`: exit code, stdout + stderr, the result.
fn verify_only(target: &Path) -> (i32, String, Value) {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let output =
        streamcap().arg("run").arg(target).args(["--verify-only", "crc32c", "--json"]).arg(&json).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().expect("exited"), text, common::read_json(&json))
}

fn overwrite(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, offset).unwrap();
}

/// The "done when" for journals: a vdbench run with journal=yes (random 16k reads and writes on an
/// 8 MiB lun, a minute long) is killed with SIGKILL once its journal holds 200 written blocks. `--verify-only`
/// then finds nothing wrong, whatever was in flight; after three bytes of a block the journal says is written
/// are overwritten, it exits 1 naming that block, `corrupted`.
#[test]
fn a_journaled_run_killed_mid_write_is_verified_against_its_journal_without_false_alarms() {
    let dir = tempfile::tempdir().unwrap();
    let (target, jobs) = (dir.path().join("t"), tempfile::tempdir().unwrap());
    std::fs::create_dir(&target).unwrap();
    let job = jobs.path().join("j.vdb");
    let lun = target.join("lun");
    let text = format!(
        "journal=yes\nsd=sd1,lun={},size=8m,openflags=o_direct\nwd=wd1,sd=sd1,xfersize=16k,rdpct=30\n\
         rd=rd1,wd=wd1,iorate=max,elapsed=60,interval=1\n",
        lun.display()
    );
    std::fs::write(&job, text).unwrap();
    let child = Command::new(streamcap_path())
        .args(["run", "--quiet", "--job"])
        .arg(&job)
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start streamcap");
    let mut run = common::Running(child);
    let give_up = Instant::now() + Duration::from_secs(120);
    let map = loop {
        if let Some(map) = work_file(&target, "verify.map").and_then(|m| std::fs::read(m).ok())
            && written_blocks(&map).len() >= 200
        {
            break map;
        }
        assert!(run.0.try_wait().unwrap().is_none(), "the run ended before its journal held 200 blocks");
        assert!(Instant::now() < give_up, "the journal never held 200 written blocks");
        std::thread::sleep(Duration::from_millis(20));
    };
    run.0.kill().expect("SIGKILL");
    run.0.wait().unwrap();
    assert_eq!(map.len(), 512, "one byte per 16 KiB block of the 8 MiB lun");

    let (code, text, result) = verify_only(&target);
    assert_eq!(code, 0, "{text}");
    assert_eq!(result["verify"]["bad_count"], 0, "{text}");
    assert!(result["verify"]["blocks_checked"].as_u64().unwrap() >= 200, "{text}");
    assert!(text.contains("were being written when the run ended"), "{text}");
    assert!(result["verify"]["in_flight"].is_u64(), "the result says how many: {}", result["verify"]);

    let map = std::fs::read(work_file(&target, "verify.map").unwrap()).unwrap();
    let block = *written_blocks(&map).first().expect("written blocks") as u64;
    overwrite(&work_file(&target, "lun").unwrap(), block * BLOCK + 9000, b"rot");
    let (code, text, result) = verify_only(&target);
    assert_eq!(code, 1, "{text}");
    let bad = &result["verify"]["bad_blocks"];
    assert_eq!(
        (bad[0]["offset"].as_u64(), bad[0]["kind"].as_str()),
        (Some(block * BLOCK), Some("corrupted")),
        "{text}"
    );
    assert_eq!(result["verify"]["bad_count"], 1, "{text}");
}

/// Recovery tells a write that was in flight from damage: a block whose journal entry says its write of
/// generation g was in flight may hold g (the write landed) or g − 1 (it did not), and a journal entry is
/// made to say so by hand here; a copy of another block there is still reported.
#[test]
fn a_block_in_flight_may_hold_its_old_or_new_data_but_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let written = streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "write", "--bs", "16k", "--size", "1M", "--verify", "crc32c", "--journal", "noflush"])
        .args(["--quiet"])
        .output()
        .unwrap();
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    let map_path = work_file(dir.path(), "verify.map").expect("the run kept its journal without --keep");
    let data = work_file(dir.path(), "data.0").expect("and its data");
    assert_eq!(std::fs::read(&map_path).unwrap(), vec![1; 64], "one sequential pass: generation 1 everywhere");

    // Block 3 written as generation 1; the journal says generation 2 was in flight there (the block holds the
    // old data: no error), and block 5 that its first write was (not checked: what it held before is not known,
    // as vdbench 5.04.05 does).
    overwrite(&map_path, 3, &[IN_FLIGHT | 2]);
    overwrite(&map_path, 5, &[IN_FLIGHT | 1]);
    let (code, text, result) = verify_only(dir.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("journal: 2 block(s) were being written"), "{text}");
    assert_eq!(result["verify"]["in_flight"], 2, "{}", result["verify"]);

    // A copy of block 7 in block 3: neither the old nor the new data of its write.
    let mut copy = vec![0u8; BLOCK as usize];
    use std::os::unix::fs::FileExt;
    std::fs::File::open(&data).unwrap().read_exact_at(&mut copy, 7 * BLOCK).unwrap();
    overwrite(&data, 3 * BLOCK, &copy);
    let (code, text, result) = verify_only(dir.path());
    assert_eq!(code, 1, "{text}");
    let bad = &result["verify"]["bad_blocks"][0];
    assert_eq!((bad["offset"].as_u64(), bad["kind"].as_str()), (Some(3 * BLOCK), Some("misdirected")), "{text}");
}

/// `--dry-run` says the run keeps a journal and how; `--journal` without `--verify` is refused; nothing is
/// created either way.
#[test]
fn the_plan_shows_the_journal_and_a_journal_needs_verify() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["run", "--rw", "write", "--bs", "16k", "--size", "1M", "--journal", "sync"];
    let plan = streamcap().args(base).arg(dir.path()).args(["--verify", "crc32c", "--dry-run"]).output().unwrap();
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(text.contains("journal (sync): every write recorded before and after it, each record flushed"), "{text}");
    let refused = streamcap().args(base).arg(dir.path()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--verify"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(common::entries(dir.path()).is_empty(), "nothing created");
}
