//! vdbench's raw access shapes run for real on files in a temporary directory: `seekpct=eof` ends after one
//! pass of each lun, `stride=` skips forward by amounts within its bounds, `hotband=` keeps the I/O in its band
//! and crowds it at the band's start, and `concatenatesds=yes` runs several luns as one.

mod common;

use std::path::Path;

use common::streamcap;
use common::vdbench::{kept_file, run_file as run, stamps_of};

/// seekpct=eof: sequential writes that end at the end of the lun, long before elapsed=: operations × xfersize is
/// the lun's size, every byte once.
#[test]
fn seekpct_eof_ends_after_one_pass_of_the_lun() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=8m,threads=4\nwd=wd1,sd=sd1,xfersize=64k,rdpct=0,seekpct=eof\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(phase["write"]["ops"].as_u64(), Some(128), "{}", phase["write"]);
    assert_eq!(phase["write"]["bytes"].as_u64(), Some(8 << 20), "{}", phase["write"]);
    assert!(phase["duration_s"].as_f64().unwrap() < 600.0);
    // Nothing before or after the pass: block b of the kept lun holds write b / 16, in order, written once (a
    // warm-up before the measured pass would have left later write numbers).
    let numbers: Vec<u64> = stamps(dir.path()).iter().map(|s| s.1).collect();
    assert_eq!(numbers, (0..2048).map(|b| b / 16).collect::<Vec<_>>());
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

fn stamps(dir: &Path) -> Vec<(u64, u64)> {
    stamps_of(dir, "lun1")
}

/// The offsets of the writes of the raw rd `text` (with `MAXDATA` standing for its maxdata=), by write number:
/// streamcap lays the lun out before random writes, so they are the blocks whose stamp differs from a run of the
/// same rd that stopped after its first write (which is missed, as is any write stamped as the layout stamps it).
fn writes_in_order(text: &str, maxdata: &str) -> std::collections::BTreeMap<u64, u64> {
    let (laid_out, written) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // No warm-up: its writes would come before the measured ones.
    run(laid_out.path(), &text.replace("MAXDATA", "4k"), &["--keep", "--ramp", "0s"]);
    run(written.path(), &text.replace("MAXDATA", maxdata), &["--keep", "--ramp", "0s"]);
    let (before, after) = (stamps(laid_out.path()), stamps(written.path()));
    assert_eq!(before.len(), after.len());
    let mut writes = std::collections::BTreeMap::new();
    for (b, (&was, &(offset, counter))) in before.iter().zip(&after).enumerate() {
        assert_eq!(offset, b as u64 * 4096, "every block carries its own offset");
        if was != (offset, counter) {
            assert!(writes.insert(counter, offset).is_none(), "write {counter} found twice");
        }
    }
    writes
}

/// stride=(8k,16k) with 4 KiB writes: the first at the start of the lun, each next one 8 or 12 KiB past the end of
/// the one before (vdbench's min plus a whole number of transfers below max − min), 256 writes in all (maxdata=1m).
#[test]
fn stride_writes_skip_forward_by_amounts_within_its_bounds() {
    let text = "sd=sd1,lun=DIR/lun1,size=16m\nwd=wd1,sd=sd1,xfersize=4k,rdpct=0,stride=(8k,16k)\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=MAXDATA\n";
    let writes = writes_in_order(text, "1m");
    // Write 0 is at offset 0 in chunk 0, stamped as the layout stamps it; 256 × 14 KiB on average stays inside
    // the 16 MiB, so no write lands on another.
    assert_eq!(writes.keys().copied().collect::<Vec<_>>(), (1..256).collect::<Vec<_>>());
    let offsets: Vec<u64> = std::iter::once(0).chain(writes.values().copied()).collect();
    let gaps: std::collections::BTreeSet<u64> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps.into_iter().collect::<Vec<_>>(), [12288, 16384], "4 KiB written, then 8 or 12 KiB skipped");
}

/// hotband=(25,75) on a 64 MiB lun, 2,048 random 4 KiB writes: every write inside the band (16–48 MiB), and
/// crowded at its start as vdbench's curve crowds them (folded into a 32 MiB band, 34 % of the draws fall in its
/// first MiB and 28 % in its second half: blocks written per block there about 5 to 1, counting a block once).
#[test]
fn hotband_writes_stay_in_the_band_and_crowd_at_its_start() {
    let text = "sd=sd1,lun=DIR/lun1,size=64m\nwd=wd1,sd=sd1,xfersize=4k,rdpct=0,hotband=(25,75)\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=MAXDATA\n";
    let blocks: Vec<u64> = writes_in_order(text, "8m").values().map(|offset| offset / 4096).collect();
    let (band_start, band_end) = (16 * 256, 48 * 256);
    assert!(blocks.iter().all(|b| (band_start..band_end).contains(b)), "a write outside the band");
    let density =
        |from: u64, to: u64| blocks.iter().filter(|b| (from..to).contains(*b)).count() as f64 / (to - from) as f64;
    let (first_mib, second_half) = (density(band_start, band_start + 256), density(band_start + 16 * 256, band_end));
    assert!(
        first_mib > 3.0 * second_half,
        "first MiB {first_mib:.3} of its blocks written, second half {second_half:.3}"
    );
    assert!(second_half > 0.03, "the folded curve puts an even floor under the whole band: {second_half:.3}");
}

/// concatenatesds=yes: two 4 MiB sds are one 8 MiB lun of the wd. seekpct=eof writes through lun1 and then lun2,
/// one pass (write n of 64 KiB at 64 KiB × n of the two laid end to end), with the wd's threads; random writes
/// land on both.
#[test]
fn concatenated_sds_run_as_one_lun() {
    let dir = tempfile::tempdir().unwrap();
    let sds = "concatenatesds=yes\nsd=default,size=4m\nsd=sd1,lun=DIR/lun1\nsd=sd2,lun=DIR/lun2\n";
    let text = format!(
        "{sds}wd=wd1,sd=(sd1,sd2),threads=4,xfersize=64k,rdpct=0,seekpct=eof\n\
         rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n"
    );
    let result = run(dir.path(), &text, &["--keep"]);
    let phase = &result["phases"][0];
    assert_eq!(phase["write"]["ops"].as_u64(), Some(128), "{}", phase["write"]);
    assert_eq!(result["config"]["phases"][0]["iodepth"].as_u64(), Some(4), "the wd's threads");
    let numbers: Vec<u64> = ["lun1", "lun2"].iter().flat_map(|l| stamps_of(dir.path(), l)).map(|s| s.1).collect();
    assert_eq!(numbers, (0..2048).map(|b| b / 16).collect::<Vec<_>>());

    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{sds}wd=wd1,sd=(sd1,sd2),threads=4,xfersize=4k,rdpct=0\nrd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,\
         maxdata=1m\n"
    );
    let result = run(dir.path(), &text, &["--keep", "--ramp", "0s"]);
    assert_eq!(result["phases"][0]["write"]["ops"].as_u64(), Some(256));
    // Laid out in 1 MiB chunks stamped 0–7 (both luns), so a write numbered 8 or more shows where it landed.
    for lun in ["lun1", "lun2"] {
        let written = stamps_of(dir.path(), lun).iter().filter(|s| s.1 >= 8).count();
        assert!(written > 64, "{lun}: {written} of the 256 random writes");
    }
}

/// The blocks of the kept lun `name` written by a random phase of at most 4,096 writes after the layout: laid out
/// in 1 MiB chunks stamped 0–31 (32 MiB in all), so a write numbered 32 or more shows where it landed.
fn written_blocks(dir: &Path, name: &str) -> Vec<u64> {
    let stamps = stamps_of(dir, name);
    (0..stamps.len() as u64).filter(|&b| stamps[b as usize].1 >= 32).collect()
}

/// Random 4 KiB writes over sds of 8 and 24 MiB: laid end to end, each block once per pass (4,096 writes, half
/// the 32 MiB), so each lun has about half its blocks written — spread by size, not half the writes on each
/// (then lun1 would have all of its blocks written and lun2 a third). With range=(50,100), the concatenation's
/// second half: only lun2's blocks from 8 to 24 MiB.
#[test]
fn concatenated_sds_of_different_sizes_spread_by_size_and_a_range_is_of_the_whole() {
    let text = |range: &str| {
        format!(
            "concatenatesds=yes\nsd=sd1,lun=DIR/lun1,size=8m\nsd=sd2,lun=DIR/lun2,size=24m\n\
             wd=wd1,sd=(sd1,sd2),threads=4,xfersize=4k,rdpct=0{range}\n\
             rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=16m\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let result = run(dir.path(), &text(""), &["--keep", "--ramp", "0s"]);
    assert_eq!(result["phases"][0]["write"]["ops"].as_u64(), Some(4096));
    let (lun1, lun2) = (written_blocks(dir.path(), "lun1"), written_blocks(dir.path(), "lun2"));
    assert_eq!(kept_file(dir.path(), "lun2").len(), 24 << 20, "each lun at its own size");
    let (part1, part2) = (lun1.len() as f64 / 2048.0, lun2.len() as f64 / 6144.0);
    assert!((0.4..0.6).contains(&part1) && (0.4..0.6).contains(&part2), "lun1 {part1:.3}, lun2 {part2:.3}");

    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &text(",range=(50,100)"), &["--keep", "--ramp", "0s"]);
    assert_eq!(written_blocks(dir.path(), "lun1"), Vec::<u64>::new(), "nothing in the first half");
    let lun2 = written_blocks(dir.path(), "lun2");
    assert!(lun2.iter().all(|b| (2048..6144).contains(b)), "lun2 from 8 MiB on: {:?}", lun2.first());
    assert!(lun2.len() > 4000, "the second half's blocks each written once: {}", lun2.len());
}

/// hotband=(25,75) of sds of 8 and 24 MiB is 8–24 MiB of the concatenation: lun2's first 16 MiB, crowded at
/// its start (the band's) as vdbench's curve crowds it.
#[test]
fn a_hot_band_of_part_of_concatenated_sds_is_part_of_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let text = "concatenatesds=yes\nsd=sd1,lun=DIR/lun1,size=8m\nsd=sd2,lun=DIR/lun2,size=24m\n\
                wd=wd1,sd=(sd1,sd2),threads=4,xfersize=4k,rdpct=0,hotband=(25,75)\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=8m\n";
    run(dir.path(), text, &["--keep", "--ramp", "0s"]);
    assert_eq!(written_blocks(dir.path(), "lun1"), Vec::<u64>::new(), "the band starts at lun2");
    let blocks = written_blocks(dir.path(), "lun2");
    assert!(blocks.iter().all(|b| *b < 4096), "a write past the band's end (16 MiB into lun2)");
    let density =
        |from: u64, to: u64| blocks.iter().filter(|b| (from..to).contains(*b)).count() as f64 / (to - from) as f64;
    let (first_mib, second_half) = (density(0, 256), density(2048, 4096));
    assert!(first_mib > 3.0 * second_half, "first MiB {first_mib:.3}, second half {second_half:.3}");
}

/// Luns in two other directories (vdbench's example2 names several devices): with a directory as the target,
/// each sd runs as a file of its lun's name in streamcap's work directory there; the luns are not touched.
#[test]
fn luns_elsewhere_run_as_files_in_the_target_directory() {
    let (a, b, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let job = target.path().join("job.vdb");
    std::fs::write(
        &job,
        format!(
            "sd=sd1,lun={}/lun1,size=4m\nsd=sd2,lun={}/lun2,size=4m\nwd=wd1,sd=sd*,xfersize=64k,rdpct=0,seekpct=eof\n\
             rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n",
            a.path().display(),
            b.path().display()
        ),
    )
    .unwrap();
    let dry = streamcap().arg("run").arg(target.path()).arg("--job").arg(&job).arg("--dry-run").output().unwrap();
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&dry.stdout), String::from_utf8_lossy(&dry.stderr));
    assert!(said.contains("in the target given"), "{said}");
    let json = target.path().join("r.json");
    let out = streamcap()
        .args(["run", "--quiet", "--keep"])
        .arg(target.path())
        .arg("--job")
        .arg(&job)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(common::read_json(&json)["phases"][0]["write"]["bytes"].as_u64(), Some(8 << 20));
    for lun in ["lun1", "lun2"] {
        assert_eq!(kept_file(target.path(), lun).len(), 4 << 20, "{lun} in the target's work directory");
    }
    assert!(common::entries(a.path()).is_empty() && common::entries(b.path()).is_empty(), "the luns' places untouched");
}
