//! What a phase read from a fio job file carries beyond a `PhaseSpec`: how fio names and groups it (for fio's
//! JSON) and fio's controls that streamcap runs as fio does — exitall/exit_what, flow, per-command priorities,
//! the search for the queue depth that meets a latency target.
//! Plain data, set by the fio reader (`spec::fio`) and carried through the plan to the run and the results.
//!
//! Must not: parse anything or know how the run applies them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What fio's JSON says about a job beyond its figures: its reporting group and the options as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioJobInfo {
    /// fio's group id: a new group at every stonewall and new_group.
    pub group_id: u32,
    /// fio's group_reporting: the job's clones (and the other jobs of its group) are reported as one.
    pub group_reporting: bool,
    /// The options of the job's own section, in order, under fio's names (fio's "job options").
    pub job_options: Vec<(String, String)>,
    /// The options of the `[global]` sections before the job (fio's "global options").
    pub global_options: Vec<(String, String)>,
    /// fio exitall: when this job finishes, the jobs running with it that `exit_what` names are stopped (their
    /// figures so far are kept as a completed run); `None`: the others go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_all: Option<ExitWhat>,
    /// fio exitall_on_error: when this job ends in error, the jobs running with it that its `exit_what` names
    /// are stopped (fio backend.c: `if (exitall_on_terminate || (o->exitall_error && td->error))
    /// fio_terminate_threads(td->groupid, td->o.exit_what)`); `None`: the others go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_on_error: Option<ExitWhat>,
    /// fio flow: this job's share of the I/O among the jobs running with the same flow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowSpec>,
    /// fio's per-command I/O priorities (cmdprio_*): which reads and writes carry a priority of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdprio: Option<CmdPrio>,
    /// fio latency_target and friends: the run searches for the deepest queue that meets the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTarget>,
}

/// fio's latency_target, latency_window, latency_percentile and latency_run: each worker searches for the highest
/// queue depth (1 up to its iodepth) at which `percentile` % of the I/O completing in each `window` took at most
/// `target`, as fio does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    /// The latency an I/O must not exceed, from when it was taken to its completion (fio's lat).
    pub target: Duration,
    /// How long each depth is tried before it is judged.
    pub window: Duration,
    /// Percent (0–100) of a window's I/O that must meet the target; at 100 the first late I/O ends the window.
    pub percentile: f64,
    /// fio latency_run: keep adjusting the depth until the job ends, rather than stopping at the depth found.
    pub keep_adjusting: bool,
}

/// fio's cmdprio_percentage / cmdprio_bssplit with cmdprio_class and cmdprio: a share of the I/O of each
/// direction (of each block size, with cmdprio_bssplit) is issued with an I/O priority (io_uring's per-request
/// ioprio); the rest at the thread's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmdPrio {
    /// Rules for reads, the first that matches an I/O's size applies.
    pub read: Vec<PrioShare>,
    /// Rules for writes.
    pub write: Vec<PrioShare>,
}

/// One rule of [`CmdPrio`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrioShare {
    /// The block size in bytes the rule applies to; `None`: every size.
    pub bs: Option<u32>,
    /// Percent (0–100) of those I/Os that carry the priority.
    pub percent: u8,
    /// The priority as the kernel takes it: class << 13 | level (class 1 realtime, 2 best effort, 3 idle;
    /// level 0–7, 0 the highest).
    pub ioprio: u16,
}

/// fio's token-based flow control: the jobs of one flow id issue I/O in proportion to their weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// The flow id (fio flow_id, default 0): jobs with the same one share the flow.
    pub id: u64,
    /// The job's weight (fio flow), at least 1.
    pub weight: u64,
    /// How long a job ahead of its share waits before it looks again (fio flow_sleep; µs in fio).
    pub sleep: Duration,
}

/// Which jobs fio's exitall stops when a job finishes (fio exit_what).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitWhat {
    /// The jobs of the same reporting group (fio's default).
    Group,
    /// Every job running at the time; the run goes on with the next stonewalled jobs.
    Stonewall,
    /// Every job, running or still to come: the run ends.
    All,
}
