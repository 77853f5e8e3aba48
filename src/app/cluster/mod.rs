//! A command as one rank of a multi-host run: rank 0 reads the job and every rank gets it (`share`), every rank
//! plans for its own host with its own facts and work directory, so every safety rule holds per rank, and a
//! rank whose plan is refused stops them all with its host and error (`agree`); the observer (`observer.rs`)
//! reduces every rank's intervals to rank 0, which alone prints and writes results; the exit code is rank 0's,
//! on every rank.
//!
//! Why the job and not the plan is shared: a plan holds one host's facts (free space, devices, the work
//! directory named by host and process), so a plan made on rank 0 would be checked against the wrong disks
//! everywhere else. The job is what the user asked; every rank turns it into a plan the same way and runs it
//! on the one I/O core. The ranks' plans must have the same phases (`agree_shape`), since phases start and end
//! together.
//!
//! The transport is given (`mpi::MpiTransport` with the `mpi` feature; an in-process one in tests); nothing
//! here knows MPI.

// Without the `mpi` feature nothing starts a rank, yet the ranks' protocol is still built and its unit tests run
// over the in-process transport, so the default build's `cargo test` covers it.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

mod check;
mod launch;
mod merge;
mod observer;
mod run;
mod space;
mod streams;

use std::process::ExitCode;
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use launch::{RankCommand, alone, launched_by, run_ranks};
pub use observer::ClusterObserver;
pub use space::free_in;

use crate::plan::Plan;
use crate::results::{ClusterResult, RankHost, TargetInfo};
use crate::run::cluster::Key;
use crate::run::{Cluster, Interrupt, Transport};
use crate::sysinfo::HostFacts;

/// What the app's own messages are about (above the run layer's kinds).
pub(super) mod kind {
    use crate::run::cluster::Key;
    pub const INTERVAL: u8 = Key::USER + 1;
    pub const REPORT: u8 = Key::USER + 2;
    pub const STEP_CPU: u8 = Key::USER + 3;
    pub const HOSTS: u8 = Key::USER + 4;
    pub const EXIT: u8 = Key::USER + 5;
    pub const JOB: u8 = Key::USER + 6;
    pub const PLAN: u8 = Key::USER + 7;
    pub const CLEANUP: u8 = Key::USER + 8;
    pub const SPACE: u8 = Key::USER + 9;
    pub const VERIFY: u8 = Key::USER + 10;
    pub const REPORTED: u8 = Key::USER + 11;
    pub const FORMAT: u8 = Key::USER + 12;
}

/// How long a rank waits for rank 0 to say a shared failure before it leaves anyway (rank 0 is gone, then).
const REPORT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// Joins the other ranks over `transport` and runs `body` as this rank. A failure every rank shares (a refused
/// job or plan, named by the rank it came from) is said once, by rank 0, and every rank exits 2 — the others
/// only after rank 0 has said it: mpirun ends the job when the first rank exits non-zero, and a rank that left
/// first could have rank 0 killed before it printed anything (the refusal was missing in 1 run of 8).
pub fn joined(transport: Box<dyn Transport>, body: impl FnOnce(&Session) -> Result<ExitCode>) -> Result<ExitCode> {
    let session = Session::new(Cluster::join(transport, &HostFacts::gather().hostname));
    let done = body(&session);
    // Ctrl-C on mpirun: it is tearing the job down and SIGKILLs every rank a second after its SIGTERM, and
    // MPI_Finalize would wait about 2 s for it to answer (measured with Open MPI 4.1). The data was removed when
    // the phase ended, and the body's last step was an agreement (the exit code, or a failure every rank shares),
    // so no rank still waits for this one: nothing is lost by leaving without it.
    if session.interrupt.get().is_some_and(Interrupt::is_set) {
        session.cluster.skip_finalize();
    }
    match done {
        Err(e) => {
            let _ = session.report_failure(&e);
            Ok(ExitCode::from(2))
        }
        done => done,
    }
}

/// This process as a rank of a multi-host run.
pub struct Session {
    pub cluster: Cluster,
    /// The run's stop flag, once installed (`install_interrupt`).
    interrupt: OnceLock<Interrupt>,
}

impl Session {
    pub fn new(cluster: Cluster) -> Session {
        Session { cluster, interrupt: OnceLock::new() }
    }

    /// Installs the Ctrl-C and SIGTERM handlers on every rank (a rank that cannot stops all of them), and keeps
    /// the flag to tell, at the end, whether the run was interrupted.
    pub fn install_interrupt(&self) -> Result<Interrupt> {
        let interrupt = self.agree(1, Interrupt::install().context("cannot install the Ctrl-C handler"))?;
        Ok(self.interrupt.get_or_init(|| interrupt).clone())
    }

    pub fn is_root(&self) -> bool {
        self.cluster.is_root()
    }

    /// What rank 0 makes, on every rank; rank 0's failure is every rank's (only rank 0 says it).
    pub fn share<T: Serialize + DeserializeOwned>(&self, make: impl FnOnce() -> Result<T>) -> Result<T> {
        let mine = if self.is_root() {
            match make() {
                Ok(value) => (Some(value), None),
                Err(e) => (None, Some(format!("{e:#}"))),
            }
        } else {
            (None, None)
        };
        let bytes = serde_json::to_vec(&(&mine.0, &mine.1)).expect("a job is plain data");
        let shared = self.cluster.broadcast(Key::new(kind::JOB, 0, 0), &bytes);
        let (value, error): (Option<T>, Option<String>) =
            serde_json::from_slice(&shared).map_err(|e| anyhow!("the job from rank 0 could not be read: {e}"))?;
        match (value, error, mine.1) {
            (_, Some(_), Some(own)) => Err(anyhow!(own)),
            (_, Some(error), None) => Err(anyhow!(error)),
            (Some(value), None, _) => Ok(value),
            (None, None, _) => Err(anyhow!("rank 0 sent no job")),
        }
    }

    /// `local` on every rank if every rank's is `Ok`; otherwise every rank fails with the first failure, named
    /// by rank and host.
    pub fn agree<T>(&self, what: u64, local: Result<T>) -> Result<T> {
        let mine = match &local {
            Ok(_) => Vec::new(),
            Err(e) => format!("{e:#}").into_bytes(),
        };
        let all = self.cluster.exchange(Key::new(kind::PLAN, what, 0), &mine);
        match all.iter().enumerate().find(|(_, said)| !said.is_empty()) {
            None => local,
            Some((rank, said)) => Err(anyhow!("{}: {}", self.cluster.name(rank as u32), String::from_utf8_lossy(said))),
        }
    }

    /// Every rank's plan must have the same phases in the same order (names, kinds, workers), since the phases
    /// start and end together on every rank.
    pub fn agree_shape(&self, plan: &Plan) -> Result<()> {
        let shape: Vec<String> = plan
            .phases
            .iter()
            .map(|p| format!("{} {} {} workers", p.name, p.kind.label(), p.outline(&plan.target.files).jobs))
            .collect();
        let mine = serde_json::to_vec(&shape).expect("plain data");
        let all = self.cluster.exchange(Key::new(kind::PLAN, u64::MAX, 0), &mine);
        match all.iter().position(|other| *other != all[0]) {
            None => Ok(()),
            Some(rank) => Err(anyhow!(
                "{} planned other phases than rank 0 ({} against {}): every rank must run the same job; check \
                 that all hosts run the same streamcap version and see the same kind of target",
                self.cluster.name(rank as u32),
                String::from_utf8_lossy(&all[rank]),
                String::from_utf8_lossy(&all[0])
            )),
        }
    }

    /// Every rank's host and target, for rank 0's result (empty elsewhere).
    pub fn hosts(&self, host: &HostFacts, target: &TargetInfo) -> ClusterResult {
        let rank = self.cluster.rank();
        let mine = RankHost { rank, host: host.clone(), target: target.clone(), role: None };
        let mine = serde_json::to_vec(&mine).expect("plain data");
        let all = self.cluster.exchange(Key::new(kind::HOSTS, 0, 0), &mine);
        let hosts = all.iter().filter_map(|b| serde_json::from_slice(b).ok()).collect();
        ClusterResult { ranks: self.cluster.size(), hosts, ..ClusterResult::default() }
    }

    /// Rank 0 prints `error` (as `main` prints an error) and tells every rank it has; the others wait for that.
    /// Whether rank 0 has said it (`false`: it did not say so in time).
    fn report_failure(&self, error: &anyhow::Error) -> bool {
        let key = Key::new(kind::REPORTED, 0, 0);
        if self.is_root() || self.cluster.unreachable(0) {
            // A rank cut off from rank 0 says its own failure: no one else will.
            let who =
                if self.is_root() { String::new() } else { format!("{}: ", self.cluster.name(self.cluster.rank())) };
            eprintln!("error: {who}{}", crate::escape::for_terminal(&format!("{error:#}")));
            (1..self.cluster.size()).for_each(|to| self.cluster.send(to, key, Vec::new()));
            true
        } else {
            self.cluster.wait_for(key, REPORT_PATIENCE).is_some()
        }
    }

    /// Rank 0's exit code on every rank, after every rank's clean-up problem (if any) was said by rank 0.
    pub fn finish(&self, code: ExitCode, cleanup: Option<&str>) -> ExitCode {
        let problems = self.cluster.exchange(Key::new(kind::CLEANUP, 0, 0), cleanup.unwrap_or("").as_bytes());
        let mut failed = false;
        for (rank, problem) in problems.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            failed = true;
            if self.is_root() && rank != 0 {
                super::output::say(&format!(
                    "error: {}: {}; remove it by hand",
                    self.cluster.name(rank as u32),
                    String::from_utf8_lossy(problem)
                ));
            }
        }
        let code = if failed { ExitCode::from(2) } else { code };
        let mine = (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(2);
        let shared = self.cluster.broadcast(Key::new(kind::EXIT, 0, 0), &[mine]);
        ExitCode::from(shared.first().copied().unwrap_or(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::cluster::local::ranks;

    #[test]
    fn rank_zeros_job_reaches_every_rank_and_its_failure_fails_all() {
        let got = ranks(3, |cluster| {
            let session = Session::new(cluster);
            let job = session.share(|| Ok(vec![1u32, 2, 3]));
            let refused = session.share::<u32>(|| Err(anyhow!("no such job file")));
            (job.ok(), refused.map_err(|e| e.to_string()))
        });
        for (job, refused) in got {
            assert_eq!(job, Some(vec![1, 2, 3]));
            assert_eq!(refused, Err("no such job file".to_string()));
        }
    }

    #[test]
    fn a_refused_plan_on_one_rank_stops_all_and_names_it() {
        let got = ranks(3, |cluster| {
            let session = Session::new(cluster);
            let local = if session.cluster.rank() == 1 { Err(anyhow!("too little free space")) } else { Ok(7) };
            let agreed = session.agree(0, local).map_err(|e| e.to_string());
            let code = session.finish(ExitCode::from(if session.is_root() { 1 } else { 0 }), None);
            (agreed, code)
        });
        for (agreed, code) in got {
            assert_eq!(agreed, Err("rank 1 (host1): too little free space".to_string()));
            assert_eq!(code, ExitCode::from(1));
        }
    }

    /// Guards the lost refusal: a rank other than 0 left before rank 0 printed, and mpirun killed rank 0 on the
    /// first non-zero exit. Every rank now returns only once rank 0 has said the failure.
    #[test]
    fn a_shared_failure_is_said_by_rank_0_before_any_rank_leaves() {
        let got = ranks(3, |cluster| {
            let session = Session::new(cluster);
            if session.is_root() {
                // Rank 0 is slow to get there; the others must wait for it.
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            session.report_failure(&anyhow!("refused"))
        });
        assert_eq!(got, [true, true, true]);
    }

    /// A job of one rank that counts the times it was told to skip MPI_Finalize.
    struct Alone {
        mailbox: crate::run::cluster::Mailbox,
        skipped: std::sync::Arc<std::sync::atomic::AtomicU32>,
    }

    impl Transport for Alone {
        fn rank(&self) -> u32 {
            0
        }
        fn size(&self) -> u32 {
            1
        }
        fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
            self.mailbox.deliver(to, key, payload);
        }
        fn mailbox(&self) -> &crate::run::cluster::Mailbox {
            &self.mailbox
        }
        fn skip_finalize(&self) {
            self.skipped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Guards the exit after Ctrl-C on mpirun: MPI_Finalize waited 2 s for mpirun, which SIGKILLs the ranks 1 s
    /// after its SIGTERM. An interrupted run leaves without it; any other run (interrupted or not before the
    /// handler was installed) finalises.
    #[test]
    fn only_an_interrupted_run_skips_mpi_finalize() {
        for interrupted in [None, Some(false), Some(true)] {
            let skipped = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let transport = Alone { mailbox: crate::run::cluster::Mailbox::new(), skipped: skipped.clone() };
            let code = joined(Box::new(transport), |session| {
                if let Some(set) = interrupted {
                    let interrupt = session.interrupt.get_or_init(Interrupt::default);
                    if set {
                        interrupt.set();
                    }
                }
                Ok(ExitCode::from(130))
            });
            assert_eq!(code.ok(), Some(ExitCode::from(130)));
            let expected = u32::from(interrupted == Some(true));
            assert_eq!(skipped.load(std::sync::atomic::Ordering::Relaxed), expected, "{interrupted:?}");
        }
    }
}
