//! Data verification end to end: `--verify` runs stamp and check real files, a kept run (`--keep`) is checked
//! again with `--verify-only` after its data file was damaged by hand, and — through the FUSE fault-injection
//! filesystem (tests/faultfs, root only) — silent bit flips, lost writes and misdirected writes are each caught,
//! every one, with the right kind.

mod common;
mod faultfs;

use std::path::{Path, PathBuf};

use common::streamcap;
use faultfs::{Fault, FaultMount, Op, Rule};
use serde_json::Value;

const BLOCK: u64 = 64 << 10;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
}

/// `streamcap run TARGET ARGS --json …`.
fn run(target: &Path, args: &str) -> Run {
    let out = tempfile::tempdir().expect("a directory for the result");
    let json = out.path().join("result.json");
    let output =
        streamcap().arg("run").arg(target).args(args.split_whitespace()).arg("--json").arg(&json).output().unwrap();
    Run {
        code: output.status.code().expect("exited"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        json: if json.exists() { common::read_json(&json) } else { Value::Null },
    }
}

impl Run {
    fn bad(&self) -> Vec<(u64, String)> {
        let blocks = self.json["verify"]["bad_blocks"].as_array().expect("a verify section");
        let mut bad: Vec<(u64, String)> =
            blocks.iter().map(|b| (b["offset"].as_u64().unwrap(), b["kind"].as_str().unwrap().to_string())).collect();
        bad.sort();
        bad
    }

    fn text(&self) -> String {
        format!("exit {}\n{}{}", self.code, self.stdout, self.stderr)
    }
}

/// The work directory of the only kept run under `target`.
fn kept_dir(target: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(target.join(".streamcap")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn overwrite(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, offset).unwrap();
}

fn read_at(path: &Path, offset: u64, len: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    std::fs::File::open(path).unwrap().read_exact_at(&mut buf, offset).unwrap();
    buf
}

#[test]
fn a_block_corrupted_in_a_kept_run_is_named_by_verify_only() {
    // The "done when": write with --verify --keep, damage one block by hand, --verify-only exits 1
    // naming the block's offset and kind.
    let dir = tempfile::tempdir().unwrap();
    let written = run(dir.path(), "--rw write --bs 64k --size 16M --verify crc32c --keep");
    assert_eq!(written.code, 0, "{}", written.text());
    assert_eq!(written.json["verify"]["blocks_checked"], 256, "the run read back all it wrote");
    assert_eq!(written.json["verify"]["bad_count"], 0);
    let data = kept_dir(dir.path()).join("data.0");

    let clean = run(dir.path(), "--verify-only crc32c");
    assert_eq!((clean.code, clean.json["verify"]["bad_count"].as_u64()), (0, Some(0)), "{}", clean.text());

    overwrite(&data, 5 * BLOCK + 1000, b"rot");
    let before = std::fs::read(&data).unwrap();
    let checked = run(dir.path(), "--verify-only crc32c");
    assert_eq!(checked.code, 1, "{}", checked.text());
    assert_eq!(checked.bad(), vec![(5 * BLOCK, "corrupted".to_string())]);
    assert!(checked.stdout.contains(&format!("at offset {} ", 5 * BLOCK)), "{}", checked.text());
    assert!(checked.stdout.contains("corrupted — expected crc32c 0x"), "{}", checked.text());
    assert_eq!(std::fs::read(&data).unwrap(), before, "--verify-only writes nothing");

    // Asking for another algorithm than the run used, or a target without a kept run, is a usage error.
    let wrong = run(dir.path(), "--verify-only sha256");
    assert_eq!(wrong.code, 2, "{}", wrong.text());
    assert!(wrong.stderr.contains("--verify-only crc32c"), "{}", wrong.text());
    let empty = tempfile::tempdir().unwrap();
    let none = run(empty.path(), "--verify-only crc32c");
    assert_eq!(none.code, 2, "{}", none.text());
    assert!(none.stderr.contains("no kept run to verify"), "{}", none.text());
    assert!(common::entries(empty.path()).is_empty(), "nothing created");
}

#[test]
fn verify_only_tells_torn_lost_misdirected_and_stale_blocks_apart() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(run(dir.path(), "--rw write --bs 64k --size 4M --verify xxhash --keep").code, 0);
    let data = kept_dir(dir.path()).join("data.0");
    // Another run's block 3, for a stale block from elsewhere.
    let other = tempfile::tempdir().unwrap();
    assert_eq!(run(other.path(), "--rw write --bs 64k --size 4M --verify xxhash --keep").code, 0);
    let foreign = read_at(&kept_dir(other.path()).join("data.0"), 3 * BLOCK, BLOCK);

    overwrite(&data, 3 * BLOCK, &foreign);
    overwrite(&data, 9 * BLOCK, &vec![0u8; BLOCK as usize]);
    overwrite(&data, 11 * BLOCK + BLOCK / 2, &vec![0u8; BLOCK as usize / 2]);
    overwrite(&data, 20 * BLOCK, &read_at(&data, 2 * BLOCK, BLOCK));
    let checked = run(dir.path(), "--verify-only xxhash");
    assert_eq!(checked.code, 1, "{}", checked.text());
    let expect = [(3, "stale"), (9, "lost"), (11, "torn"), (20, "misdirected")];
    assert_eq!(checked.bad(), expect.map(|(b, k)| (b * BLOCK, k.to_string())).to_vec(), "{}", checked.text());
    let misdirected = &checked.json["verify"]["bad_blocks"][3];
    assert_eq!(misdirected["expected"], format!("the block for offset {} of {}", 20 * BLOCK, data.display()));
    assert!(misdirected["found"].as_str().unwrap().contains(&format!("for offset {} ", 2 * BLOCK)), "{misdirected}");
}

#[test]
fn verified_runs_find_nothing_wrong_on_sound_storage() {
    // Random writes and reads at depth, several workers, every algorithm: every check passes. Guards the
    // in-flight claims (two writes in flight on one block could land in either order and look stale).
    let dir = tempfile::tempdir().unwrap();
    for (algorithm, args) in [
        ("crc32c", "--rw randrw --bs 4k --size 8M --iodepth 16 --jobs 3 --io-size 24M"),
        ("xxhash", "--rw randwrite --bs 16k --size 8M --iodepth 8 --jobs 2 --io-size 16M --verify-backlog 7"),
        ("sha256", "--rw write --bs 128k --size 8M --jobs 3"),
        ("pattern", "--rw randrw --bs 8k --size 4M --engine sync --io-size 4M"),
    ] {
        let r = run(dir.path(), &format!("{args} --verify {algorithm}"));
        assert_eq!(r.code, 0, "{algorithm}: {}", r.text());
        let v = &r.json["verify"];
        assert_eq!((v["bad_count"].as_u64(), v["algorithm"].as_str()), (Some(0), Some(algorithm)), "{v}");
        assert!(v["blocks_checked"].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v["pass_complete"], true);
        assert!(common::entries(dir.path()).is_empty(), "nothing left behind");
    }
}

#[test]
fn verification_that_cannot_work_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        ("--rw read --bs 64k --size 4M --verify crc32c", "--verify-only"),
        ("--rw write --bs 4k-64k --size 4M --verify crc32c", "fixed block sizes"),
        ("--rw write --size 4M --verify-backlog 4", "--verify"),
        ("--rw write --size 4M --verify md5", "crc32c, xxhash, sha256 or pattern"),
    ] {
        let r = run(dir.path(), args);
        assert_eq!(r.code, 2, "{args}: {}", r.text());
        assert!(r.stderr.contains(says), "{args}: {}", r.text());
        assert!(common::entries(dir.path()).is_empty(), "{args}: nothing created");
    }
}

/// Offsets of the 64 KiB writes the filesystem injected `fault` into.
fn injected_at(fs: &FaultMount, fault: fn(&Fault) -> bool) -> Vec<u64> {
    let mut offsets: Vec<u64> = fs.injected().into_iter().filter(|i| fault(&i.fault)).map(|i| i.offset).collect();
    offsets.sort();
    offsets
}

#[test]
fn silent_bit_flips_on_write_are_all_caught_as_corrupted() {
    for algorithm in ["crc32c", "xxhash", "sha256", "pattern"] {
        let Some(fs) = FaultMount::new("silent_bit_flips_on_write") else { return };
        // Five writes stored with one bit flipped, somewhere in the payload, in the header or in a tag.
        for (n, byte) in [(3u64, 30_000u32), (9, 40), (17, 4097), (40, 65_535), (51, 5)] {
            fs.add(Rule::new(Op::Write, Fault::FlipBit { byte, bit: (n % 8) as u8 }).file("data.0").at(n * BLOCK));
        }
        let r = run(&fs.point, &format!("--rw write --bs 64k --size 4M --verify {algorithm}"));
        assert_eq!(r.code, 1, "{algorithm}: {}", r.text());
        let flipped = injected_at(&fs, |f| matches!(f, Fault::FlipBit { .. }));
        assert_eq!(flipped.len(), 5);
        assert_eq!(r.bad(), flipped.iter().map(|&o| (o, "corrupted".to_string())).collect::<Vec<_>>(), "{algorithm}");
        assert!(fs.leftovers().is_empty(), "{:?}", fs.leftovers());
    }
}

#[test]
fn lost_and_misdirected_writes_are_all_caught_with_their_kind() {
    let Some(fs) = FaultMount::new("lost_and_misdirected_writes") else { return };
    for n in [5u64, 30, 61] {
        fs.add(Rule::new(Op::Write, Fault::Lose).file("data.0").len(BLOCK).at(n * BLOCK));
    }
    // Written eight blocks back (beyond the four in flight), over a block already written: there it is
    // misdirected, and its own place
    // never received it (lost).
    for n in [12u64, 44] {
        fs.add(
            Rule::new(Op::Write, Fault::Misdirect { delta: -8 * BLOCK as i64 }).file("data.0").len(BLOCK).at(n * BLOCK),
        );
    }
    let r = run(&fs.point, "--rw write --bs 64k --size 4M --verify crc32c --engine io_uring --iodepth 4");
    assert_eq!(r.code, 1, "{}", r.text());
    let lost = injected_at(&fs, |f| *f == Fault::Lose);
    let misdirected = injected_at(&fs, |f| matches!(f, Fault::Misdirect { .. }));
    assert_eq!((lost.len(), misdirected.len()), (3, 2));
    let mut expect: Vec<(u64, String)> = lost.iter().map(|&o| (o, "lost".to_string())).collect();
    for &o in &misdirected {
        expect.push((o, "lost".into()));
        expect.push((o - 8 * BLOCK, "misdirected".into()));
    }
    expect.sort();
    assert_eq!(r.bad(), expect, "{}", r.text());
    assert!(fs.leftovers().is_empty(), "{:?}", fs.leftovers());
}

#[test]
fn a_lost_rewrite_is_stale_and_the_backlog_finds_it_during_the_phase() {
    // Random writes over 64 blocks, each written many times; the second write to block 7 is lost, so block 7
    // keeps its first generation. Read back after every write (--verify-backlog 1), it is found at once.
    let Some(fs) = FaultMount::new("a_lost_rewrite_is_stale") else { return };
    fs.add(Rule::new(Op::Write, Fault::Lose).file("data.0").len(BLOCK).at(7 * BLOCK).skip(1).times(1));
    let r = run(&fs.point, "--rw randwrite --bs 64k --size 4M --io-size 64M --verify sha256 --verify-backlog 1");
    assert_eq!(r.code, 1, "{}", r.text());
    assert_eq!(fs.injected().len(), 1, "the rewrite was lost");
    assert_eq!(r.bad(), vec![(7 * BLOCK, "stale".to_string())], "{}", r.text());
    let found = r.json["verify"]["bad_blocks"][0]["found"].as_str().unwrap();
    assert!(found.starts_with("an intact block of generation "), "{found}");
    // The read-backs were reads of the phase: more reads than the 1,024 writes' worth of none.
    assert!(r.json["phases"][0]["read"]["ops"].as_u64().unwrap() >= 1000, "{}", r.json["phases"][0]["read"]);
    assert!(fs.leftovers().is_empty(), "{:?}", fs.leftovers());
}

#[test]
fn a_bit_flipped_on_the_way_back_is_caught_by_the_read_that_saw_it() {
    // A job that writes, then reads: two reads come back with a flipped bit (the stored data is sound, so the
    // read-back pass afterwards finds them good).
    let Some(fs) = FaultMount::new("a_bit_flipped_on_the_way_back") else { return };
    let job = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        job.path(),
        "[[phase]]\nrw = \"write\"\nbs = \"64k\"\nsize = \"4M\"\n\n[[phase]]\nrw = \"read\"\nbs = \"64k\"\nsize = \"4M\"\n",
    )
    .unwrap();
    fs.add(Rule::new(Op::Read, Fault::FlipBit { byte: 1234, bit: 0 }).file("data.0").len(BLOCK).skip(10).times(2));
    let r = run(&fs.point, &format!("--job {} --verify pattern", job.path().display()));
    assert_eq!(r.code, 1, "{}", r.text());
    let flipped = injected_at(&fs, |f| matches!(f, Fault::FlipBit { .. }));
    assert_eq!(flipped.len(), 2);
    assert_eq!(r.bad(), flipped.iter().map(|&o| (o, "corrupted".to_string())).collect::<Vec<_>>());
    assert_eq!(r.json["phases"][1]["errors"]["count"], 0, "the reads themselves succeeded");
    assert!(fs.leftovers().is_empty(), "{:?}", fs.leftovers());
}

#[test]
fn the_sample_job_checks_every_block_it_reads() {
    // examples/jobs/verify-write-then-random-read.toml: verify and verify-backlog as TOML keys; every read (the
    // write phase's read-backs, the random reads, the final read-back) checks exactly one 64 KiB block.
    let dir = tempfile::tempdir().unwrap();
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs/verify-write-then-random-read.toml");
    let r = run(dir.path(), &format!("--job {} --size 8M --runtime 1s", job.display()));
    assert_eq!(r.code, 0, "{}", r.text());
    assert_eq!(r.json["config"]["verify"]["backlog"], 64);
    let reads = |phase: usize| r.json["phases"][phase]["read"]["ops"].as_u64().unwrap_or(0);
    // --runtime applies to the write phase too, which then wraps around its file: completed writes are read
    // back in rounds of at least 64 (those completing while a round is read back join the next; the last
    // round, at the deadline, is not read back).
    let writes = r.json["phases"][0]["write"]["ops"].as_u64().unwrap();
    assert!(reads(0) >= 64 && reads(0) <= writes, "{} reads, {writes} writes", reads(0));
    assert!(reads(1) > 0);
    assert_eq!(r.json["verify"]["blocks_checked"].as_u64().unwrap(), 128 + reads(0) + reads(1), "{}", r.json["verify"]);
    assert_eq!(r.json["verify"]["bad_count"], 0);
}

#[test]
fn a_read_phase_after_a_write_cut_short_keeps_what_the_write_verified() {
    // The write phase's rate and runtime let it write only part of its file; the read phase after it needs the
    // whole file filled. The fill must leave the blocks the write phase wrote (and the verifier expects) alone:
    // refilling them made every one of them look like a lost write (seen under load, when a 1 s write phase
    // did not get round its file).
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(
        &job,
        "[global]\nsize = \"8M\"\nverify = \"crc32c\"\n\n\
         [[phase]]\nrw = \"write\"\nbs = \"64k\"\nrate = \"1M\"\nruntime = \"1s\"\n\n\
         [[phase]]\nrw = \"randread\"\nbs = \"64k\"\nruntime = \"1s\"\n",
    )
    .unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let r = run(&target, &format!("--job {}", job.display()));
    assert_eq!(r.code, 0, "{}", r.text());
    let writes = r.json["phases"][0]["write"]["ops"].as_u64().unwrap();
    assert!(writes > 0 && writes < 128, "the write phase covers part of its 128 blocks: {writes}");
    assert_eq!(r.json["verify"]["bad_count"], 0, "{}", r.json["verify"]);
    // Every block the write phase wrote is still checked at the end (the refilled ones are pre-fill data and
    // not checked): the final read-back checks exactly those.
    let reads = r.json["phases"][1]["read"]["ops"].as_u64().unwrap();
    let checked = r.json["verify"]["blocks_checked"].as_u64().unwrap();
    assert!(checked >= writes, "{checked} blocks checked, {writes} written");
    assert!(checked <= writes + reads + writes, "{checked} blocks checked, {writes} written, {reads} read");
}

#[test]
fn verify_only_from_checks_the_kept_run_it_names() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(run(dir.path(), "--rw write --bs 64k --size 4M --verify pattern --keep").code, 0);
    let older = kept_dir(dir.path());
    // Kept runs are told apart by the start time in their names: make sure the next one is a second later.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(run(dir.path(), "--rw write --bs 64k --size 4M --verify pattern --keep").code, 0);
    overwrite(&older.join("data.0"), 7 * BLOCK + 100, b"x");
    let latest = run(dir.path(), "--verify-only pattern");
    assert_eq!(latest.code, 0, "the most recent kept run is sound: {}", latest.text());
    assert_ne!(latest.json["verify"]["from"], older.display().to_string());
    let named = run(dir.path(), &format!("--verify-only pattern --from {}", older.display()));
    assert_eq!(named.code, 1, "{}", named.text());
    assert_eq!(named.bad(), vec![(7 * BLOCK, "corrupted".to_string())]);
    assert_eq!(named.json["verify"]["from"], older.display().to_string());
}
