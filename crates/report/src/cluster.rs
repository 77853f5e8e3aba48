//! The per-host breakdown of a multi-host run: who took part (rank, host, CPUs), each rank's share of every phase
//! (operations, rates, latency, CPU, the devices beneath its target), the stonewall figures ("first done": every
//! rank's work when the first finished its share; "last done": the whole phase), and for stream phases each
//! step client by client with the clients' verdict. The rows are made once here and drawn by the terminal
//! summary, the Markdown and the HTML report. The merged figures are in each report's main table; this only
//! breaks them down.

use std::io::{self, Write};

use super::rows::{Column, Rows, num, text};
use super::terminal::STYLE;
use crate::results::{ClusterPhase, ClusterResult, ClusterStep, DoneFigures};
use crate::units::{Bytes, format_latency_ns, format_mbps, format_rate};

/// The per-rank table's columns.
const RANK_COLUMNS: [Column; 11] = [
    text("phase"),
    text("rank"),
    text("host"),
    num("ops"),
    num("IOPS"),
    num("MB/s"),
    num("mean"),
    num("p99"),
    num("time"),
    num("CPU"),
    text("devices"),
];
/// The clients' step table's columns.
const CLIENT_COLUMNS: [Column; 9] = [
    text("streams"),
    text("rank"),
    text("host"),
    num("viewers"),
    num("stalled"),
    num("errors"),
    num("issue lag p99"),
    num("late p99"),
    num("CPU"),
];

pub(super) fn write_cluster_summary(out: &mut dyn Write, cluster: &ClusterResult) -> io::Result<()> {
    writeln!(out, "{}", hosts_line(cluster))?;
    if cluster.phases.is_empty() {
        return Ok(());
    }
    writeln!(out, "per rank:")?;
    writeln!(out, "{}", rank_rows(&cluster.phases).terminal(STYLE))?;
    for line in ops_legend(cluster).into_iter().chain(done_lines(cluster)) {
        writeln!(out, "{line}")?;
    }
    for v in &cluster.verify {
        let unfinished = if v.pass_complete { "" } else { ", read-back not finished" };
        let failed = if v.read_errors > 0 { format!(", {} failed reads", v.read_errors) } else { String::new() };
        writeln!(
            out,
            "verify on rank {} ({}): {} blocks ({}) checked, {} bad{failed}{unfinished}",
            v.rank,
            v.host,
            v.blocks_checked,
            Bytes(v.bytes_checked),
            v.bad_count
        )?;
    }
    Ok(())
}

/// Stream phases across clients: each step's viewers, stalls, issue lag, lateness and CPU per client, then the
/// verdict of each search (how many clients, and whether a client rather than the storage was the limit).
pub(super) fn write_client_steps(out: &mut dyn Write, cluster: &ClusterResult) -> io::Result<()> {
    if cluster.steps.is_empty() {
        return Ok(());
    }
    writeln!(out, "per client, each step:")?;
    writeln!(out, "{}", client_rows(&cluster.steps).terminal(STYLE))?;
    for (_, verdict) in &cluster.verdicts {
        writeln!(out, "clients: {verdict}")?;
    }
    Ok(())
}

/// The breakdown as Markdown: the ranks, the per-rank table, the stonewall lines, the clients' steps and verdicts.
pub fn cluster_markdown(out: &mut dyn Write, cluster: &ClusterResult) -> io::Result<()> {
    use super::markdown::cell;
    writeln!(out, "#### {}", cell(&hosts_line(cluster)))?;
    writeln!(out)?;
    if !cluster.phases.is_empty() {
        rank_rows(&cluster.phases).markdown(out)?;
    }
    let mut lines: Vec<String> = ops_legend(cluster).into_iter().chain(done_lines(cluster)).collect();
    lines.extend(cluster.verdicts.iter().map(|(_, verdict)| format!("clients: {verdict}")));
    if !cluster.steps.is_empty() {
        client_rows(&cluster.steps).markdown(out)?;
    }
    for line in &lines {
        writeln!(out, "- {}", cell(line))?;
    }
    if !lines.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The breakdown as HTML.
pub fn cluster_html(cluster: &ClusterResult) -> String {
    use super::html::esc;
    let mut body = format!("<p>{}</p>\n", esc(&hosts_line(cluster)));
    if !cluster.phases.is_empty() {
        body.push_str(&rank_rows(&cluster.phases).html());
    }
    for line in ops_legend(cluster).into_iter().chain(done_lines(cluster)) {
        body.push_str(&format!("<p>{}</p>\n", esc(&line)));
    }
    if !cluster.steps.is_empty() {
        body.push_str(&client_rows(&cluster.steps).html());
    }
    for (_, verdict) in &cluster.verdicts {
        body.push_str(&format!("<p class=\"words\"><b>clients: {}</b></p>\n", esc(verdict)));
    }
    body
}

/// "4 ranks: rank 0 on a (8 CPUs), …".
fn hosts_line(cluster: &ClusterResult) -> String {
    let hosts: Vec<String> = cluster
        .hosts
        .iter()
        .map(|h| {
            let role = h.role.as_ref().map(|r| format!(" as {r}")).unwrap_or_default();
            format!("rank {} on {}{role} ({} CPUs)", h.rank, h.host.hostname, h.host.cpu_count)
        })
        .collect();
    format!("{} ranks: {}", cluster.ranks, hosts.join(", "))
}

/// What the ops column counts, when a file-set phase makes it more than reads and writes: the merged phase's
/// read and write lines hold the transfers only, so a reader adding up the ranks needs the split.
fn ops_legend(cluster: &ClusterResult) -> Option<String> {
    let any = cluster.phases.iter().flat_map(|p| &p.ranks).any(|r| r.file_ops > 0);
    any.then(|| {
        "ops: reads and writes, plus the file-set operations (open, close, create, getattr, …) that the number in \
         brackets counts; first done and last done count the same"
            .to_string()
    })
}

/// The first-done and last-done figures of each phase that has them.
fn done_lines(cluster: &ClusterResult) -> Vec<String> {
    cluster
        .phases
        .iter()
        .filter_map(|phase| match (&phase.first_done, &phase.last_done) {
            (Some(first), Some(last)) => {
                Some(format!("{}: {}; {}", phase.name, done_words("first done", first), done_words("last done", last)))
            }
            _ => None,
        })
        .collect()
}

fn rank_rows(phases: &[ClusterPhase]) -> Rows {
    let mut rows = Rows::new(&RANK_COLUMNS);
    for phase in phases {
        for (i, rank) in phase.ranks.iter().enumerate() {
            let devices: Vec<String> =
                rank.devices.iter().map(|d| format!("{} {:.0}%", d.activity.name, d.activity.busy_pct)).collect();
            rows.push(vec![
                if i == 0 { phase.name.clone() } else { String::new() },
                rank.rank.to_string(),
                if rank.errors > 0 { format!("{} ({} err)", rank.host, rank.errors) } else { rank.host.clone() },
                match rank.file_ops {
                    0 => rank.ops.to_string(),
                    file_ops => format!("{} ({file_ops})", rank.ops),
                },
                format_rate(rank.iops),
                format_mbps(rank.mbps),
                format_latency_ns(rank.mean_latency_ns),
                format_latency_ns(rank.p99_latency_ns as f64),
                format!("{:.2} s", rank.duration_s),
                format!("{:.0}%", rank.cpu_pct),
                devices.join(", "),
            ]);
        }
    }
    rows
}

fn client_rows(steps: &[ClusterStep]) -> Rows {
    let mut rows = Rows::new(&CLIENT_COLUMNS);
    for step in steps {
        for (i, client) in step.clients.iter().enumerate() {
            let count = format!("{}{}", step.count, if step.meets_target { " ✓" } else { " ✗" });
            rows.push(vec![
                if i == 0 { count } else { String::new() },
                client.rank.to_string(),
                client.host.clone(),
                client.viewers.to_string(),
                client.stalled.to_string(),
                client.errors.to_string(),
                format!("{:.1} ms", client.issue_lag_p99_ms),
                format!("{:.1} ms", client.lateness_p99_ms),
                format!("{:.0}%", client.cpu_busy_pct),
            ]);
        }
    }
    rows
}

fn done_words(label: &str, d: &DoneFigures) -> String {
    format!(
        "{label} (rank {} on {}, {:.2} s) {} ops, {} IOPS, {} MB/s",
        d.rank,
        d.host,
        d.elapsed_s,
        d.ops,
        format_rate(d.iops),
        format_mbps(d.mbps)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Html, Markdown, Renderer};
    use crate::results::{ClientFigures, RankHost, RankPhase, RunResult};

    /// The v1 fixture as if two ranks had run it: both ranks' rows of its first phase, one stream step of both
    /// clients and a verdict.
    fn two_ranks() -> RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json");
        let mut result = crate::results::read_result(std::path::Path::new(path)).expect("the fixture");
        let hosts =
            (0..2).map(|rank| RankHost { rank, host: result.host.clone(), target: result.target.clone(), role: None });
        let ranks = (0..2).map(|rank| RankPhase::of(rank, &result.host, &result.phases[0])).collect();
        let client = |rank| ClientFigures {
            rank,
            host: format!("client{rank}"),
            viewers: 10,
            stalled: rank,
            errors: 0,
            issue_lag_p99_ms: 1.5,
            lateness_p99_ms: 4.0,
            cpu_busy_pct: 12.0,
        };
        result.cluster = Some(ClusterResult {
            ranks: 2,
            hosts: hosts.collect(),
            phases: vec![ClusterPhase {
                index: 0,
                name: result.phases[0].name.clone(),
                first_done: None,
                last_done: None,
                ranks,
            }],
            steps: vec![ClusterStep { phase: 0, count: 20, meets_target: false, clients: vec![client(0), client(1)] }],
            verdicts: vec![(0, "2 clients; at 20 streams the storage was the limit".into())],
            verify: Vec::new(),
        });
        result
    }

    fn render(renderer: &dyn Renderer, result: &RunResult) -> String {
        let mut out = Vec::new();
        renderer.render(result, &mut out).expect("renders into a Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn markdown_and_html_show_every_rank_and_client() {
        let result = two_ranks();
        let host = &result.host.hostname;
        let markdown = render(&Markdown, &result);
        assert!(markdown.contains(&format!("#### 2 ranks: rank 0 on {host}")), "{markdown}");
        assert!(markdown.contains("| phase | rank | host | ops |"), "{markdown}");
        assert_eq!(markdown.matches(&format!(" | {host} | ")).count(), 2, "a row per rank:\n{markdown}");
        assert!(
            markdown.contains("| 20 ✗ | 0 | client0 | 10 | 0 |") && markdown.contains("|  | 1 | client1 | 10 | 1 |")
        );
        assert!(markdown.contains("- clients: 2 clients; at 20 streams the storage was the limit"), "{markdown}");

        let html = render(&Html, &result);
        let section = html.split("<section id=\"ranks\">").nth(1).expect("a ranks section");
        let section = section.split("</section>").next().expect("closed");
        assert!(section.contains("2 ranks: rank 0 on"), "{section}");
        assert_eq!(section.matches("<td>client").count(), 2, "{section}");
        assert!(section.contains("clients: 2 clients; at 20 streams the storage was the limit"), "{section}");
        // Without a cluster, neither shows the section.
        let mut alone = result.clone();
        alone.cluster = None;
        assert!(!render(&Markdown, &alone).contains("ranks:") && !render(&Html, &alone).contains("id=\"ranks\""));
    }

    /// A reader adds the rows up to the done lines: a row's file-set operations are in brackets (said by a
    /// legend, raw rows have neither), and the done lines give the operations they count.
    #[test]
    fn file_set_operations_and_done_counts_are_shown() {
        let mut cluster = two_ranks().cluster.expect("ranks");
        let mut out = Vec::new();
        write_cluster_summary(&mut out, &cluster).expect("writes");
        assert!(!String::from_utf8_lossy(&out).contains("ops: reads and writes"), "raw rows need no legend");
        let row = &mut cluster.phases[0].ranks[1];
        (row.ops, row.file_ops) = (1500, 300);
        let done =
            DoneFigures { rank: 1, host: "b".into(), elapsed_s: 2.0, ops: 1800, bytes: 0, iops: 900.0, mbps: 0.0 };
        (cluster.phases[0].first_done, cluster.phases[0].last_done) = (Some(done.clone()), Some(done));
        let mut out = Vec::new();
        write_cluster_summary(&mut out, &cluster).expect("writes");
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains(" 1500 (300) ") && text.contains("ops: reads and writes, plus the file-set"), "{text}");
        assert!(text.contains("last done (rank 1 on b, 2.00 s) 1800 ops, 900 IOPS"), "{text}");
    }
}
