//! One `streamcap check` of a bench, watched step by step. The check rewrites its JSON after every phase and
//! every stream step (atomically, by rename); a watcher polls the file, and at each rewrite samples the bench's
//! counters (the blkio throttle's reads per loop device, or the bytes the sshfs link received). The counters'
//! change between the rewrite before a step appeared and the rewrite that added it is that step's window: what
//! the throttle let through for it, per member, and with what request size; or what crossed the link.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bench::Bench;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    IoUring,
    Sync,
}

impl Engine {
    pub const BOTH: [Engine; 2] = [Engine::IoUring, Engine::Sync];

    pub fn name(self) -> &'static str {
        match self {
            Engine::IoUring => "io_uring",
            Engine::Sync => "sync",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Quick,
    Default,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
        }
    }
}

/// A stream step and the counters' change over its window (absent when two rewrites fell into one poll).
#[derive(Debug, Clone)]
pub struct Window {
    /// The stream phase's label (`streams.label`, e.g. "2160p HEVC (25 Mbit/s)").
    pub label: String,
    pub step: usize,
    pub counters: Vec<u64>,
}

/// A finished check: its result and the windows of its stream steps.
pub struct CheckRun {
    pub result: Value,
    pub windows: Vec<Window>,
    pub elapsed: Duration,
}

/// The file's identity and size: a rename gives a new inode; a rewrite in place a new size or time.
fn stamp(path: &Path) -> Option<(u64, i64, i64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
}

/// Steps recorded so far, per stream phase (by its label): the finished phases', and the running one's, which
/// is in the result's top-level `streams` until its phase ends.
fn steps_so_far(result: &Value) -> Vec<(String, usize)> {
    let phases = result["phases"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut steps: Vec<(String, usize)> = Vec::new();
    for streams in phases.iter().map(|p| &p["streams"]).chain([&result["streams"]]) {
        let (Some(label), Some(list)) = (streams["label"].as_str(), streams["steps"].as_array()) else { continue };
        match steps.iter_mut().find(|(l, _)| l == label) {
            Some((_, n)) => *n = (*n).max(list.len()),
            None => steps.push((label.to_string(), list.len())),
        }
    }
    steps
}

/// The one step a rewrite added, if it added exactly one: its phase's label and its index.
fn added_step(before: &[(String, usize)], after: &[(String, usize)]) -> Option<(String, usize)> {
    let had = |label: &str| before.iter().find(|(l, _)| l == label).map_or(0, |(_, n)| *n);
    let grown: Vec<&(String, usize)> = after.iter().filter(|(label, n)| *n > had(label)).collect();
    match grown[..] {
        [(label, n)] if *n == had(label) + 1 => Some((label.clone(), n - 1)),
        _ => None,
    }
}

/// Runs `streamcap check` on the bench with the engine and profile, watching every rewrite of its JSON.
pub fn run_check(bench: &Bench, engine: Engine, profile: Profile, json: &Path) -> CheckRun {
    let mut cmd = Command::new(crate::streamcap_bin());
    cmd.arg("check").arg(&bench.dir).args(["--engine", engine.name(), "--no-html", "--quiet", "--json"]).arg(json);
    if profile == Profile::Quick {
        cmd.arg("--quick");
    }
    if let Some(library) = &bench.library {
        cmd.arg("--library").arg(library);
    }
    let log = json.with_extension("stderr");
    let stderr_file = std::fs::File::create(&log).expect("create the check's stderr file");
    cmd.env_remove("RUST_BACKTRACE").env("STREAMCAP_NO_HISTORY", "1").stdout(Stdio::null()).stderr(stderr_file);
    let started = Instant::now();
    let child = cmd.spawn().expect("start streamcap check");
    let mut child = crate::common::Running(child);
    let mut last_stamp = None;
    let mut last = (Vec::new(), bench.counters());
    let mut windows = Vec::new();
    // The counters first, then the file: parsing it takes a while, and the next step may start meanwhile.
    let observe = |windows: &mut Vec<Window>, last: &mut (Vec<(String, usize)>, Vec<u64>)| {
        let counters = bench.counters();
        let Some(result) = std::fs::read_to_string(json).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            return;
        };
        let steps = steps_so_far(&result);
        if let Some((label, step)) = added_step(&last.0, &steps) {
            let change = counters.iter().zip(&last.1).map(|(now, then)| now.saturating_sub(*then)).collect();
            windows.push(Window { label, step, counters: change });
        }
        *last = (steps, counters);
    };
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait for the check") {
            break status;
        }
        let now = stamp(json);
        if now.is_some() && now != last_stamp {
            last_stamp = now;
            observe(&mut windows, &mut last);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if stamp(json) != last_stamp {
        observe(&mut windows, &mut last);
    }
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success(),
        "streamcap check on {} ({}) failed: {status}\n{stderr}",
        bench.layout.name(),
        engine.name()
    );
    let result = crate::common::read_json(json);
    CheckRun { result, windows, elapsed: started.elapsed() }
}
