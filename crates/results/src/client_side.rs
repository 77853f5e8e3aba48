//! What the client (this streamcap process) spent on a stream step, and whether it, rather than the source, was
//! the limit: its CPU time against the CPUs it may use, CPU seconds per GB received (the price of TLS shows
//! here: set an https run beside an http one), the connections it set up to an http(s) server, and its own lag
//! in issuing due requests. Pure arithmetic on figures the app sampled around the step.
//!
//! The client is named as the limit when its CPU reached [`CLIENT_CPU_LIMIT_PCT`] of the CPUs it may use
//! (affinity and a cgroup CPU quota), or when its own lag p99 passes `CLIENT_LAG_LIMIT_MS` while it was busy
//! ([`lag_is_the_clients`]: from an idle client, late requests waited for the storage or the link, since a viewer
//! asks for its next chunk when the one before arrives): the rules a multi-host run judges each client by
//! (`cluster.rs`). Under mpirun every client's CPU time and connections are merged into the step's
//! (`merge_clients`), so the figures are all clients', not rank 0's alone.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::cluster::{CLIENT_CPU_LIMIT_PCT, lag_is_the_clients};

/// The client's side of one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientLoad {
    /// streamcap's CPU time over the step, user + system, seconds (all its threads).
    pub cpu_s: f64,
    /// CPU seconds per GB (10^9 bytes) the viewers received: TLS decryption shows here. Absent when nothing
    /// was received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_gb: Option<f64>,
    /// CPUs this process could use: its affinity mask, or fewer under a cgroup CPU quota (fractional).
    pub usable_cpus: f64,
    /// CPU time over the step's duration, percent of `usable_cpus` (100: every CPU it may use was busy).
    pub cpu_busy_pct: f64,
    /// Remote media: the connections set up during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<Connections>,
    /// The client was the limit, in words ("the client was the limit: own lag p99 12 ms, CPU 98 % of the 2
    /// CPUs it may use"); absent when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

/// Connections to an http(s) server over one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    /// Set up when the viewers started: one keep-alive connection per viewer (TLS handshake included for
    /// https).
    pub opened: u64,
    /// Set up again after the server closed an idle one (keep-alive timeout, request limit, `Connection:
    /// close`).
    pub reconnects: u64,
}

/// What the app sampled around a step.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientSample {
    /// streamcap's CPU time over the step (user + system).
    pub cpu: Duration,
    /// CPUs this process could use.
    pub usable_cpus: f64,
    /// Remote media: connections set up during the step.
    pub connections: Option<Connections>,
}

/// The client's side of a step of `elapsed` in which the viewers received `received` bytes and requests went
/// out `lag_p99_ns` late at the 99th percentile.
pub fn client_load(sample: ClientSample, elapsed: Duration, received: u64, lag_p99_ns: u64) -> ClientLoad {
    let cpu_s = sample.cpu.as_secs_f64();
    let usable = sample.usable_cpus.max(0.01);
    let seconds = elapsed.as_secs_f64();
    let busy = if seconds > 0.0 { cpu_s / seconds / usable * 100.0 } else { 0.0 };
    let lag_ms = lag_p99_ns as f64 / 1e6;
    let limited = busy >= CLIENT_CPU_LIMIT_PCT || lag_is_the_clients(lag_ms, busy);
    ClientLoad {
        cpu_s,
        cpu_s_per_gb: (received > 0).then(|| cpu_s / (received as f64 / 1e9)),
        usable_cpus: usable,
        cpu_busy_pct: busy,
        connections: sample.connections,
        limit: limited.then(|| format!("the client was the limit: {}", own_words(lag_p99_ns, busy, usable))),
    }
}

/// "own lag p99 12 ms, CPU 98 % of the 2 CPUs it may use".
pub fn own_words(lag_p99_ns: u64, busy_pct: f64, usable: f64) -> String {
    let cpus = if (usable - usable.round()).abs() < 0.005 {
        let n = usable.round();
        if n == 1.0 { "the 1 CPU".to_string() } else { format!("the {n:.0} CPUs") }
    } else {
        format!("the {usable:.2} CPUs")
    };
    format!(
        "own lag p99 {}, CPU {busy_pct:.0} % of {cpus} it may use",
        crate::units::format_latency_ns(lag_p99_ns as f64)
    )
}

/// One other client's side of a multi-host step, as it tells rank 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientShare {
    /// Its CPU time over the step, user + system, seconds.
    pub cpu_s: f64,
    /// The CPUs it may use.
    pub usable_cpus: f64,
    /// The http(s) connections it set up during the step.
    pub connections: Connections,
}

/// The step's client side over every client of a multi-host run: `own` is rank 0's (from its own sample),
/// `others` every other client's. CPU time and connections add up (connections only for remote media, where
/// `own` has them); CPU per GB is all their CPU time over all the bytes the viewers received (`received`, the
/// merged step's); busy is all their CPU time over all the CPUs they may use. The limit is judged, as for one
/// client, by the busiest client and the merged own lag p99 (`lag_p99_ns`): a limit shows on the busiest.
pub fn merge_clients(
    own: &ClientLoad,
    others: &[ClientShare],
    elapsed: Duration,
    received: u64,
    lag_p99_ns: u64,
) -> ClientLoad {
    let seconds = elapsed.as_secs_f64();
    let busy = |cpu_s: f64, usable: f64| if seconds > 0.0 { cpu_s / seconds / usable.max(0.01) * 100.0 } else { 0.0 };
    let cpu_s = own.cpu_s + others.iter().map(|o| o.cpu_s).sum::<f64>();
    let usable = own.usable_cpus + others.iter().map(|o| o.usable_cpus).sum::<f64>();
    let (busiest, busiest_usable) = others
        .iter()
        .map(|o| (busy(o.cpu_s, o.usable_cpus), o.usable_cpus))
        .fold((own.cpu_busy_pct, own.usable_cpus), |best, each| if each.0 > best.0 { each } else { best });
    let limited = busiest >= CLIENT_CPU_LIMIT_PCT || lag_is_the_clients(lag_p99_ns as f64 / 1e6, busiest);
    let connections = own.connections.map(|mine| {
        others.iter().fold(mine, |all, o| Connections {
            opened: all.opened + o.connections.opened,
            reconnects: all.reconnects + o.connections.reconnects,
        })
    });
    ClientLoad {
        cpu_s,
        cpu_s_per_gb: (received > 0).then(|| cpu_s / (received as f64 / 1e9)),
        usable_cpus: usable,
        cpu_busy_pct: busy(cpu_s, usable),
        connections,
        limit: limited.then(|| {
            let words = own_words(lag_p99_ns, busiest, busiest_usable);
            format!("the client was the limit: {words} (the busiest of {} clients)", others.len() + 1)
        }),
    }
}

/// CPU seconds per GB received over several steps together (a phase): their CPU time over their bytes.
pub fn cpu_per_gb<'a>(loads: impl Iterator<Item = (&'a ClientLoad, u64)>) -> Option<f64> {
    let (cpu, bytes) = loads.fold((0.0, 0u64), |(c, b), (load, read)| (c + load.cpu_s, b + read));
    (bytes > 0).then(|| cpu / (bytes as f64 / 1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu_ms: u64, usable: f64) -> ClientSample {
        ClientSample { cpu: Duration::from_millis(cpu_ms), usable_cpus: usable, connections: None }
    }

    #[test]
    fn cpu_per_gb_is_cpu_time_over_bytes_received() {
        let load = client_load(sample(500, 2.0), Duration::from_secs(10), 2_000_000_000, 1_000_000);
        assert_eq!(load.cpu_s_per_gb, Some(0.25));
        assert!((load.cpu_busy_pct - 2.5).abs() < 1e-9, "{load:?}");
        assert_eq!(load.limit, None);
        assert_eq!(client_load(sample(500, 2.0), Duration::from_secs(1), 0, 0).cpu_s_per_gb, None);
        let steps = [(load.clone(), 2_000_000_000), (load, 0)];
        assert_eq!(cpu_per_gb(steps.iter().map(|(l, b)| (l, *b))), Some(0.5));
    }

    #[test]
    fn a_busy_or_late_client_is_named_as_the_limit() {
        // 0.98 s of CPU in 10 s under a quota of 0.1 CPU: 98 % of what it may use.
        let quota = client_load(sample(980, 0.1), Duration::from_secs(10), 1, 2_000_000);
        let words = quota.limit.expect("CPU-bound");
        assert_eq!(words, "the client was the limit: own lag p99 2.00 ms, CPU 98 % of the 0.10 CPUs it may use");
        // Requests 120 ms late at p99 from a client 60 % busy: its own doing.
        let late = client_load(sample(12_000, 2.0), Duration::from_secs(10), 1, 120_000_000);
        assert!(late.limit.expect("late").contains("own lag p99 120 ms, CPU 60 % of the 2 CPUs"));
        // The same lag from an idle client (CI: 4.2 s over an sshfs link at its limit, CPU 0 %): the requests
        // waited for the chunks before them, and the storage or the link is the limit, not the client.
        let waiting = client_load(sample(200, 2.0), Duration::from_secs(10), 1, 4_200_000_000);
        assert_eq!(waiting.limit, None, "{waiting:?}");
        assert!(own_words(0, 50.0, 1.0).ends_with("of the 1 CPU it may use"));
    }

    /// Guards the figures under mpirun, which were rank 0's alone: its connections and its CPU time over every
    /// client's bytes (CPU per GB a fraction of the truth).
    #[test]
    fn every_clients_cpu_and_connections_are_merged() {
        let mut own = client_load(sample(1_000, 2.0), Duration::from_secs(10), 1_000_000_000, 1_000_000);
        own.connections = Some(Connections { opened: 100, reconnects: 1 });
        let other =
            ClientShare { cpu_s: 3.0, usable_cpus: 2.0, connections: Connections { opened: 50, reconnects: 2 } };
        let merged = merge_clients(&own, &[other, other], Duration::from_secs(10), 2_000_000_000, 1_000_000);
        assert_eq!(merged.connections, Some(Connections { opened: 200, reconnects: 5 }));
        assert_eq!(merged.cpu_s, 7.0);
        assert_eq!(merged.cpu_s_per_gb, Some(3.5));
        assert_eq!(merged.usable_cpus, 6.0);
        assert!((merged.cpu_busy_pct - 7.0 / 10.0 / 6.0 * 100.0).abs() < 1e-9, "{merged:?}");
        assert_eq!(merged.limit, None);
        // Local media: no connections anywhere; one client at 95 % of its CPU is the limit, named as the busiest.
        let busy = ClientShare { cpu_s: 9.5, usable_cpus: 1.0, ..ClientShare::default() };
        let local = client_load(sample(1_000, 2.0), Duration::from_secs(10), 1, 1_000_000);
        let merged = merge_clients(&local, &[busy], Duration::from_secs(10), 1, 1_000_000);
        assert_eq!(merged.connections, None);
        let limit = merged.limit.expect("the busiest client is at its limit");
        assert!(limit.contains("CPU 95 % of the 1 CPU it may use (the busiest of 2 clients)"), "{limit}");
    }
}
