//! The raw run of each target, before its checks: what the throttled devices or the link really take. On a loop
//! device target, `streamcap run` reads 1 MiB at random with two jobs (the two scheduler threads io_uring's
//! viewers have on this 2-core machine; the sync engine's have one per viewer), 2 in flight each with io_uring,
//! one with sync; the throttle's counters
//! give each member's request size and share, hence the bound (bound.rs), which the run's MB/s must meet. Over
//! sshfs, `dd` reads two titles of the library the first time (so the client holds none of it), which must
//! meet the link's bound, and the link's receive counter gives the share of it that was file data, with which
//! every step's bytes are checked.

use std::process::Command;
use std::time::Instant;

use crate::bench::Bench;
use crate::bound::{Bound, MemberReads, link_bound, pool_bound};
use crate::check_run::Engine;
use crate::common::read_json;

/// A raw run's figures.
#[derive(Debug, Clone)]
pub struct Raw {
    pub engine: Engine,
    /// MB/s the run read (its own figure).
    pub mbps: f64,
    pub bound: Bound,
    /// sshfs only: file data ÷ bytes the link's receive counter saw (the bytes check of every step uses it).
    pub efficiency: Option<f64>,
}

/// The members' change of the bench's counters as throttle reads.
pub fn member_reads(bench: &Bench, before: &[u64], after: &[u64]) -> Vec<MemberReads> {
    bench
        .member_names()
        .into_iter()
        .enumerate()
        .map(|(i, name)| MemberReads {
            name,
            requests: after[2 * i].saturating_sub(before[2 * i]),
            bytes: after[2 * i + 1].saturating_sub(before[2 * i + 1]),
        })
        .collect()
}

pub fn raw_run(bench: &Bench, engine: Engine) -> Raw {
    match &bench.link {
        Some(_) => raw_link(bench, engine),
        None => raw_local(bench, engine),
    }
}

fn raw_local(bench: &Bench, engine: Engine) -> Raw {
    let json = bench.tmp.path().join(format!("raw-{}.json", engine.name()));
    // Few reads in flight: streamcap counts only reads issued after the ramp, yet ends the phase when the last
    // read in flight is back, so a deep queue on a slow device understates its MB/s by the time that queue takes
    // to drain (16 × 1 MiB at 40 MiB/s: 0.4 s of a 4 s run). Two per job keep that under 2 %.
    let depth = if engine == Engine::Sync { "1" } else { "2" };
    let before = bench.counters();
    let out = Command::new(crate::streamcap_bin())
        .arg("run")
        .arg(&bench.dir)
        .args(["--rw", "randread", "--bs", "1M", "--jobs", "2", "--iodepth", depth, "--size", "512M"])
        .args(["--ramp", "1s", "--runtime", "5s", "--engine", engine.name(), "--json"])
        .arg(&json)
        .env_remove("RUST_BACKTRACE")
        .env("STREAMCAP_NO_HISTORY", "1")
        .output()
        .expect("run streamcap run");
    assert!(out.status.success(), "raw run: {}", String::from_utf8_lossy(&out.stderr));
    let reads = member_reads(bench, &before, &bench.counters());
    let result = read_json(&json);
    let phase = result["phases"].as_array().and_then(|p| p.last()).expect("a phase");
    let mbps = phase["read"]["mbps"].as_f64().expect("read MB/s");
    let bound = pool_bound(&reads).expect("the raw run read from the devices");
    Raw { engine, mbps, bound, efficiency: None }
}

fn raw_link(bench: &Bench, engine: Engine) -> Raw {
    let library = bench.library.as_ref().expect("an sshfs bench has a library");
    let before = bench.counters()[0];
    let started = Instant::now();
    let mut bytes = 0u64;
    for title in 0..2 {
        let file = library.join(format!("title-{title:02}.mkv"));
        let out = Command::new("dd")
            .arg(format!("if={}", file.display()))
            .args(["of=/dev/null", "bs=1M"])
            .output()
            .expect("run dd");
        assert!(out.status.success(), "dd: {}", String::from_utf8_lossy(&out.stderr));
        bytes += std::fs::metadata(&file).unwrap().len();
    }
    let seconds = started.elapsed().as_secs_f64();
    let received = bench.counters()[0] - before;
    let efficiency = bytes as f64 / received as f64;
    Raw { engine, mbps: bytes as f64 / seconds / 1e6, bound: link_bound(), efficiency: Some(efficiency) }
}
