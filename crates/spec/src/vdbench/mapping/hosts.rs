//! vdbench's host definitions (`hd=`) and the `host=` keyword of sds, wds and fwds. vdbench runs each
//! workload on every host it names, each host with its own sds and threads.
//!
//! Under mpirun with more than one rank (`ReadOptions::ranks`), the hds map onto the ranks in file order (the
//! first hd is rank 0, as mpirun orders the ranks over its `--host` list or hostfile), whatever their
//! `system=`: where each rank runs is mpirun's to say, and the counts must match. Otherwise every hd that names
//! this machine (`system=` localhost, 127.0.0.1, ::1 or this host's name; an hd without `system=` is the
//! machine of its own name) runs here, as its own set of threads, so a workload on two local hds runs twice,
//! side by side; an hd on another machine is refused, since only mpirun's ranks run on other machines. Pure: no
//! I/O besides reading this machine's host name.

use super::words::wildcard;
use super::{fail, unsupported, words};
use crate::spec::ReadOptions;
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::lexer::unprotect;
use crate::spec::vdbench::model::{Kind, Model, Record};

/// The hosts of a run: the names of its hd records (all on this machine, or one per rank), or none when the
/// file has no hd.
#[derive(Debug, Clone, Default)]
pub(in crate::vdbench) struct Hosts {
    names: Vec<String>,
    /// The hds are mpirun's ranks: hd `i` is rank `i`.
    pub ranked: bool,
    /// What the hds say that has no effect here (`vdbench=`, `user=`, `shell=`, `jvms=`).
    pub notices: Vec<String>,
}

/// Checks every hd of the file; `Hosts` lists them in file order.
pub(super) fn resolve(model: &Model, options: &ReadOptions) -> Result<Hosts, VdbError> {
    let ranks = options.ranks.filter(|&n| n > 1);
    if let Some(ranks) = ranks {
        check_count(model, ranks)?;
    }
    let this = this_host();
    check_implicit_host(model, this.as_deref())?;
    let (mut names, mut notices) = (Vec::new(), Vec::new());
    for (i, hd) in model.of(Kind::Hd).enumerate() {
        unsupported(hd, "clients", "several clients per host (clients=)")?;
        unsupported(hd, "mount", "mounting (mount=)")?;
        let (system, p) = match hd.get("system") {
            Some(p) => (unprotect(&p.value), Some(p)),
            None => (hd.name.clone(), None),
        };
        if ranks.is_some() {
            notices.push(format!("vdbench {} (system={system}) runs as rank {i}", hd.label()));
        } else if !is_local(&system, this.as_deref()) {
            let message = format!(
                "{} runs on {system}, another machine: streamcap runs other machines' hds only as mpirun's ranks \
                 (one rank per hd, built with --features mpi: docs/multi-host.md); point system= at localhost to \
                 run the host's workloads here",
                hd.label()
            );
            return Err(match p {
                Some(p) => fail(hd, p, message),
                None => VdbError::at(&hd.at, message),
            });
        }
        names.push(hd.name.clone());
        for keyword in ["vdbench", "user", "shell", "jvms"] {
            if hd.get(keyword).is_some() {
                notices.push(format!("vdbench {}: {keyword}= has no effect in streamcap", hd.label()));
            }
        }
    }
    Ok(Hosts { ranked: ranks.is_some() && !names.is_empty(), names, notices })
}

/// With no hd= record, vdbench runs one host built from `hd=default` (`HostParms.readParms`), so what that
/// default says is refused as it would be on an hd: clients=, mount=, another machine's system=.
fn check_implicit_host(model: &Model, this: Option<&str>) -> Result<(), VdbError> {
    let Some((_, first)) = model.hd_default.first() else { return Ok(()) };
    if model.of(Kind::Hd).next().is_some() {
        return Ok(());
    }
    let hd = Record { kind: Kind::Hd, name: "default".into(), at: first.at.clone(), params: model.hd_default.clone() };
    unsupported(&hd, "clients", "several clients per host (clients=, here on the one host hd=default makes)")?;
    unsupported(&hd, "mount", "mounting (mount=)")?;
    match hd.get("system") {
        Some(p) if !is_local(&unprotect(&p.value), this) => Err(fail(
            &hd,
            p,
            format!(
                "hd=default with no hd= runs everything on {}, another machine: point system= at localhost or \
                 remove it",
                unprotect(&p.value)
            ),
        )),
        _ => Ok(()),
    }
}

/// Under mpirun, one rank per hd: a file without hds runs on every rank; otherwise the counts must match.
fn check_count(model: &Model, ranks: u32) -> Result<(), VdbError> {
    let hds: Vec<&Record> = model.of(Kind::Hd).collect();
    let Some(first) = hds.first() else { return Ok(()) };
    if hds.len() == ranks as usize {
        return Ok(());
    }
    let names: Vec<&str> = hds.iter().map(|hd| hd.name.as_str()).collect();
    Err(VdbError::at(
        &first.at,
        format!(
            "the file has {} hd= records ({}) but mpirun started {ranks} ranks: each hd runs as one rank, the \
             first hd as rank 0; start as many ranks as there are hds (mpirun -np {})",
            hds.len(),
            names.join(", "),
            hds.len()
        ),
    ))
}

impl Hosts {
    /// Every hd by name, run nowhere: what the rest of the file is checked against once an hd was refused.
    pub fn named(model: &Model) -> Hosts {
        Hosts { names: model.of(Kind::Hd).map(|hd| hd.name.clone()).collect(), ..Hosts::default() }
    }

    /// The hosts a record runs on (its `host=`, or every host): at least one name, `localhost` without hds.
    pub fn of(&self, rec: &Record) -> Result<Vec<String>, VdbError> {
        let all = || if self.names.is_empty() { vec!["localhost".to_string()] } else { self.names.clone() };
        let Some((wanted, p)) = words(rec, "host")? else { return Ok(all()) };
        let mut out = Vec::new();
        for name in &wanted {
            let hits: Vec<String> = if name == "*" {
                all()
            } else if self.names.is_empty() && is_local(name, None) {
                vec!["localhost".to_string()]
            } else {
                self.names.iter().filter(|h| wildcard(name, h)).cloned().collect()
            };
            if hits.is_empty() {
                return Err(fail(rec, p, format!("there is no hd={name}: add an hd record for it, or remove host=")));
            }
            out.extend(hits.into_iter().filter(|h| !out.contains(h)).collect::<Vec<_>>());
        }
        Ok(out)
    }

    /// Whether the run has more than one host (then parts are named after their host).
    pub fn several(&self) -> bool {
        self.names.len() > 1
    }

    /// The hds in rank order, when they are mpirun's ranks (empty otherwise).
    pub fn ranks(&self) -> Vec<String> {
        if self.ranked { self.names.clone() } else { Vec::new() }
    }

    /// The rank that runs `host`'s workloads, when the hds are mpirun's ranks.
    pub fn rank_of(&self, host: &str) -> Option<u32> {
        self.ranked.then(|| self.names.iter().position(|h| h == host)).flatten().map(|i| i as u32)
    }
}

fn is_local(system: &str, this: Option<&str>) -> bool {
    let s = system.to_ascii_lowercase();
    let short = |n: &str| n.split('.').next().unwrap_or_default().to_string();
    matches!(s.as_str(), "localhost" | "127.0.0.1" | "::1" | "localhost.localdomain")
        || this.is_some_and(|t| short(&s) == short(&t.to_ascii_lowercase()))
}

fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_are_local_and_others_are_not() {
        assert!(is_local("localhost", None));
        assert!(is_local("127.0.0.1", Some("box")));
        assert!(is_local("BOX.example.com", Some("box")));
        assert!(!is_local("other", Some("box")));
    }

    fn read(text: &str, ranks: Option<u32>) -> Result<crate::spec::JobSpec, String> {
        let options = ReadOptions { ranks, ..ReadOptions::default() };
        crate::spec::vdbench::parse_vdbench_job(std::path::Path::new("job.vdb"), text, &options)
            .map_err(|e| e.to_string())
    }

    /// Under mpirun, hd `i` is rank `i` whatever machine it names; a workload of one host is still a part, so
    /// that it carries its rank; the counts must match.
    #[test]
    fn hds_map_onto_ranks_in_order_and_the_counts_must_match() {
        let text = "hd=h1,system=far1\nhd=h2,system=far2\nsd=sd1,lun=/tmp/x,size=1g\nwd=wd1,sd=sd1\n\
                    wd=wd2,sd=sd1,host=h2\nrd=rd1,wd=wd1,iorate=max\nrd=rd2,wd=wd2,iorate=max\n";
        let job = read(text, Some(2)).unwrap();
        let ranks = |i: usize| -> Vec<Option<u32>> {
            job.phases[i].parts.as_ref().expect("parts").iter().map(|p| p.rank).collect()
        };
        assert_eq!(ranks(0), [Some(0), Some(1)]);
        assert_eq!(ranks(1), [Some(1)], "one host's workload is a part with its rank");
        assert!(job.notices.iter().any(|n| n.contains("hd=h2 (system=far2) runs as rank 1")), "{:?}", job.notices);
        let err = read(text, Some(3)).unwrap_err();
        assert!(err.contains("2 hd= records (h1, h2) but mpirun started 3 ranks") && err.contains("line 1"), "{err}");
        let err = read(text, None).unwrap_err();
        assert!(err.contains("another machine") && !err.contains("there is no hd=h2"), "{err}");
        let alone = read("sd=sd1,lun=/tmp/x\nwd=wd1,sd=sd1\nrd=rd1,wd=wd1,iorate=max\n", Some(4)).unwrap();
        assert!(alone.phases[0].parts.is_none(), "without hds every rank runs the whole job");
    }

    /// A survey file of 32 hds, each with its sd, and two wds on all the sds: one rd of 64 parts, each on its
    /// sd's host's rank. Found by fuzzing: checking the parts cloned every part for every part, and the file took
    /// seconds to read and plan under mpirun (now one clone of the phase).
    #[test]
    fn thirty_two_hds_with_an_sd_each_are_sixty_four_parts_on_their_ranks() {
        let hds: String = (0..32).map(|i| format!("hd=h{i},system=far{i}\n")).collect();
        let sds: String = (0..32).map(|i| format!("sd=sd{i},host=h{i},lun=/tmp/x{},size=1g\n", i % 8)).collect();
        let wds = "wd=wd1,sd=sd*,rdpct=20\nwd=wd2,sd=sd*,hotband=(10,14)\nrd=rd1,wd=wd*,iorate=max\n";
        let job = read(&format!("{hds}{sds}{wds}"), Some(32)).unwrap();
        job.check().unwrap();
        let parts = job.phases[0].parts.as_ref().expect("parts");
        let ranks: Vec<Option<u32>> = parts.iter().map(|p| p.rank).collect();
        assert_eq!(ranks.len(), 64);
        assert!((0..32).all(|r| ranks.iter().filter(|&&p| p == Some(r)).count() == 2), "{ranks:?}");
    }

    /// A 100 % sequential wd runs on the first of its hosts only, as vdbench's `mustRunOnSingleSlave` gives it
    /// one slave; a random one runs on each, its skew shared out.
    #[test]
    fn a_sequential_wd_runs_on_one_host() {
        let text = "hd=h1,system=far1\nhd=h2,system=far2\nsd=sd1,lun=/tmp/x,size=1g\nwd=wd1,sd=sd1,seekpct=seq\n\
                    wd=wd2,sd=sd1\nrd=rd1,wd=(wd1,wd2),iorate=max\n";
        let job = read(text, Some(2)).unwrap();
        let parts = job.phases[0].parts.as_ref().expect("parts");
        let got: Vec<(&str, Option<u32>)> = parts.iter().map(|p| (p.name.as_deref().unwrap_or(""), p.rank)).collect();
        assert_eq!(got, [("wd1 on sd1 on h1", Some(0)), ("wd2 on sd1 on h1", Some(0)), ("wd2 on sd1 on h2", Some(1))]);
        // streams= is sequential too, but vdbench runs it on several slaves; streamcap refuses that, and does
        // not quietly drop a host.
        let text = "hd=h1,system=far1\nhd=h2,system=far2\nsd=sd1,lun=/tmp/x,size=1g\nwd=wd1,sd=sd1,streams=2\n\
                    rd=rd1,wd=wd1,iorate=max\n";
        let err = read(text, Some(2)).unwrap_err();
        assert!(err.contains("streams= on several hosts"), "{err}");
    }

    /// Under mpirun an fwd runs once per host, as a workload of that host's rank; an fsd is one rank's, or with
    /// shared=yes one tree of all the ranks (an unshared one on several hosts is refused as vdbench does).
    #[test]
    fn fwds_map_onto_ranks_and_an_fsd_is_one_ranks_unless_shared() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path().display();
        let text = |fsd1: &str, fwd2: &str| {
            format!(
                "hd=h1,system=far1\nhd=h2,system=far2\nfsd=fsd1,anchor={d},files=4,size=64k{fsd1}\n\
                 fsd=fsd2,anchor={d},files=4,size=64k\nfwd=fwd1,fsd=fsd1,host=h1,threads=2\n\
                 fwd=fwd2,fsd={fwd2},threads=3\nrd=rd1,fwd=(fwd1,fwd2),fwdrate=max\n"
            )
        };
        let job = read(&text("", "fsd2,host=h2"), Some(2)).unwrap();
        let fileset = job.phases[0].fileset().expect("a file-set phase");
        let got: Vec<(Option<&str>, Option<u32>, Option<u32>)> =
            fileset.workloads.iter().map(|w| (w.tree.as_deref(), w.rank, w.threads)).collect();
        assert_eq!(got, [(Some("fsd1"), Some(0), Some(2)), (Some("fsd2"), Some(1), Some(3))]);
        // fwd2 on both hosts of its unshared fsd: refused, as vdbench does.
        let err = read(&text("", "fsd2,host=*"), Some(2)).unwrap_err();
        assert!(err.contains("2 hosts on fsd=fsd2, which is not shared"), "{err}");
        // Two hosts' fwds on one unshared fsd: refused, naming the ranks; on a shared one, one tree for both.
        let err = read(&text("", "fsd1,host=h2"), Some(2)).unwrap_err();
        assert!(err.contains("fsd=fsd1 is used by ranks 0, 1") && err.contains("shared=yes on the fsd"), "{err}");
        let job = read(&text(",shared=yes", "fsd1,host=h2"), Some(2)).unwrap();
        let fileset = job.phases[0].fileset().expect("a file-set phase");
        let ranks: Vec<Option<u32>> = fileset.workloads.iter().map(|w| w.rank).collect();
        assert_eq!(ranks, [Some(0), Some(1)]);
        assert_eq!(fileset.trees[0].shared, Some(true), "fsd1 is one tree the ranks share");
        // Without mpirun the same hds are other machines, refused as before.
        assert!(read(&text("", "fsd2,host=h2"), None).unwrap_err().contains("another machine"));
    }
}
