//! The `RunObserver` of a rank in a multi-host run. Every rank keeps its own silent `ResultRecorder` (its
//! figures, devices and CPU: its row of the per-host breakdown). Ranks other than 0 send each interval, the
//! row of each phase and their CPU in each stream step to rank 0; rank 0 merges the intervals of every rank
//! (`merge.rs`) and feeds the merged ones, and at each phase's end the merged outcome, to the `ResultRecorder`
//! that prints, writes the JSON and CSV, and keeps the breakdown in `RunResult::cluster`.
//!
//! What it must not do: wait for a message that the other ranks send only later in the run (rank 0 waits for a
//! phase's rows only after the phase's end agreement, by when every rank has sent them or is about to).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Session;
use super::kind;
use super::merge::{PhaseMerge, RankInterval};
use crate::app::observer::ResultRecorder;
use crate::app::output::say;
use crate::metrics::ErrorRecord;
use crate::plan::{PhaseKind, PhasePlan, defaults};
use crate::results::{
    ClientFigures, ClientShare, ClusterPhase, ClusterStep, Connections, RankPhase, client_verdict, done_figures,
};
use crate::run::cluster::Key;
use crate::run::{FormatReport, IntervalReport, PhaseOutcome, RunObserver};
use crate::streams::{RawRates, SearchOutcome, StepOutcome};
use crate::sysinfo::{HostFacts, ProcessCpu, usable_cpus};

/// A rank's row of a phase, sent to rank 0.
#[derive(Serialize, Deserialize)]
struct Report {
    row: RankPhase,
    errors: Vec<ErrorRecord>,
    /// File-set phases: the most of the rank's threads that held one file at once (0: none, or a raw phase).
    most_on_one_file: u32,
}

pub struct ClusterObserver<'a> {
    session: &'a Session,
    host: HostFacts,
    /// This rank's own figures.
    local: ResultRecorder<'a>,
    /// Rank 0: the merged result, printed and written.
    main: Option<ResultRecorder<'a>>,
    merges: BTreeMap<usize, PhaseMerge>,
    /// CPU time and wall time when the current stream step started.
    step_start: Option<(ProcessCpu, Instant)>,
    /// HTTP connections this process had opened and reopened when the current step started.
    connections_before: (u64, u64),
    /// Steps seen per stream phase.
    steps: BTreeMap<usize, u64>,
    /// The current file-set phase's most threads on one file, on this rank.
    most_on_one_file: u32,
}

impl<'a> ClusterObserver<'a> {
    /// `main`: rank 0's recorder (with `result.cluster` set); `None` on the other ranks.
    pub fn new(
        session: &'a Session,
        host: HostFacts,
        mut local: ResultRecorder<'a>,
        mut main: Option<ResultRecorder<'a>>,
    ) -> Self {
        local.vdbench_lines = false;
        if let (Some(main), Some(interrupt)) = (main.as_mut(), session.interrupt.get()) {
            main.guard_against_kill(interrupt);
        }
        ClusterObserver {
            session,
            host,
            local,
            main,
            merges: BTreeMap::new(),
            step_start: None,
            connections_before: (0, 0),
            steps: BTreeMap::new(),
            most_on_one_file: 0,
        }
    }

    /// Rank 0's recorder, once the run is over.
    pub fn into_main(self) -> Option<ResultRecorder<'a>> {
        self.main
    }

    fn key(kind: u8, phase: usize) -> Key {
        Key::new(kind, phase as u64, 0)
    }

    /// Rank 0: takes every interval that has arrived for `phase`, and reports those no rank can add to.
    fn merge_arrived(&mut self, phase: usize, all: bool) {
        let Some(merge) = self.merges.get_mut(&phase) else { return };
        let cluster = &self.session.cluster;
        while let Some((from, bytes)) = cluster.wait_for(Self::key(kind::INTERVAL, phase), Duration::ZERO) {
            match RankInterval::decode(&bytes) {
                Ok(interval) => merge.add(from, interval),
                Err(e) => say(&format!("warning: {}: {e}", cluster.name(from))),
            }
        }
        let ready = merge.ready(all);
        let Some(main) = self.main.as_mut() else { return };
        for (index, start, length, recorder) in ready {
            main.interval(&IntervalReport { phase, index, start, length, recorder: &recorder });
        }
    }

    /// This rank's row of phase `index`, from its own recorder.
    fn row(&self, index: usize) -> Option<RankPhase> {
        let phase = self.local.result.phases.iter().find(|p| p.index == index)?;
        Some(RankPhase::of(self.session.cluster.rank(), &self.host, phase))
    }

    /// Every rank's row of phase `index` (this rank's and the others' reports, in rank order), their errors
    /// (the first kept ones) and the most threads on one file on any rank.
    fn reports(&self, index: usize, outcome: &PhaseOutcome) -> (Vec<RankPhase>, Vec<ErrorRecord>, u32) {
        let cluster = &self.session.cluster;
        let mut rows: Vec<RankPhase> = self.row(index).into_iter().collect();
        let mut errors = outcome.errors.clone();
        let mut most_on_one_file = self.most_on_one_file;
        for (from, bytes) in cluster.gather(Self::key(kind::REPORT, index), "the other ranks' figures") {
            match serde_json::from_slice::<Report>(&bytes) {
                Ok(report) => {
                    rows.push(report.row);
                    errors.extend(report.errors);
                    most_on_one_file = most_on_one_file.max(report.most_on_one_file);
                }
                Err(e) => say(&format!("warning: the figures of {} could not be read: {e}", cluster.name(from))),
            }
        }
        rows.sort_by_key(|r| r.rank);
        errors.truncate(defaults::ERRORS_KEPT);
        (rows, errors, most_on_one_file)
    }

    /// Rank 0 at a phase's end: every rank's row, the rest of the merged intervals, the merged outcome.
    fn finish_phase(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        let (rows, errors, most_on_one_file) = self.reports(index, outcome);
        let cluster = &self.session.cluster;
        self.merges.entry(index).or_insert_with(|| PhaseMerge::new(cluster.size() as usize));
        for rank in 0..cluster.size() {
            self.merges.get_mut(&index).expect("inserted").finish(rank);
        }
        self.merge_arrived(index, true);
        let merge = self.merges.remove(&index).expect("inserted");
        // Raw and file-set phases end when the last rank ended; a stream phase's steps end together.
        let last_done = outcome.ranks.iter().map(|r| r.measured).max().unwrap_or(outcome.measured);
        let streams = matches!(phase.kind, PhaseKind::Streams(_));
        let merged = PhaseOutcome {
            totals: merge.totals,
            measured: if streams { outcome.measured } else { last_done },
            stop: outcome.stop.clone(),
            errors,
            direct: outcome.direct,
            caps: outcome.caps,
            issued_by_worker: outcome.issued_by_worker.clone(),
            // This rank's workers only: the skew check needs every rank's, which are not merged yet.
            ops_by_worker: Vec::new(),
            started: outcome.started,
            intervals: merge.emitted,
            ranks: outcome.ranks.clone(),
            // Per-worker figures (fio's clones) are this rank's own; across ranks only the totals are merged.
            workers: Vec::new(),
            latency_depths: outcome.latency_depths.clone(),
            // Each rank judges its own share's rate: the main rank's judgement is the one reported.
            steady: outcome.steady.clone(),
            // This rank's own: each rank's core decides its overtime, and each rank's notice says it.
            overtime: outcome.overtime,
        };
        let Some(main) = self.main.as_mut() else { return };
        // Threads share files within a rank only (ranks of a shared tree take files of their own): the most on
        // any one rank is the most on one file.
        if let PhaseKind::FileSet(_) = phase.kind {
            main.fileset_sharing(index, most_on_one_file);
        }
        // Saved once, with the per-rank rows: a save writes and syncs the whole result, and after SIGTERM the
        // partial result must be on disk before mpirun's SIGKILL.
        main.record_phase(index, phase, &merged);
        let done = if streams { Vec::new() } else { done_ranks(outcome) };
        let merged = main.result.phases.iter().find(|p| p.index == index);
        let (first_done, last_done) = merged.and_then(|p| done_figures(p, &done)).unzip();
        if let Some(result) = main.result.cluster.as_mut() {
            result.phases.push(ClusterPhase { index, name: phase.name.clone(), first_done, last_done, ranks: rows });
        }
        main.save();
    }

    /// streamcap's CPU use over the step just ended, percent of all this host's CPUs, and this client's share
    /// of the step (its CPU time and connections, merged into the step's client figures by rank 0).
    fn step_cpu(&mut self) -> (f64, ClientShare) {
        let (opened, reopened) = crate::engine::connections();
        let connections = Connections {
            opened: opened.saturating_sub(self.connections_before.0),
            reconnects: reopened.saturating_sub(self.connections_before.1),
        };
        let share = ClientShare { cpu_s: 0.0, usable_cpus: usable_cpus(), connections };
        let Some((cpu, at)) = self.step_start.take() else { return (0.0, share) };
        let used = ProcessCpu::read().cpu_since(&cpu).as_secs_f64();
        let wall = at.elapsed().as_secs_f64().max(1e-9);
        (used / wall / f64::from(self.host.cpu_count.max(1)) * 100.0, ClientShare { cpu_s: used, ..share })
    }

    /// Rank 0: every client's figures of the step just merged, and the other clients' shares of it.
    fn client_step(
        &mut self,
        phase: usize,
        number: u64,
        step: &StepOutcome,
        own_cpu: f64,
    ) -> (ClusterStep, Vec<ClientShare>) {
        let cluster = &self.session.cluster;
        let mut cpu = vec![0.0; cluster.size() as usize];
        cpu[0] = own_cpu;
        let mut shares = Vec::new();
        for (from, bytes) in cluster.gather(Key::new(kind::STEP_CPU, phase as u64, number), "the clients' CPU") {
            let Ok((said, share)) = serde_json::from_slice::<(f64, ClientShare)>(&bytes) else {
                say(&format!("warning: the step figures of {} could not be read", cluster.name(from)));
                continue;
            };
            shares.push(share);
            if let Some(slot) = cpu.get_mut(from as usize) {
                *slot = said;
            }
        }
        let (max_stalled, max_startup) = self
            .local
            .plan()
            .phases
            .get(phase)
            .and_then(|p| p.streams())
            .map_or((0, Duration::MAX), |s| (s.target.max_stalled, s.target.max_startup));
        let clients = step
            .clients
            .iter()
            .map(|c| ClientFigures {
                rank: c.rank,
                host: c.host.clone(),
                viewers: c.viewers,
                stalled: c.stalled,
                errors: c.errors,
                issue_lag_p99_ms: c.issue_lag_p99.as_secs_f64() * 1e3,
                lateness_p99_ms: c.lateness_p99.as_secs_f64() * 1e3,
                cpu_busy_pct: cpu.get(c.rank as usize).copied().unwrap_or(0.0),
            })
            .collect();
        let meets_target = step.meets(max_stalled, max_startup);
        (ClusterStep { phase, count: step.count, meets_target, clients }, shares)
    }
}

impl RunObserver for ClusterObserver<'_> {
    fn notice(&mut self, text: &str) {
        match self.main.as_mut() {
            Some(main) => main.notice(text),
            None => say(&format!("{}: note: {text}", self.session.cluster.name(self.session.cluster.rank()))),
        }
    }

    fn prefill(&mut self, phase: usize, done: u64, total: u64) {
        if let Some(main) = self.main.as_mut() {
            main.prefill(phase, done, total);
        }
    }

    fn phase_started(&mut self, index: usize, phase: &PhasePlan) {
        self.local.phase_started(index, phase);
        self.most_on_one_file = 0;
        if let Some(main) = self.main.as_mut() {
            main.phase_started(index, phase);
            self.merges.insert(index, PhaseMerge::new(self.session.cluster.size() as usize));
        }
    }

    fn measuring(&mut self, index: usize) {
        self.local.measuring(index);
        if let Some(main) = self.main.as_mut() {
            main.measuring(index);
        }
    }

    fn interval(&mut self, report: &IntervalReport<'_>) {
        self.local.interval(report);
        let bytes = RankInterval::encode(report.index, report.start, report.length, report.recorder);
        // Rank 0 sends to itself too: its intervals join the others' in the same merge.
        self.session.cluster.send(0, Self::key(kind::INTERVAL, report.phase), bytes);
        if self.main.is_some() {
            self.merge_arrived(report.phase, false);
        }
    }

    fn phase_finished(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        self.local.phase_finished(index, phase, outcome);
        if self.main.is_some() {
            self.finish_phase(index, phase, outcome);
            return;
        }
        let Some(row) = self.row(index) else { return };
        let report = Report { row, errors: outcome.errors.clone(), most_on_one_file: self.most_on_one_file };
        let bytes = serde_json::to_vec(&report).expect("plain data");
        self.session.cluster.send(0, Self::key(kind::REPORT, index), bytes);
    }

    fn fileset_sharing(&mut self, phase: usize, most: u32) {
        self.local.fileset_sharing(phase, most);
        // Merged over the ranks at the phase's end (`finish_phase`).
        self.most_on_one_file = most;
    }

    /// Every rank's format step of the phase together, said by rank 0. Every rank reports its format step here
    /// before the agreement that follows it (`agree_formatted`), so rank 0 waits for nothing sent later.
    fn fileset_formatted(&mut self, phase: usize, report: &FormatReport) {
        self.local.fileset_formatted(phase, report);
        let cluster = &self.session.cluster;
        let key = Self::key(kind::FORMAT, phase);
        let Some(main) = self.main.as_mut() else {
            cluster.send(0, key, serde_json::to_vec(report).expect("plain data"));
            return;
        };
        let mut all = *report;
        for (from, bytes) in cluster.gather(key, "the other ranks' format step") {
            match serde_json::from_slice::<FormatReport>(&bytes) {
                Ok(theirs) => all.combine(&theirs),
                Err(e) => say(&format!("warning: the format step of {} could not be read: {e}", cluster.name(from))),
            }
        }
        main.fileset_formatted(phase, &all);
    }

    fn stream_estimate(&mut self, phase: usize, rates: RawRates) {
        if let Some(main) = self.main.as_mut() {
            main.stream_estimate(phase, rates);
        }
    }

    fn stream_step_started(&mut self, phase: usize, count: u32) {
        self.step_start = Some((ProcessCpu::read(), Instant::now()));
        self.connections_before = crate::engine::connections();
        if let Some(main) = self.main.as_mut() {
            main.stream_step_started(phase, count);
        }
    }

    fn stream_step(&mut self, phase: usize, step: &StepOutcome) {
        let (cpu, share) = self.step_cpu();
        let number = *self.steps.entry(phase).and_modify(|n| *n += 1).or_insert(0);
        if self.main.is_none() {
            let key = Key::new(kind::STEP_CPU, phase as u64, number);
            self.session.cluster.send(0, key, serde_json::to_vec(&(cpu, share)).expect("plain data"));
            return;
        }
        let (clients, shares) = self.client_step(phase, number, step, cpu);
        let main = self.main.as_mut().expect("rank 0");
        if let Some(result) = main.result.cluster.as_mut() {
            result.steps.push(clients);
        }
        main.client_shares(phase, shares);
        main.stream_step(phase, step);
    }

    fn stream_search(&mut self, phase: usize, found: &SearchOutcome) {
        let Some(main) = self.main.as_mut() else { return };
        main.stream_search(phase, found);
        if let Some(result) = main.result.cluster.as_mut()
            && let Some(verdict) = client_verdict(result, phase)
        {
            main.progress.println(&format!("  clients: {verdict}"));
            result.verdicts.push((phase, verdict));
        }
    }
}

/// The ranks that did work in a raw or file-set phase, with when each finished: a rank that idled (vdbench hds
/// whose parts all ran elsewhere) measured nothing and finished nothing.
fn done_ranks(outcome: &PhaseOutcome) -> Vec<(u32, String, f64)> {
    let worked = outcome.ranks.iter().filter(|r| !r.measured.is_zero());
    worked.map(|r| (r.rank, r.host.clone(), r.measured.as_secs_f64())).collect()
}
