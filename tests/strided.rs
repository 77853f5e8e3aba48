//! Strided zones (fio zonemode=strided, `[phase.strided]`): a kept run's data file shows which 64 KiB blocks
//! were written — the first `size` bytes of every `range` + `skip`, and nothing in between.

mod common;

use std::path::Path;

use common::streamcap;

/// The KiB offsets of the 64 KiB blocks of the kept data file that hold anything but zeros.
fn written_blocks(target: &Path, args: &[&str]) -> Vec<usize> {
    let out = streamcap().arg("run").arg(target).args(args).args(["--keep", "--quiet"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = std::fs::read_dir(target.join(".streamcap")).unwrap().next().unwrap().unwrap().path();
    let file = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with(".streamcap"))
        .expect("a data file");
    let bytes = std::fs::read(file).unwrap();
    (0..bytes.len())
        .step_by(65536)
        .filter(|&at| bytes[at..at + 65536].iter().any(|&b| b != 0))
        .map(|at| at / 1024)
        .collect()
}

/// Every 1 MiB: the first 256 KiB (four 64 KiB blocks) over an 8 MiB file.
fn every_mib_the_first_quarter() -> Vec<usize> {
    (0..8).flat_map(|mib| (0..4).map(move |block| mib * 1024 + block * 64)).collect()
}

#[test]
fn a_toml_job_writes_only_its_zones() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("z.toml");
    std::fs::write(
        &job,
        "[[phase]]\nrw = \"write\"\nbs = \"64k\"\nsize = \"8m\"\n[phase.strided]\nsize = \"256k\"\nskip = \"768k\"\n",
    )
    .unwrap();
    assert_eq!(written_blocks(dir.path(), &["--job", job.to_str().unwrap()]), every_mib_the_first_quarter());
}

#[test]
fn a_fio_job_with_zonesize_and_zoneskip_writes_the_same_zones() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("z.fio");
    // zonerange 512k: only the first 256k of each 512k zone, then 512k skipped.
    std::fs::write(
        &job,
        "[z]\nrw=write\nbs=64k\nsize=8m\nzonemode=strided\nzonesize=256k\nzonerange=512k\nzoneskip=512k\n",
    )
    .unwrap();
    assert_eq!(written_blocks(dir.path(), &["--job", job.to_str().unwrap()]), every_mib_the_first_quarter());
}

#[test]
fn fio_s_disk_zone_profile_example_runs() {
    let example = Path::new("/usr/share/doc/fio/examples/disk-zone-profile.fio");
    if !example.is_file() {
        common::skip(&format!(
            "fio_s_disk_zone_profile_example_runs: {} is missing (Debian: fio-examples)",
            example.display()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = streamcap()
        .current_dir(dir.path())
        .arg("run")
        .arg(dir.path())
        .args(["--job", example.to_str().unwrap(), "--size", "16m", "--quiet", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // One zone of the 16 MiB file (the next would start at 2.25 GiB): 16 MiB of 64 KiB reads.
    let result = common::read_json(&json);
    assert_eq!(result["phases"][0]["read"]["ops"].as_u64(), Some(256), "{}", result["phases"][0]["read"]);
    assert_eq!(result["config"]["phases"][0]["strided"]["skip"].as_u64(), Some(2 << 30));
}

#[test]
fn zones_streamcap_cannot_run_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |file: &str, text: &str, expected: &str| common::refused_dry_run(dir.path(), file, text, expected);
    refused("a.fio", "[a]\nrw=read\nsize=8m\nzonemode=zbd\nzonesize=1m\n", "zoned block device");
    refused("b.fio", "[b]\nrw=randread\nsize=8m\nzonesize=1m\nzoneskip=1m\n", "sequential I/O");
    refused("c.fio", "[c]\nrw=read\nsize=8m\nzonesize=1m\nzonerange=512k\n", "more than once");
    refused("d.fio", "[d]\nrw=read\nsize=8m\nbs=64k\nzonesize=96k\n", "whole number of blocks");
    assert_eq!(common::entries(dir.path()), ["a.fio", "b.fio", "c.fio", "d.fio"]);
}
