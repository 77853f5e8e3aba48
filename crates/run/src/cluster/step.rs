//! Stream steps across clients: every rank lays out the same viewers for a step's total count and runs every
//! `size`-th of them (`mine`), and after the step the ranks' outcomes are merged into the outcome one process
//! running every viewer would have had — each viewer's figures from the rank that ran it, lateness and issue
//! lag merged by adding histograms — with each client's share beside it. Every rank merges the same bytes in the
//! same order, so the capacity search takes the same next count everywhere.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Cluster, Key, pack, unpack};
use crate::metrics::{Histogram, decode_histogram, encode_histogram};
use ::streams::{ClientStep, IngestOutcome, StepOutcome, StreamStats};

/// The viewers (indices into a step's viewer list of `count`) that `rank` of `size` runs.
pub fn viewers_of(rank: u32, size: u32, count: usize) -> Vec<usize> {
    (rank as usize..count).step_by(size.max(1) as usize).collect()
}

/// What a rank sends of its step (histograms travel beside it as bytes).
#[derive(Serialize, Deserialize)]
struct Sent {
    count: u32,
    /// The rank's own viewers: (index, figures).
    streams: Vec<(u32, StreamStats)>,
    /// Bytes the rank's viewers read.
    #[serde(default)]
    read_bytes: u64,
    errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    /// When this rank's last viewer reached steady state, and when a failure cut its step short.
    #[serde(default)]
    steady_at: Option<Duration>,
    #[serde(default)]
    cut: Option<Duration>,
    interrupted: bool,
    /// The ingest writers' figures (only rank 0 runs them).
    ingest: Option<(u32, f64, u64, u64, Option<String>)>,
}

fn encode(cluster: &Cluster, step: &StepOutcome) -> Vec<u8> {
    let mine = viewers_of(cluster.rank(), cluster.size(), step.streams.len());
    let sent = Sent {
        count: step.count,
        streams: mine.iter().map(|&i| (i as u32, step.streams[i].clone())).collect(),
        read_bytes: step.read_bytes,
        errors: step.errors,
        first_error: step.first_error.clone(),
        elapsed: step.elapsed,
        steady_at: step.steady_at,
        cut: step.cut,
        interrupted: step.interrupted,
        ingest: step
            .ingest
            .as_ref()
            .map(|i| (i.writers, i.target_bytes_per_sec, i.bytes, i.errors, i.first_error.clone())),
    };
    let mut histograms = Vec::new();
    encode_histogram(&step.lateness, &mut histograms);
    encode_histogram(&step.issue_lag, &mut histograms);
    let empty = Histogram::new();
    encode_histogram(step.ingest.as_ref().map_or(&empty, |i| &i.write_latency), &mut histograms);
    pack(&[serde_json::to_vec(&sent).expect("plain data"), histograms])
}

/// One rank's step, decoded: what it sent and its lateness, issue-lag and ingest histograms.
fn decode(bytes: &[u8]) -> Option<(Sent, [Histogram; 3])> {
    let parts = unpack(bytes)?;
    let sent: Sent = serde_json::from_slice(parts.first()?).ok()?;
    let mut rest = parts.get(1)?.as_slice();
    let mut next = || decode_histogram(&mut rest).ok();
    Some((sent, [next()?, next()?, next()?]))
}

/// Why rank `rank`'s step is missing: it was lost, or what it sent could not be read.
fn unread(cluster: &Cluster, rank: u32) -> String {
    let why = if cluster.unreachable(rank) { cluster.lost_reason() } else { "its step could not be read".into() };
    format!("{}: {why}", cluster.name(rank))
}

/// The step as one process running every viewer would have measured it, with each client's share. Collective.
pub fn merge_step(cluster: &Cluster, phase: usize, step: u32, local: StepOutcome) -> StepOutcome {
    let all = cluster.exchange(Key::new(Key::STEP, phase as u64, u64::from(step)), &encode(cluster, &local));
    let mut merged = StepOutcome {
        streams: vec![StreamStats::default(); local.streams.len()],
        lateness: Histogram::new(),
        issue_lag: Histogram::new(),
        read_bytes: 0,
        errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        steady_at: Some(Duration::ZERO),
        cut: None,
        interrupted: false,
        ingest: None,
        clients: Vec::new(),
        ..local
    };
    let mut clients = Vec::new();
    for (rank, bytes) in all.iter().enumerate() {
        let Some((sent, [lateness, issue_lag, ingest_latency])) = decode(bytes) else {
            merged.first_error.get_or_insert_with(|| unread(cluster, rank as u32));
            merged.errors += 1;
            continue;
        };
        for (index, stats) in &sent.streams {
            if let Some(slot) = merged.streams.get_mut(*index as usize) {
                *slot = stats.clone();
            }
        }
        merged.lateness.merge(&lateness);
        merged.issue_lag.merge(&issue_lag);
        if merged.first_error.is_none() {
            merged.first_error = sent.first_error.clone().map(|e| format!("{}: {e}", cluster.name(rank as u32)));
        }
        merge_totals(&mut merged, &sent);
        if let Some((writers, target_bytes_per_sec, bytes, errors, first_error)) = sent.ingest.clone()
            && writers > 0
            && merged.ingest.is_none()
        {
            let write_latency = ingest_latency;
            merged.ingest =
                Some(IngestOutcome { writers, target_bytes_per_sec, bytes, write_latency, errors, first_error });
        }
        clients.push((rank as u32, sent, issue_lag, lateness));
    }
    merged.clients = clients
        .into_iter()
        .map(|(rank, sent, issue_lag, lateness)| ClientStep {
            rank,
            host: cluster.hosts().get(rank as usize).cloned().unwrap_or_default(),
            viewers: sent.streams.len() as u32,
            stalled: sent.streams.iter().filter(|(_, s)| merged.is_stalled(s)).count() as u32,
            errors: sent.errors,
            issue_lag_p99: Duration::from_nanos(issue_lag.percentile(99.0)),
            lateness_p99: Duration::from_nanos(lateness.percentile(99.0)),
        })
        .collect();
    merged
}

/// A rank's totals and timing into the merged step: its reads and errors added; the longest elapsed; every
/// rank's viewers steady, the last of them; a cut on any rank, the first; interrupted on any rank.
fn merge_totals(merged: &mut StepOutcome, sent: &Sent) {
    merged.read_bytes += sent.read_bytes;
    merged.errors += sent.errors;
    merged.elapsed = merged.elapsed.max(sent.elapsed);
    merged.steady_at = merged.steady_at.zip(sent.steady_at).map(|(a, b)| a.max(b));
    merged.cut = merged.cut.into_iter().chain(sent.cut).min();
    merged.interrupted |= sent.interrupted;
}

#[cfg(test)]
mod tests {
    use super::super::local::ranks;
    use super::*;

    fn stats(bytes: u64, stalls: u32) -> StreamStats {
        StreamStats { startup: Some(Duration::from_millis(300)), stalls, bytes, ..StreamStats::default() }
    }

    /// Seven viewers over three ranks: each rank fills in only its own; the merge puts every viewer back in its
    /// place, adds the histograms and names each client's share.
    #[test]
    fn a_step_merged_over_ranks_is_the_step_of_all_viewers() {
        let got = ranks(3, |cluster| {
            let mine = viewers_of(cluster.rank(), cluster.size(), 7);
            let mut streams = vec![StreamStats::default(); 7];
            let mut lateness = Histogram::new();
            for &i in &mine {
                streams[i] = stats(1000 + i as u64, u32::from(i == 4));
                lateness.record(1_000_000 * (i as u64 + 1));
            }
            let local = StepOutcome {
                count: 7,
                streams,
                lateness: lateness.clone(),
                issue_lag: lateness,
                read_bytes: 1 << 20,
                errors: u64::from(cluster.rank() == 2),
                first_error: (cluster.rank() == 2).then(|| "read failed".to_string()),
                elapsed: Duration::from_secs(10 + u64::from(cluster.rank())),
                arrival: Duration::from_secs(2),
                judging: ::streams::Judging {
                    steady_within: Duration::from_secs(5),
                    judged: Duration::from_secs(5),
                    fail_fast: false,
                    max_startup: Duration::from_secs(2),
                },
                steady_at: Some(Duration::from_secs(3 + u64::from(cluster.rank()))),
                cut: None,
                interrupted: false,
                engine: "io_uring",
                ingest: None,
                background: Vec::new(),
                clients: Vec::new(),
            };
            merge_step(&cluster, 1, 0, local)
        });
        for merged in got {
            assert_eq!(merged.streams.iter().map(|s| s.bytes).collect::<Vec<_>>(), (1000..1007).collect::<Vec<_>>());
            assert_eq!(merged.stalled(), 1);
            assert_eq!(merged.lateness.count(), 7);
            assert_eq!(merged.lateness.max(), 7_000_000);
            assert_eq!(merged.errors, 1);
            assert_eq!(merged.read_bytes, 3 << 20, "every rank's reads");
            assert_eq!(merged.first_error.as_deref(), Some("rank 2 (host2): read failed"));
            assert_eq!(merged.elapsed, Duration::from_secs(12));
            assert_eq!(merged.steady_at, Some(Duration::from_secs(5)), "the last rank's last steady viewer");
            let viewers: Vec<u32> = merged.clients.iter().map(|c| c.viewers).collect();
            assert_eq!(viewers, [3, 2, 2]);
            // Viewer 4 (rank 1's) stalled.
            assert_eq!(merged.clients.iter().map(|c| c.stalled).collect::<Vec<_>>(), [0, 1, 0]);
        }
    }
}
