//! vdbench's rd `maxdataread=` and `maxdatawritten=` run for real on files in a temporary directory: the rd ends
//! once that much is read (or written) after the warm-up, long before its `elapsed=`.

mod common;

use std::path::Path;

use common::streamcap;
use common::vdbench::{run_file as run, stamps_of as stamps};

fn bytes(phase: &serde_json::Value, direction: &str) -> u64 {
    phase[direction]["bytes"].as_u64().unwrap_or(0)
}

/// maxdataread=1m on 4 KiB random I/O, half reads: exactly 256 reads are measured, and the writes beside them
/// are about as many (they are not bounded); the rd ends long before its 600 s.
#[test]
fn maxdataread_ends_the_rd_once_that_much_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=8m,threads=4\nwd=wd1,sd=sd1,xfersize=4k,rdpct=50\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdataread=1m\n";
    let result = run(dir.path(), text, &[]);
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(bytes(phase, "read"), 1 << 20, "{}", phase["read"]);
    let written = bytes(phase, "write");
    assert!((1 << 19..3 << 19).contains(&written), "{written} bytes written beside 1 MiB read");
    assert!(phase["duration_s"].as_f64().unwrap() < 600.0);
    assert!(common::entries(dir.path()).iter().all(|e| e == "job.vdb" || e == "r.json"), "data left behind");
}

/// maxdatawritten=0.25 is a quarter of the sd's 8 MiB: 2 MiB written, in 64 KiB writes, reads unbounded.
#[test]
fn maxdatawritten_below_100_is_a_multiple_of_the_sds_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=8m\nwd=wd1,sd=sd1,xfersize=64k,rdpct=70\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdatawritten=0.25\n";
    let phase = &run(dir.path(), text, &[])["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(bytes(phase, "write"), 2 << 20, "{}", phase["write"]);
    assert!(bytes(phase, "read") > 2 << 20, "{}", phase["read"]);
}

/// Two sds, each its own worker: the rd's 2 MiB of writes are shared by what each is expected to write, and
/// together they write exactly that.
#[test]
fn maxdatawritten_over_several_sds_bounds_the_rd_as_a_whole() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=4m\nsd=sd2,lun=DIR/lun2,size=4m\nwd=wd1,sd=sd*,xfersize=4k,rdpct=50\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdatawritten=2m\n";
    let phase = &run(dir.path(), text, &[])["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(bytes(phase, "write"), 2 << 20, "{}", phase["write"]);
}

/// A workload that reads nothing beside one bounded by maxdataread would run on to elapsed=, where vdbench
/// stops the whole rd: refused before any I/O, with the reason.
#[test]
fn maxdataread_with_a_workload_that_never_reads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "sd=sd1,lun={0}/lun1,size=4m\nsd=sd2,lun={0}/lun2,size=4m\nwd=wd1,sd=sd1,rdpct=100\n\
         wd=wd2,sd=sd2,rdpct=0\nrd=rd1,wd=wd*,iorate=max,elapsed=10,interval=1,maxdataread=1m\n",
        dir.path().display()
    );
    common::refused_dry_run(dir.path(), "job.vdb", &text, "the workload on sd2 reads nothing");
}

/// formatsds=yes: before the rd, a phase writes the sd from start to end once, in formatxfersize= transfers;
/// the rd's reads then find it written (streamcap does not lay the file out again): block b of the kept lun
/// holds format write b / 16, and the rd wrote nothing.
#[test]
fn formatsds_writes_every_block_of_the_sd_once_before_the_first_rd() {
    let dir = tempfile::tempdir().unwrap();
    let text = "formatsds=yes\nformatxfersize=64k\nsd=sd1,lun=DIR/lun1,size=4m\n\
                wd=wd1,sd=sd1,xfersize=4k,rdpct=100\nrd=rd1,wd=wd1,iorate=max,elapsed=2,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    let (format, rd) = (&result["phases"][0], &result["phases"][1]);
    assert_eq!(format["name"], "SD_format");
    assert_eq!(format["status"], "completed");
    assert_eq!((format["write"]["ops"].as_u64(), bytes(format, "write")), (Some(64), 4 << 20), "{}", format["write"]);
    assert_eq!(bytes(format, "read"), 0);
    assert_eq!(rd["name"], "rd1");
    assert!(bytes(rd, "read") > 0 && bytes(rd, "write") == 0, "{} {}", rd["read"], rd["write"]);
    let found = stamps(dir.path(), "lun1");
    let expected: Vec<(u64, u64)> = (0..1024).map(|b| (b * 4096, b / 16)).collect();
    assert_eq!(found, expected);
}

/// formatsds=yes over two sds of different sizes, with vdbench's default 128 KiB transfers: each lun is written
/// whole (every 4 KiB block carries its own offset), 4 MiB + 8 MiB in all.
#[test]
fn formatsds_writes_each_sd_the_rds_use() {
    let dir = tempfile::tempdir().unwrap();
    let text = "formatsds=yes\nsd=sd1,lun=DIR/lun1,size=4m\nsd=sd2,lun=DIR/lun2,size=8m\n\
                wd=wd1,sd=sd*,xfersize=4k,rdpct=100\nrd=rd1,wd=wd1,iorate=max,elapsed=2,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    let format = &result["phases"][0];
    assert_eq!(format["status"], "completed");
    assert_eq!((format["write"]["ops"].as_u64(), bytes(format, "write")), (Some(96), 12 << 20), "{}", format["write"]);
    for (lun, blocks) in [("lun1", 1024), ("lun2", 2048)] {
        let offsets: Vec<u64> = stamps(dir.path(), lun).iter().map(|s| s.0).collect();
        assert_eq!(offsets, (0..blocks).map(|b| b * 4096).collect::<Vec<u64>>(), "{lun}");
    }
}

/// sd count=(start,n): one sd record standing for three, sd0…sd2 on the numbered luns DIR/lun%02d; each writes
/// its lun once (seekpct=eof), so every lun is used and written whole.
#[test]
fn sd_count_stands_for_numbered_sds_and_every_lun_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd,lun=DIR/lun%02d,size=1m,count=(0,3)\nwd=wd1,sd=sd*,xfersize=64k,rdpct=0,seekpct=eof\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert_eq!(bytes(phase, "write"), 3 << 20, "{}", phase["write"]);
    for lun in ["lun00", "lun01", "lun02"] {
        let offsets: Vec<u64> = stamps(dir.path(), lun).iter().map(|s| s.0).collect();
        assert_eq!(offsets, (0..256).map(|b| b * 4096).collect::<Vec<u64>>(), "{lun}");
    }
}

/// The sizes of the tree's files under `dir` (vdbench's names, `vdb_f0001.file` …), recursively.
fn file_sizes(dir: &Path) -> Vec<u64> {
    let mut sizes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            sizes.extend(file_sizes(&entry.path()));
        } else if entry.file_name().to_string_lossy().starts_with("vdb_f") {
            sizes.push(meta.len());
        }
    }
    sizes
}

/// fsd sizes=(64k,0): vdbench's average, each file drawn evenly between 32 KiB and 96 KiB and rounded to whole
/// KiB; the 400 files formatted average 64 KiB (the draw's standard error is under 1 KiB) and take many sizes.
#[test]
fn fsd_sizes_around_an_average_are_drawn_as_vdbench_draws_them() {
    let dir = tempfile::tempdir().unwrap();
    let text = "fsd=fsd1,anchor=DIR,depth=1,width=2,files=200,sizes=(64k,0)\nfwd=fwd1,fsd=fsd1,operation=read\n\
                rd=rd1,fwd=fwd1,fwdrate=max,format=yes,elapsed=2,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    assert_eq!(result["phases"][0]["status"], "completed");
    let sizes = file_sizes(&dir.path().join(".streamcap/fileset-fsd1"));
    assert_eq!(sizes.len(), 400);
    assert!(sizes.iter().all(|s| (32 << 10..=96 << 10).contains(s) && s % 1024 == 0), "{sizes:?}");
    let mean = sizes.iter().sum::<u64>() as f64 / 400.0 / 1024.0;
    assert!((61.0..=67.0).contains(&mean), "mean {mean} KiB");
    let distinct: std::collections::BTreeSet<u64> = sizes.iter().copied().collect();
    assert!(distinct.len() > 40, "{} sizes", distinct.len());
}

/// fwd=format: the format step runs with its threads and transfer size (the dry run says so), formats every
/// file whole, and is no workload of the rd (`fwd=*` runs fwd1 alone: it only reads).
#[test]
fn fwd_format_sets_the_format_step_and_runs_no_workload() {
    let dir = tempfile::tempdir().unwrap();
    let text = "fsd=fsd1,anchor=DIR,depth=1,width=1,files=8,size=64k\nfwd=format,threads=2,xfersize=16k\n\
                fwd=fwd1,fsd=fsd1,operation=read,xfersize=4k\nrd=rd1,fwd=*,fwdrate=max,format=yes,elapsed=2,interval=1\n";
    let job = dir.path().join("job.vdb");
    std::fs::write(&job, text.replace("DIR", &dir.path().display().to_string())).unwrap();
    let out = streamcap().args(["run", "--dry-run", "--job"]).arg(&job).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("the format step writes with 2 threads, in transfers of 16 KiB"), "{stdout}");
    assert!(stdout.contains("workload fwd1") && !stdout.contains("workload format"), "{stdout}");
    let result = run(dir.path(), text, &["--keep"]);
    let phase = &result["phases"][0];
    assert_eq!(phase["status"], "completed");
    assert!(bytes(phase, "read") > 0 && bytes(phase, "write") == 0, "{} {}", phase["read"], phase["write"]);
    let sizes = file_sizes(&dir.path().join(".streamcap/fileset-fsd1"));
    assert_eq!(sizes, vec![64 << 10; 8]);
}
