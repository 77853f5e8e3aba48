//! Following a stream phase for the result: its settings, each step as it ends (with the devices' activity and
//! streamcap's CPU around it), the estimate and the search's answer — kept as a `StreamsResult` that the JSON
//! is rewritten with after every step.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Instant;

use crate::engine::{EngineKind, HttpUrl, connections};
use crate::plan::{MediaSource, StreamsPlan, TargetPlan};
use crate::results::{
    ClientSample, Connections, DeviceResult, FormatShare, QualityTarget, StepContext, StreamsResult, StreamsStep,
    attribute, build_step, capacity_answer, cpu_per_gb, device_activity, merge_clients, served_from_beneath,
};
use crate::streams::{RawRates, SearchOutcome, StepOutcome, StreamsConfig, compare, estimate};
use crate::sysinfo::{DiskStat, ProcessCpu, read_diskstats, usable_cpus};
use crate::units::format_duration;

pub struct StreamPhase {
    pub result: StreamsResult,
    config: StreamsConfig,
    memory_backed: bool,
    /// Remote media: whether every URL names this host (loopback), for the words of a step whose server's
    /// devices are not watched; `None` for local media.
    remote_on_loopback: Option<bool>,
    /// The media's network filesystem type (sshfs, nfs…), whose server's disks cannot be seen from here.
    network: Option<String>,
    /// Counters taken when the current step started.
    before: Option<(Vec<DiskStat>, ProcessCpu, Instant)>,
    /// HTTP connections opened and reopened by this process when the current step started (`engine::connections`).
    connections_before: (u64, u64),
    /// The CPUs this process may use (affinity, cgroup CPU quota): what its CPU use is judged against.
    usable_cpus: f64,
    /// Under mpirun, on rank 0: the other clients' shares of the step about to be recorded.
    pub others: Vec<crate::results::ClientShare>,
    /// The longest request a viewer makes: the largest chunk, or a playlist's largest segment, bytes.
    largest_request: u64,
}

/// The chunk a result states (a playlist's requests are its segments: the largest of them stands for the
/// chunk) and the longest request any viewer makes, bytes.
fn request_sizes(plan: &StreamsPlan) -> (u64, u64) {
    let config = &plan.config;
    let largest_segment = plan.playlists().map(|t| t.largest().div_ceil(4096) * 4096).max();
    let largest_chunk = (0..config.mix.0.len()).map(|i| config.chunk_bytes(i)).max().unwrap_or(0);
    (largest_segment.unwrap_or(config.chunk_bytes(0)), largest_segment.unwrap_or(0).max(largest_chunk))
}

/// How requests were shaped, as the result says it: the playlists' segments in words, or the delivery asked.
fn delivery_of(plan: &StreamsPlan) -> String {
    match crate::streams::segmented::words_of(plan.playlists()) {
        Some(words) => format!("playlist: {words}"),
        None => plan.config.delivery.to_string(),
    }
}

/// Bytes of the media the viewers read: the files', or what each URL's server said.
fn media_bytes(plan: &StreamsPlan, target: &TargetPlan) -> u64 {
    let size = |m: &MediaSource| match m {
        MediaSource::File(f) => target.files[*f as usize].size.0,
        MediaSource::Url { size, .. } => *size,
        MediaSource::Segments(title) => title.bytes,
    };
    plan.media.iter().map(size).sum()
}

impl StreamPhase {
    pub fn new(plan: &StreamsPlan, target: &TargetPlan, memory_backed: bool, network: Option<String>) -> StreamPhase {
        let config = plan.config.clone();
        let total_weight: u32 = config.mix.0.iter().map(|(_, w)| w).sum();
        let media_bytes = media_bytes(plan, target);
        let (chunk_bytes, largest_request) = request_sizes(plan);
        let result = StreamsResult {
            label: config.mix.label(),
            formats: config
                .mix
                .0
                .iter()
                .map(|(f, w)| FormatShare {
                    name: f.name.clone(),
                    bitrate_bps: f.bitrate.bits_per_sec(),
                    share_pct: f64::from(*w) * 100.0 / f64::from(total_weight),
                })
                .collect(),
            chunk_bytes,
            delivery: delivery_of(plan),
            buffer_s: config.buffer.as_secs_f64(),
            prebuffer_s: config.prebuffer.as_secs_f64(),
            watch_s: config.watch.as_secs_f64(),
            assignment: config.assignment.to_string(),
            seek_every_s: config.seek_every.map(|d| d.as_secs_f64()),
            vbr_pct: config.vbr.map(|x| x * 100.0),
            own_media: plan.own_media,
            library: plan.library.clone(),
            media_files: plan.media.len(),
            media_bytes,
            direct: plan.direct != crate::plan::DirectMode::Off,
            target: QualityTarget {
                max_stalled_streams: plan.target.max_stalled,
                max_startup_s: plan.target.max_startup.as_secs_f64(),
                steady_within_s: config.steady_within.as_secs_f64(),
            },
            steps: Vec::new(),
            capacity: None,
            estimate: None,
            household: None,
            during: plan.during.iter().map(|d| d.load.name().to_string()).collect(),
            alone: None,
            background: Vec::new(),
            client_cpu_s_per_gb: None,
        };
        let remote_on_loopback = remote_on_loopback(plan);
        StreamPhase {
            result,
            config,
            memory_backed,
            remote_on_loopback,
            network,
            before: None,
            connections_before: connections(),
            usable_cpus: usable_cpus(),
            others: Vec::new(),
            largest_request,
        }
    }

    pub fn estimate(&mut self, rates: RawRates) {
        self.result.estimate = Some(estimate(rates, &self.config));
    }

    /// Takes the counters a step's activity is measured from; returns the line announcing it.
    pub fn step_started(&mut self, count: u32) -> String {
        self.before = Some((read_diskstats().unwrap_or_default(), ProcessCpu::read(), Instant::now()));
        self.connections_before = connections();
        let length = self.config.step_length(count);
        let arrive = if count > 1 {
            format!("arriving over {}", format_duration(length.arrival))
        } else {
            "starting at once".into()
        };
        format!(
            "{count} viewers of {} {arrive}, judged for {} once every buffer is full…",
            self.result.label,
            format_duration(length.judged)
        )
    }

    /// Records a step; returns its line for the progress output.
    pub fn step(&mut self, step: &StepOutcome, devices: &[(String, String)]) -> String {
        let (disks, cpu, started) = self
            .before
            .take()
            .unwrap_or_else(|| (read_diskstats().unwrap_or_default(), ProcessCpu::read(), Instant::now()));
        let after = ProcessCpu::read();
        let bitrates: Vec<u64> =
            self.config.mix.assign(step.count).iter().map(|&f| self.config.mix.0[f].0.bitrate.bits_per_sec()).collect();
        let context = StepContext {
            bitrates: &bitrates,
            target: self.result.target,
            cpu: after.cpu_since(&cpu),
            peak_rss_bytes: after.max_rss.0,
            devices: self.attributed(
                device_activity(devices, &disks, &read_diskstats().unwrap_or_default(), started.elapsed()),
                // A web server reads for remote viewers (`--served-from`), not this process: its reads are not
                // in this process's count, so nothing is split off by it. Nor under mpirun: the other ranks on
                // this host read for the same step, in processes of their own.
                (
                    step.count,
                    after
                        .storage_reads_since(&cpu)
                        .filter(|_| self.remote_on_loopback.is_none() && step.clients.len() <= 1),
                ),
            ),
            unseen: self.unseen(step, devices.is_empty()),
            client: self.client_sample(),
        };
        let mut measured = build_step(step, context);
        if !self.others.is_empty() {
            let others = std::mem::take(&mut self.others);
            let lag = step.issue_lag.percentile(99.0);
            measured.client = merge_clients(&measured.client, &others, step.elapsed, step.read_bytes, lag);
        }
        let mut line = step_line(&measured);
        for load in &measured.background {
            line.push_str(&format!("\n          beside them: {}", load.words()));
        }
        if measured.cache_served {
            line.push_str(&format!("\n          {}", measured.served_words));
        }
        self.result.steps.push(measured);
        self.result.background = background_total(&self.result.steps);
        self.result.client_cpu_s_per_gb = cpu_per_gb(self.result.steps.iter().map(|s| (&s.client, s.read_bytes)));
        line
    }

    /// `--during`: the capacity of the same viewers alone, from the last earlier phase that searched for it.
    pub fn alone_from(&mut self, earlier: &[crate::results::PhaseResult]) {
        if self.result.during.is_empty() {
            return;
        }
        let mut alone = earlier.iter().rev().filter_map(|p| p.streams.as_ref());
        let alone = alone.find(|r| r.during.is_empty() && r.label == self.result.label && r.capacity.is_some());
        self.result.alone = alone.and_then(|r| r.capacity.as_ref()).map(|c| c.streams);
    }

    /// The client's CPUs and, for remote media, the connections this process set up since the step started.
    fn client_sample(&self) -> ClientSample {
        let ((opened, reopened), (opened_before, reopened_before)) = (connections(), self.connections_before);
        ClientSample {
            cpu: std::time::Duration::ZERO,
            usable_cpus: self.usable_cpus,
            connections: self.remote_on_loopback.map(|_| Connections {
                opened: opened.saturating_sub(opened_before),
                reconnects: reopened.saturating_sub(reopened_before),
            }),
        }
    }

    /// Why this step's devices cannot be set beside its viewers' bytes, or `None` when they can.
    fn unseen(&self, step: &StepOutcome, no_devices: bool) -> Option<String> {
        let hosts: BTreeSet<&str> = step.clients.iter().map(|c| c.host.as_str()).collect();
        if step.engine == EngineKind::Null.name() {
            Some("the null engine reads nothing".into())
        } else if let Some(fs) = &self.network {
            Some(format!(
                "the media is on a network filesystem ({fs}): every chunk crossed the link, and the server's disks \
                 and cache cannot be seen from here"
            ))
        } else if hosts.len() > 1 {
            Some(format!(
                "the viewers ran on {} hosts, and the devices beneath the others cannot be seen from this one",
                hosts.len()
            ))
        } else {
            match (self.remote_on_loopback, no_devices) {
                (Some(true), true) => Some(
                    "the web server runs on this host, but its document root was not given (--served-from DIR): \
                     its page cache may have served the viewers"
                        .into(),
                ),
                (Some(false), true) => Some(
                    "the server is remote, and its cache cannot be seen from here: its answers may have come from \
                     its RAM"
                        .into(),
                ),
                _ => None,
            }
        }
    }

    /// A step's device activity with what was not the run's split off (`results::attribute`); each of `count`
    /// viewers may have two chunks in flight at either end of the step.
    fn attributed(&self, mut devices: Vec<DeviceResult>, (count, reads): (u32, Option<u64>)) -> Vec<DeviceResult> {
        attribute(&mut devices, reads, u64::from(count) * 2 * self.largest_request);
        devices
    }

    /// Records the search's answer; returns it in words.
    pub fn search(&mut self, found: &SearchOutcome) -> String {
        let answer = capacity_answer(found, &self.result.steps, &self.result.target, &self.result.label);
        if let Some(e) = self.result.estimate.as_mut() {
            compare(e, answer.streams, self.memory_backed && !served_from_beneath(&self.result.steps));
        }
        let words = answer.words.clone();
        self.result.capacity = Some(answer);
        words
    }

    /// The phase ended: whether its reads bypassed the page cache, and the estimate against a fixed count that
    /// met the target.
    pub fn finished(&mut self, direct: bool) {
        self.result.direct = direct;
        let passed = self.result.capacity.is_none() && self.result.steps.iter().all(|s| s.meets_target);
        if let (Some(e), Some(step), true) = (self.result.estimate.as_mut(), self.result.steps.last(), passed)
            && e.comparison.is_none()
        {
            compare(e, step.count, self.memory_backed && !served_from_beneath(&self.result.steps));
        }
    }
}

/// The progress line of a finished step: its count, what its viewers went through, start-up and lateness p99
/// in the unit the summary's table uses (units::format_latency_ns: "2.08 s", "199 ms"), and the judgement.
fn step_line(measured: &StreamsStep) -> String {
    format!(
        "  {:>6} streams: {}; start-up p99 {}, lateness p99 {}{}",
        measured.count,
        step_words(measured),
        // In the unit the summary's table uses (units::format_latency_ns: "2.08 s", "199 ms").
        crate::units::format_latency_ns(measured.startup.at(99.0).unwrap_or(0) as f64),
        crate::units::format_latency_ns(measured.lateness.at(99.0).unwrap_or(0) as f64),
        match (measured.meets_target, measured.interrupted, measured.cache_served) {
            (_, true, _) => "  interrupted",
            (true, _, true) => "  cache-served (not counted)",
            (true, _, false) => "  ok",
            (false, _, _) => "  missed",
        }
    )
}

/// What a step's viewers went through, start-up apart from playback: "all steady at 9.2 s, 0 stalled in 8.0 s
/// of playback", "2 never started, 1 did not fill its buffer (stopped at 7.1 s)".
fn step_words(step: &StreamsStep) -> String {
    let mut words = Vec::new();
    for (n, what) in [
        (step.streams_not_started, "never started"),
        (step.streams_slow_start, "slow to start"),
        (step.streams_startup_stalled, "stalled while starting"),
        (step.streams_not_steady, "never filled the buffer"),
    ] {
        if n > 0 {
            words.push(format!("{n} {what}"));
        }
    }
    match step.steady_at_s {
        Some(at) => words.push(format!(
            "all steady at {at:.1} s, {} stalled in {:.1} s of playback",
            step.streams_stalled, step.judged_s
        )),
        None if step.streams_stalled > 0 => words.push(format!("{} stalled during playback", step.streams_stalled)),
        None => {}
    }
    if let (Some(drained), Some(allowed)) = (step.buffer_drained_s, step.buffer_drain_allowed_s)
        && drained > allowed
    {
        words.push(format!("buffers fell {drained:.2} s each (at most {allowed:.2} s allowed)"));
    }
    if let Some(cut) = step.cut_s {
        words.push(format!("stopped at {cut:.1} s"));
    }
    if words.is_empty() {
        words.push("stopped before every viewer was steady".into());
    }
    words.join(", ")
}

/// Remote media: whether every URL names this host (loopback); `None` for local media.
fn remote_on_loopback(plan: &StreamsPlan) -> Option<bool> {
    let urls: Vec<&HttpUrl> = plan
        .media
        .iter()
        .filter_map(|m| match m {
            MediaSource::Url { url, .. } => Some(url),
            MediaSource::File(_) | MediaSource::Segments(_) => None,
        })
        .collect();
    (!urls.is_empty()).then(|| urls.iter().all(|u| on_loopback(&u.host)))
}

/// Whether a URL's host is this host's loopback ("localhost", 127.0.0.0/8, ::1).
pub fn on_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What each background load did over every step so far, per load in the order of the first step.
fn background_total(steps: &[crate::results::StreamsStep]) -> Vec<crate::streams::BackgroundFigures> {
    let mut total: Vec<crate::streams::BackgroundFigures> = Vec::new();
    for figures in steps.iter().flat_map(|s| &s.background) {
        match total.iter_mut().find(|t| t.load == figures.load) {
            Some(t) => t.add(figures),
            None => total.push(figures.clone()),
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::{on_loopback, step_line};

    /// Regression (issue 30): the progress line said "1757.41 ms" where the summary says "1.76 s".
    #[test]
    fn a_step_line_says_latencies_in_the_summarys_units() {
        let text = include_str!("../../../tests/fixtures/streams-v1.json");
        let result = crate::results::parse_result(std::path::Path::new("streams-v1.json"), text).expect("a result");
        let steps = &result.streams.expect("a streams result").steps;
        let missed = steps.iter().find(|s| s.count == 12).expect("the step at 12");
        let line = step_line(missed);
        assert!(line.contains("start-up p99 2.08 s, lateness p99 1.15 s"), "{line}");
        assert!(line.trim_end().ends_with("missed"), "{line}");
    }

    #[test]
    fn loopback_hosts_are_this_host() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1"] {
            assert!(on_loopback(host), "{host}");
        }
        for host in ["jellyfin.lan", "10.0.0.5", "::2", "localhost.example"] {
            assert!(!on_loopback(host), "{host}");
        }
    }
}
