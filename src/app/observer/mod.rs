//! The app's `RunObserver`: samples the system around each phase and interval (device counters, CPU, memory),
//! keeps the interval series, draws the progress line, streams CSV rows and rewrites the JSON result after
//! every phase (and every stream step), so that an interrupted or crashed run still leaves what it measured.
//! Stream phases are followed in `streams`.

mod guard;
mod streams;

pub use streams::on_loopback;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::metrics::BoundedSeries;
use crate::plan::{Outline, PhaseKind, PhasePlan, Plan, defaults};
use crate::report::{CsvSink, vdbench_fs, vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};
use crate::results::{
    EngineDetail, IntervalPoint, PhaseMeasurements, PhaseSamples, RunResult, RunStatus, build_phase, device_activity,
    file_op_points, file_ops_result, flag_implausible_devices, interval_point, reads_throttled, rfc3339,
    write_result_atomically,
};
use crate::run::{FormatReport, IntervalReport, PhaseOutcome, ProgressLine, RunObserver, StopReason};
use crate::spec::SpecOrigin;
use crate::sysinfo::{DiskStat, MemInfo, ProcessCpu, SystemCpu, read_diskstats};

/// Counters taken at one moment.
#[derive(Clone)]
struct Sample {
    at: Instant,
    disks: Vec<DiskStat>,
    cpu: ProcessCpu,
    system: SystemCpu,
    memory: MemInfo,
}

impl Sample {
    fn now() -> Sample {
        Sample {
            at: Instant::now(),
            disks: read_diskstats().unwrap_or_default(),
            cpu: ProcessCpu::read(),
            system: SystemCpu::read().unwrap_or_default(),
            memory: MemInfo::read().unwrap_or_default(),
        }
    }
}

/// Called on the result before every save.
pub type SaveHook<'a> = Box<dyn FnMut(&mut RunResult) + Send + 'a>;
/// Gives a line to print when a phase starts, if any.
pub type HeaderHook<'a> = Box<dyn FnMut(usize, &PhasePlan) -> Option<String> + Send + 'a>;

pub struct ResultRecorder<'a> {
    plan: &'a Plan,
    pub result: RunResult,
    json: Option<PathBuf>,
    csv: Option<CsvSink>,
    pub progress: ProgressLine,
    /// (device name, role) of every device beneath the target.
    devices: Vec<(String, String)>,
    /// State of each phase that is running (several at once when phases run concurrently).
    running: BTreeMap<usize, PhaseState>,
    /// The first failure to write an output file; reported at the end, the run goes on.
    pub output_error: Option<String>,
    /// A phase has started (the JSON exists from then on).
    started: bool,
    /// The run has ended: the last save (the only one that goes to standard output for `--json -`).
    finished: bool,
    /// Print vdbench's interval lines even when stderr is not a terminal (the job came from a vdbench parameter
    /// file; `--quiet` turns this off).
    pub vdbench_lines: bool,
    /// Print a file-set phase's interval table on a terminal (vdbench's columns); a check turns it off, its own
    /// stage lines say where it is (issue 30: 160-column tables in the middle of its progress).
    pub interval_tables: bool,
    /// What the format step of the current file-set phase did.
    formatted: FormatReport,
    /// The most threads on one file in the file-set phase running (0: none reported).
    most_on_one_file: u32,
    /// Stream phases being followed, by plan index.
    streams: BTreeMap<usize, streams::StreamPhase>,
    /// Called on the result before every save (a command that derives a summary from the phases).
    pub on_save: Option<SaveHook<'a>>,
    /// A line to print when a phase starts (a command's own section headers).
    pub header: Option<HeaderHook<'a>>,
    /// Marks the saved result interrupted the moment Ctrl-C comes (`guard_against_kill`).
    guard: Option<guard::InterruptGuard>,
}

/// What the recorder keeps about one running phase.
struct PhaseState {
    start: Option<Sample>,
    last_interval: Option<Sample>,
    series: BoundedSeries<IntervalPoint>,
    /// Bytes done so far in the phase (for the progress fraction of byte-bounded phases).
    bytes_done: u64,
    measured: Duration,
}

impl PhaseState {
    fn new() -> PhaseState {
        PhaseState {
            start: None,
            last_interval: None,
            series: BoundedSeries::new(defaults::SERIES_POINTS),
            bytes_done: 0,
            measured: Duration::ZERO,
        }
    }
}

impl<'a> ResultRecorder<'a> {
    pub fn new(
        plan: &'a Plan,
        result: RunResult,
        json: Option<PathBuf>,
        csv: Option<CsvSink>,
        progress: ProgressLine,
    ) -> Self {
        let devices = result.target.devices.iter().map(|d| (d.name.clone(), d.role.clone())).collect();
        let recorder = ResultRecorder {
            plan,
            result,
            json,
            csv,
            progress,
            devices,
            running: BTreeMap::new(),
            output_error: None,
            vdbench_lines: matches!(plan.origin, SpecOrigin::Vdbench { .. }),
            interval_tables: true,
            formatted: FormatReport::default(),
            most_on_one_file: 0,
            streams: BTreeMap::new(),
            on_save: None,
            header: None,
            guard: None,
            started: false,
            finished: false,
        };
        // The JSON is first written when a phase starts, so a set-up failure leaves no file behind.
        recorder
    }

    /// The plan being run.
    pub fn plan(&self) -> &'a Plan {
        self.plan
    }

    /// The run stopped on an error outside its phases: the partial result is kept once a phase had started (a
    /// set-up failure before that writes nothing, and an earlier file of that name stays as it was).
    pub fn failed(&mut self) {
        if self.started {
            self.result.status = RunStatus::Failed;
            self.result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
            self.finished = true;
            self.save();
        }
    }

    /// After the summary: a failure to write an output is a warning (the run went on); files left behind are an
    /// error, and the exit code is then 2 whatever the measurements said.
    pub fn report_problems(&self, cleanup_error: Option<&str>) -> Option<std::process::ExitCode> {
        if let Some(problem) = &self.output_error {
            super::output::say(&format!("warning: {problem}"));
        }
        let problem = cleanup_error?;
        super::output::say(&format!("error: {problem}; remove it by hand"));
        Some(std::process::ExitCode::from(2))
    }

    /// The end of a command whose phases ran: the status (interrupted, or the first phase that did not
    /// complete), the finish time, and the last save.
    pub fn conclude(&mut self, interrupted: bool) {
        let result = &mut self.result;
        result.status = if interrupted {
            RunStatus::Interrupted
        } else {
            result.phases.iter().map(|p| p.status).find(|s| *s != RunStatus::Completed).unwrap_or(RunStatus::Completed)
        };
        result.finished_at = Some(crate::results::rfc3339(std::time::SystemTime::now()));
        self.finished = true;
        self.save();
    }

    /// Rewrites the JSON result (if one was asked for); `--json -` prints it once, at the end.
    pub fn save(&mut self) {
        if let Some(hook) = &mut self.on_save {
            hook(&mut self.result);
        }
        let Some(path) = self.json.as_ref().filter(|p| self.finished || !crate::outfile::is_stdout(p)) else {
            return;
        };
        let written = match &self.guard {
            Some(guard) => guard.save(&mut self.result),
            None => write_result_atomically(&self.result, path),
        };
        if let Err(e) = written {
            self.output_error.get_or_insert(e.to_string());
        }
    }

    /// Under mpirun, where a rank is killed a second after Ctrl-C: the result file says `interrupted` from the
    /// moment `interrupt` is set, before the ranks have merged what they measured (`guard.rs`).
    pub fn guard_against_kill(&mut self, interrupt: &crate::run::Interrupt) {
        if let Some(path) = self.json.as_ref().filter(|p| !crate::outfile::is_stdout(p)) {
            self.guard = Some(guard::InterruptGuard::new(interrupt, path.clone()));
        }
    }

    /// Under mpirun: the other clients' shares of the stream step about to be recorded, merged into its client
    /// figures (`results::merge_clients`).
    pub fn client_shares(&mut self, phase: usize, shares: Vec<crate::results::ClientShare>) {
        if let Some(s) = self.streams.get_mut(&phase) {
            s.others = shares;
        }
    }
}

impl RunObserver for ResultRecorder<'_> {
    fn notice(&mut self, text: &str) {
        self.progress.notice(&format!("note: {text}"));
        self.result.notices.push(text.to_string());
    }

    fn prefill(&mut self, _phase: usize, done: u64, total: u64) {
        self.progress.prefill(done, total);
    }

    fn phase_started(&mut self, index: usize, phase: &PhasePlan) {
        if !self.started {
            self.started = true;
            self.save();
        }
        if let Some(line) = self.header.as_mut().and_then(|h| h(index, phase)) {
            self.progress.println(&line);
        }
        self.progress.start_phase(index, self.plan.phases.len(), &phase.name);
        if let PhaseKind::Streams(plan) = &phase.kind {
            // A read throttle bounds what a memory-backed target serves: its figures are the throttle's.
            let memory_backed = self.plan.target.memory_backed.is_some() && !reads_throttled(&self.result.target);
            let network = self.result.target.filesystem.as_ref().filter(|f| f.is_network()).map(|f| f.fs_type.clone());
            let mut phase = streams::StreamPhase::new(plan, &self.plan.target, memory_backed, network);
            phase.alone_from(&self.result.phases);
            self.streams.insert(index, phase);
        }
        // Sampled when measurement starts (`measuring`), after the prefill and the ramp: their I/O and CPU are
        // not the phase's.
        self.running.insert(index, PhaseState::new());
        if self.vdbench_lines && !matches!(phase.kind, PhaseKind::FileSet(_)) {
            self.progress.println(&format!("\n{} (times are UTC)\n{}", phase.name, vdbench_raw_header()));
        }
        if !phase.ramp.is_zero() {
            self.progress.ramp();
        }
        self.formatted = FormatReport::default();
        self.most_on_one_file = 0;
    }

    fn fileset_sharing(&mut self, _phase: usize, most: u32) {
        self.most_on_one_file = most;
    }

    fn fileset_formatted(&mut self, _phase: usize, report: &FormatReport) {
        self.formatted = *report;
        let took = report.took.as_secs_f64();
        if report.files + report.dirs > 0 {
            self.progress.println(&format!(
                "format: {} files and {} directories created in {took:.1} s ({:.0} files/s)",
                report.files,
                report.dirs,
                report.files as f64 / took.max(1e-9)
            ));
        }
        if self.vdbench_lines || (self.interval_tables && self.progress.visible()) {
            self.progress.println(&vdbench_fs::interval_header());
        }
    }

    fn measuring(&mut self, index: usize) {
        let now = Sample::now();
        let state = self.running.entry(index).or_insert_with(PhaseState::new);
        state.last_interval = Some(now.clone());
        // A stream phase measures step after step: its activity counts from its first step.
        state.start.get_or_insert(now);
    }

    fn stream_estimate(&mut self, phase: usize, rates: crate::streams::RawRates) {
        if let Some(s) = self.streams.get_mut(&phase) {
            s.estimate(rates);
        }
    }

    fn stream_step_started(&mut self, phase: usize, count: u32) {
        if let Some(s) = self.streams.get_mut(&phase) {
            self.progress.println(&s.step_started(count));
        }
    }

    fn stream_step(&mut self, phase: usize, step: &crate::streams::StepOutcome) {
        let Some(s) = self.streams.get_mut(&phase) else { return };
        let line = s.step(step, &self.devices);
        self.progress.println(&line);
        self.result.streams = Some(s.result.clone());
        self.save();
    }

    fn stream_search(&mut self, phase: usize, found: &crate::streams::SearchOutcome) {
        if let Some(s) = self.streams.get_mut(&phase) {
            let words = s.search(found);
            self.progress.println(&format!("  {words}"));
            self.result.streams = Some(s.result.clone());
        }
    }

    fn interval(&mut self, report: &IntervalReport<'_>) {
        let now = Sample::now();
        let state = self.running.entry(report.phase).or_insert_with(PhaseState::new);
        let previous = state.last_interval.take().unwrap_or_else(Sample::now);
        let elapsed = now.at.saturating_duration_since(previous.at);
        let devices = device_activity(&self.devices, &previous.disks, &now.disks, elapsed);
        let cpu = now.cpu.cpu_since(&previous.cpu).as_secs_f64() * report.length.as_secs_f64()
            / elapsed.as_secs_f64().max(1e-9);
        let mut point = interval_point(report.start, report.length, report.recorder, cpu, &devices);
        let phase = &self.plan.phases[report.phase];
        if phase.raw().is_some_and(|raw| raw.logs.hist.is_some()) {
            keep_fio_hist(&mut point, report.recorder);
        }
        if let PhaseKind::FileSet(fs) = &phase.kind {
            point.file_ops = file_op_points(report.recorder, report.length);
            if self.vdbench_lines || (self.interval_tables && self.progress.visible()) {
                let requested: Vec<&str> = fs.requested_classes().iter().map(|c| c.name()).collect();
                self.progress.println(&vdbench_fs::interval_line(report.index + 1, &point, &requested));
            }
        }
        if let Some(csv) = &mut self.csv
            && let Err(e) = csv.write(report.phase, &phase.name, &point)
        {
            self.output_error.get_or_insert(format!("cannot write the CSV file: {e}"));
            self.csv = None;
        }
        if self.vdbench_lines && !matches!(phase.kind, PhaseKind::FileSet(_)) {
            self.progress.println(&vdbench_raw_line(&clock_time(), report.index + 1, &point));
        }
        let state = self.running.get_mut(&report.phase).expect("inserted above");
        state.series.push(point);
        state.bytes_done += report.recorder.total_bytes();
        state.measured = report.start + report.length;
        let measured = state.measured;
        let amount = phase.raw().and_then(|raw| raw.io_size.or_else(|| raw.planned_bytes()));
        let (fraction, remaining) = match (phase.runtime, amount) {
            (Some(runtime), _) => {
                (Some(measured.as_secs_f64() / runtime.as_secs_f64()), Some(runtime.saturating_sub(measured)))
            }
            (None, Some(total)) => (Some(state.bytes_done as f64 / total.0 as f64), None),
            (None, None) => (None, None),
        };
        state.last_interval = Some(now);
        self.progress.interval(report, measured, fraction, remaining);
    }

    fn phase_finished(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        self.record_phase(index, phase, outcome);
        self.save();
    }
}

impl ResultRecorder<'_> {
    /// Adds a finished phase to the result, without saving it (a caller that adds more saves once). An
    /// interrupted phase marks the run interrupted already: if the process is killed before the end of the
    /// command (a second Ctrl-C; mpirun's SIGKILL a second after its SIGTERM), the saved result says so.
    pub fn record_phase(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        if outcome.stop == StopReason::Interrupted {
            self.result.status = RunStatus::Interrupted;
            self.result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
        }
        let end = Sample::now();
        let state = self.running.remove(&index).unwrap_or_else(PhaseState::new);
        // A phase that ended before measuring began (Ctrl-C in the prefill or the ramp) reports no activity.
        let start = state.start.unwrap_or_else(|| end.clone());
        let (status, failure) = phase_status(&outcome.stop);
        let outline = phase.outline(&self.plan.target.files);
        let measurements = PhaseMeasurements {
            totals: &outcome.totals,
            measured: outcome.measured,
            status,
            failure,
            errors: &outcome.errors,
            direct: outcome.direct,
            memory_backed: self.plan.target.memory_backed.is_some(),
            memory_limit: self.result.host.memory_limit,
            engine: engine_detail(&outline, outcome),
            started_at: rfc3339(outcome.started),
            workers: &outcome.workers,
            latency_depths: &outcome.latency_depths,
            steady: outcome.steady.as_ref(),
        };
        let samples = phase_samples(start, end, self.devices.clone());
        let intervals = (state.series.points(), state.series.stride());
        let mut result = build_phase(index, (phase, &outline), &measurements, &samples, intervals);
        flag_implausible_devices(&mut result, &self.result.target);
        result.on = phase_devices(&self.plan.target, phase);
        result.skew = crate::results::skew_check(phase, &outcome.ops_by_worker);
        if let PhaseKind::FileSet(fs) = &phase.kind {
            let f = &self.formatted;
            result.file_ops = Some(file_ops_result(
                &outcome.totals,
                outcome.measured,
                &fs.requested_classes(),
                (f.files, f.dirs, f.took),
            ));
            if let Some(ops) = result.file_ops.as_mut() {
                ops.most_threads_on_one_file = (self.most_on_one_file > 0).then_some(self.most_on_one_file);
            }
        }
        if let Some(mut s) = self.streams.remove(&index) {
            s.finished(outcome.direct);
            result.streams = Some(s.result.clone());
            self.result.streams = Some(s.result);
        }
        // Concurrent phases may finish out of order; the result lists phases in plan order.
        let at = self.result.phases.partition_point(|p| p.index < index);
        if self.vdbench_lines && !matches!(phase.kind, PhaseKind::FileSet(_)) {
            self.progress.println(&vdbench_raw_average(&clock_time(), &result));
        }
        self.result.phases.insert(at, result);
    }
}

/// How the phase's I/O was issued: the engine, and the queue depth and registrations it really had.
fn engine_detail(phase: &Outline, outcome: &PhaseOutcome) -> EngineDetail {
    EngineDetail {
        name: phase.engine.name().to_string(),
        queue_depth: outcome.caps.map_or(phase.iodepth, |c| c.queue_depth),
        registered_buffers: outcome.caps.is_some_and(|c| c.registered_buffers),
        registered_files: outcome.caps.is_some_and(|c| c.registered_files),
    }
}

/// The devices a raw phase ran on, when the target is several devices (each phase on its own); else none.
fn phase_devices(target: &crate::plan::TargetPlan, phase: &PhasePlan) -> Vec<String> {
    let several = target.kind == crate::plan::TargetKind::BlockDevice && target.files.len() > 1;
    let Some(raw) = phase.raw().filter(|_| several) else { return Vec::new() };
    raw.files.iter().map(|&i| target.files[i as usize].path.display().to_string()).collect()
}

/// The system samples at a phase's start and end, for `devices`.
fn phase_samples(start: Sample, end: Sample, devices: Vec<(String, String)>) -> PhaseSamples {
    PhaseSamples {
        disks_before: start.disks,
        disks_after: end.disks,
        cpu_before: start.cpu,
        cpu_after: end.cpu,
        system_before: start.system,
        system_after: end.system,
        memory_before: start.memory,
        memory_after: end.memory,
        devices,
        span: end.at.saturating_duration_since(start.at),
    }
}

/// The time of day, UTC, as vdbench prints it (hh:mm:ss.mmm).
fn clock_time() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (since.as_secs() % 86_400, since.subsec_millis());
    format!("{:02}:{:02}:{:02}.{millis:03}", secs / 3600, secs / 60 % 60, secs % 60)
}

pub fn phase_status(stop: &StopReason) -> (RunStatus, Option<String>) {
    match stop {
        StopReason::Completed => (RunStatus::Completed, None),
        StopReason::Interrupted => (RunStatus::Interrupted, None),
        StopReason::IoError => (RunStatus::IoError, None),
        StopReason::Failed(why) => (RunStatus::Failed, Some(why.clone())),
    }
}

/// The interval's latencies in fio's bins, for the phase's histogram log (`write_hist_log`).
fn keep_fio_hist(point: &mut crate::results::IntervalPoint, recorder: &crate::metrics::Recorder) {
    use crate::metrics::OpClass;
    for (class, figures) in [(OpClass::Read, &mut point.read), (OpClass::Write, &mut point.write)] {
        if let Some(figures) = figures {
            figures.fio_hist = Some(recorder.stats(class).latency.fio_bins());
        }
    }
}
