//! The client's lines of the `streams` summary: what this streamcap process spent (CPU per GB received, the
//! connections it set up to an http(s) server) and the limit line — at the step that decides (the first
//! failing count of a search, or the one step of `--count`), whether the client rather than the source was the
//! limit ("the client was the limit: own lag p99 12 ms, CPU 98 % of the 2 CPUs it may use"), or the source.
//! Reads only `results` types.

use std::io::{self, Write};

use crate::results::{RunResult, StreamsResult, StreamsStep, own_words};

/// The client line (remote media, or whenever the client was the limit) and the limit line.
pub(super) fn write_client(out: &mut dyn Write, result: &RunResult, streams: &StreamsResult) -> io::Result<()> {
    let remote = result.target.kind == "http";
    if remote {
        write_spent(out, result, streams)?;
    }
    // Results older than the client's figures have no CPUs to judge by: no limit line.
    let Some(step) = deciding_step(streams).filter(|s| s.client.usable_cpus > 0.0) else { return Ok(()) };
    let client = &step.client;
    let own = own_words(step.issue_lag.at(99.0).unwrap_or(0), client.cpu_busy_pct, client.usable_cpus);
    let source = if remote { "the server or the link" } else { "the storage" };
    match (&client.limit, step.meets_target) {
        (Some(limit), false) => writeln!(
            out,
            "limit: at {} streams {limit}, so {source} may sustain more: run fewer viewers per client (spread \
             them over hosts with mpirun) or a faster client",
            step.count
        ),
        (Some(_), true) => writeln!(
            out,
            "limit: the client was at its limit at {} streams ({own}): a larger count would measure this client, \
             not {source}",
            step.count
        ),
        (None, false) if remote && result.target.served_from.is_none() => writeln!(
            out,
            "limit: at {} streams not this client ({own}): {source}; the server's cache cannot be seen from here, \
             so whether its disks or its RAM served is unknown",
            step.count
        ),
        (None, false) => writeln!(out, "limit: at {} streams {source}, not this client ({own})", step.count),
        (None, true) => Ok(()),
    }
}

/// The step whose outcome names the limit: the failing count beside the capacity, or the only step.
fn deciding_step(streams: &StreamsResult) -> Option<&StreamsStep> {
    match &streams.capacity {
        Some(answer) => {
            let failed = answer.first_failing?;
            streams.steps.iter().rev().find(|s| s.count == failed && !s.meets_target)
        }
        None => streams.steps.last(),
    }
}

/// "client: 2,000 connections set up, 0 reconnects; CPU 1.9 s per GB received (https: TLS included)".
fn write_spent(out: &mut dyn Write, result: &RunResult, streams: &StreamsResult) -> io::Result<()> {
    let connections = streams.steps.iter().filter_map(|s| s.client.connections);
    let (opened, reconnects) = connections.fold((0, 0), |(o, r), c| (o + c.opened, r + c.reconnects));
    let tls = if result.target.path.to_ascii_lowercase().contains("https://") { " (https: TLS included)" } else { "" };
    let cpu = streams
        .client_cpu_s_per_gb
        .map_or(String::new(), |c| format!("; CPU {c:.2} s per GB received, user + system{tls}"));
    writeln!(
        out,
        "client: {opened} connections set up over {} step{}, {reconnects} reconnects{cpu}",
        streams.steps.len(),
        if streams.steps.len() == 1 { "" } else { "s" }
    )?;
    if reconnects > 0 {
        writeln!(
            out,
            "  reconnects: the server closed connections it had kept alive (its keep-alive timeout or request \
             limit, or, for nginx, fewer than a sixteenth of its worker_connections free)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ClientLoad, read_result};

    fn lines(result: &RunResult) -> String {
        let mut out = Vec::new();
        write_client(&mut out, result, result.streams.as_ref().unwrap()).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The failing count of a search names the client when it was the limit, the storage when it was not, and
    /// an old result (no client figures) gets no limit line.
    #[test]
    fn the_limit_line_names_the_client_or_the_source_at_the_failing_count() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams-v1.json");
        let mut result = read_result(&path).unwrap();
        assert_eq!(lines(&result), "", "results older than the client figures say nothing");
        let failed = result.streams.as_ref().unwrap().capacity.as_ref().unwrap().first_failing.unwrap();
        let streams = result.streams.as_mut().unwrap();
        for step in &mut streams.steps {
            step.client = ClientLoad { usable_cpus: 2.0, cpu_busy_pct: 12.0, ..ClientLoad::default() };
        }
        let text = lines(&result);
        assert!(text.starts_with(&format!("limit: at {failed} streams the storage, not this client (own lag p99")));
        assert!(text.contains("CPU 12 % of the 2 CPUs it may use"), "{text}");
        let streams = result.streams.as_mut().unwrap();
        let step = streams.steps.iter_mut().rev().find(|s| s.count == failed && !s.meets_target).unwrap();
        step.client.limit = Some("the client was the limit: own lag p99 80.0 ms, CPU 97 % of the 2 CPUs".into());
        let text = lines(&result);
        assert!(text.starts_with(&format!("limit: at {failed} streams the client was the limit: own lag")), "{text}");
        assert!(text.contains("so the storage may sustain more"), "{text}");
    }
}
