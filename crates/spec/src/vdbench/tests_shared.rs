//! Tests of shared files in vdbench files: fwd `fileio=(random,shared)` (with or without fsd `shared=yes`, as
//! vdbench takes it) and fsd `shared=yes` with several hosts, and the combinations vdbench refuses.

use std::path::Path;

use super::*;
use crate::spec::FileIo;

fn parse(text: &str) -> Result<JobSpec, SpecError> {
    parse_vdbench_job(Path::new("job.vdb"), text, &ReadOptions::default())
}

/// An fsd on `dir` (with `fsd` added), one fwd (with `fwd` added) and an rd (with `rd` added).
fn file(dir: &Path, fsd: &str, fwd: &str, rd: &str) -> String {
    format!(
        "hd=default,system=localhost\nhd=hd1\nhd=hd2\n\
         fsd=fsd1,anchor={},depth=1,width=2,files=4,size=64k{fsd}\n\
         fwd=fwd1,fsd=fsd1,operation=read,threads=4{fwd}\nrd=rd1,fwd=fwd1,fwdrate=max{rd}\n",
        dir.display()
    )
}

#[test]
fn random_shared_without_an_fsd_shared_runs_as_vdbench_runs_it() {
    // As iul1an/vdbench-tests' files: fileio=(random,shared), no shared=yes, format=yes, files taken in turn.
    let dir = tempfile::tempdir().unwrap();
    let job = parse(&file(dir.path(), "", ",host=hd1,fileio=(random,shared)", ",format=yes")).unwrap();
    let w = &job.phases[0].fileset().unwrap().workloads[0];
    assert_eq!((w.fileio, w.shared, w.threads), (Some(FileIo::Random), Some(true), Some(4)));
    let plain = parse(&file(dir.path(), ",shared=yes", ",host=hd1,fileio=random", ",format=restart")).unwrap();
    assert_eq!(plain.phases[0].fileset().unwrap().workloads[0].shared, None);
}

#[test]
fn several_hosts_need_a_shared_fsd_as_in_vdbench() {
    let dir = tempfile::tempdir().unwrap();
    let err = parse(&file(dir.path(), "", "", "")).unwrap_err().to_string();
    assert!(err.contains("2 hosts on fsd=fsd1, which is not shared") && err.contains("shared=yes"), "{err}");
    // With shared=yes each host's threads run on the one tree (4 per host), none sharing a file.
    let job = parse(&file(dir.path(), ",shared=yes", "", "")).unwrap();
    let w = &job.phases[0].fileset().unwrap().workloads[0];
    assert_eq!((w.threads, w.shared), (Some(8), None));
    let err = parse(&file(dir.path(), ",shared=yes", ",fileio=(random,shared)", "")).unwrap_err().to_string();
    assert!(err.contains("on 2 hosts of this machine is not supported yet"), "{err}");
}

/// Under mpirun each hd is a rank: fwd1 on both hds of a shared fsd runs once per rank, each rank's 4 threads
/// sharing files among themselves with fileio=(random,shared), as each of vdbench's hosts does with its own.
#[test]
fn under_mpirun_each_rank_shares_its_files_among_its_own_threads() {
    let dir = tempfile::tempdir().unwrap();
    let text = file(dir.path(), ",shared=yes", ",fileio=(random,shared)", ",format=restart");
    let job = parse_vdbench_job(Path::new("job.vdb"), &text, &ReadOptions { ranks: Some(2), ..Default::default() });
    let job = job.unwrap();
    let set = job.phases[0].fileset().unwrap();
    let got: Vec<_> = set.workloads.iter().map(|w| (w.rank, w.threads, w.shared)).collect();
    assert_eq!(got, [(Some(0), Some(4), Some(true)), (Some(1), Some(4), Some(true))]);
    assert_eq!(set.trees[0].shared, Some(true));
}

#[test]
fn refused_combinations_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (file(d, "", ",host=hd1,fileio=(random,shared),fileselect=random", ""), "mutually exclusive"),
        (file(d, "", ",host=hd1,fileio=(seq,shared)", ""), "only for random I/O"),
        (file(d, "", ",host=hd1,fileio=(random,delete)", ""), "not a fileio option"),
        (file(d, ",shared=maybe", ",host=hd1", ""), "shared=yes or shared=no"),
        (file(d, ",shared=yes", ",host=hd1", ",format=yes"), "format=clean and then one with format=restart"),
        (file(d, ",shared=yes", ",host=hd1", ",format=only"), "fsd=fsd1, which is shared"),
    ];
    for (text, expect) in cases {
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains(expect), "{expect}: {err}");
    }
}

#[test]
fn a_sequential_loop_value_stops_the_sharing() {
    let dir = tempfile::tempdir().unwrap();
    let text = file(dir.path(), "", ",host=hd1,fileio=(random,shared)", ",forfileio=(random,sequential)");
    let job = parse(&text).unwrap();
    let shared: Vec<_> = job.phases.iter().map(|p| p.fileset().unwrap().workloads[0].shared).collect();
    assert_eq!(shared, [Some(true), None]);
}
