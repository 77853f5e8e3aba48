//! The client's lines of the `streams` summary: what this streamcap process spent (CPU per GB received, the
//! connections it set up to an http(s) server) and the limit line — at the step that decides (the first
//! failing count of a search, or the one step of `--count`), whether the client rather than the source was the
//! limit ("the client was the limit: own lag p99 12 ms, CPU 98 % of the 2 CPUs it may use"), or the source.
//! Built once as lines (`client_lines`), drawn by the terminal summary, Markdown and the HTML page alike. Reads
//! only `results` types.

use std::io::{self, Write};

use crate::results::{RunResult, StreamsResult, StreamsStep, own_words};

/// The client line (remote media, or whenever the client was the limit) and the limit line, on the terminal.
pub(super) fn write_client(out: &mut dyn Write, result: &RunResult, streams: &StreamsResult) -> io::Result<()> {
    client_lines(result, streams).iter().try_for_each(|line| writeln!(out, "{line}"))
}

/// The client's lines, built once for every format (the terminal, Markdown and HTML draw them): the client line
/// and its reconnects note (remote media), and the limit line. A continuation line starts with two spaces.
pub(super) fn client_lines(result: &RunResult, streams: &StreamsResult) -> Vec<String> {
    let remote = result.target.kind == "http";
    let mut lines = if remote { spent(result, streams) } else { Vec::new() };
    // Results older than the client's figures have no CPUs to judge by: no limit line.
    let Some(step) = deciding_step(streams).filter(|s| s.client.usable_cpus > 0.0) else { return lines };
    let client = &step.client;
    let own = own_words(step.issue_lag.at(99.0).unwrap_or(0), client.cpu_busy_pct, client.usable_cpus);
    let source = if remote { "the server or the link" } else { "the storage" };
    let count = step.count;
    let limit = match (&client.limit, step.meets_target) {
        (Some(limit), false) => format!(
            "limit: at {count} streams {limit}, so {source} may sustain more: run fewer viewers per client (spread \
             them over hosts with mpirun) or a faster client"
        ),
        (Some(_), true) => format!(
            "limit: the client was at its limit at {count} streams ({own}): a larger count would measure this \
             client, not {source}"
        ),
        (None, false) if remote && result.target.served_from.is_none() => format!(
            "limit: at {count} streams not this client ({own}): {source}; the server's cache cannot be seen from \
             here, so whether its disks or its RAM served is unknown"
        ),
        (None, false) => format!("limit: at {count} streams {source}, not this client ({own})"),
        (None, true) => return lines,
    };
    lines.push(limit);
    lines
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

/// "client: 2,000 connections set up, 0 reconnects; CPU 1.9 s per GB received (https: TLS included)", and why
/// there were reconnects.
fn spent(result: &RunResult, streams: &StreamsResult) -> Vec<String> {
    let connections = streams.steps.iter().filter_map(|s| s.client.connections);
    let (opened, reconnects) = connections.fold((0, 0), |(o, r), c| (o + c.opened, r + c.reconnects));
    let tls = if result.target.path.to_ascii_lowercase().contains("https://") { " (https: TLS included)" } else { "" };
    let cpu = streams
        .client_cpu_s_per_gb
        .map_or(String::new(), |c| format!("; CPU {c:.2} s per GB received, user + system{tls}"));
    let steps = streams.steps.len();
    let mut lines = vec![format!(
        "client: {opened} connections set up over {steps} step{}, {reconnects} reconnects{cpu}",
        if steps == 1 { "" } else { "s" }
    )];
    if reconnects > 0 {
        lines.push(
            "  reconnects: the server closed connections it had kept alive (its keep-alive timeout or request \
             limit, or, for nginx, fewer than a sixteenth of its worker_connections free)"
                .into(),
        );
    }
    lines
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

    /// Guards the client line missing from Markdown and HTML (the terminal alone said "the client was the
    /// limit"): every format draws the same lines, built once.
    #[test]
    fn markdown_and_html_carry_the_terminals_client_lines() {
        use crate::{Html, Markdown, Renderer};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams-v1.json");
        let mut result = read_result(&path).unwrap();
        let failed = result.streams.as_ref().unwrap().capacity.as_ref().unwrap().first_failing.unwrap();
        let streams = result.streams.as_mut().unwrap();
        for step in &mut streams.steps {
            step.client = ClientLoad { usable_cpus: 2.0, cpu_busy_pct: 97.0, ..ClientLoad::default() };
            step.client.limit = Some("the client was the limit: own lag p99 80.0 ms, CPU 97 % of the 2 CPUs".into());
        }
        let terminal = lines(&result);
        let limit = terminal.lines().next().expect("a limit line");
        assert!(limit.starts_with(&format!("limit: at {failed} streams the client was the limit")), "{terminal}");
        let render = |renderer: &dyn Renderer| {
            let mut out = Vec::new();
            renderer.render(&result, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let markdown = render(&Markdown);
        assert!(markdown.contains(&format!("- {limit}")), "{markdown}");
        let html = render(&Html);
        assert!(html.contains(&format!("<p class=\"client\">{limit}</p>")), "{limit}");
    }
}
