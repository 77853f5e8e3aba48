//! The per-host breakdown of a multi-host run in the terminal summary: who took part (rank, host, CPUs), each
//! rank's share of every phase (operations, rates, latency, CPU, the devices beneath its target) and the
//! stonewall figures ("first done": every rank's work when the first finished its share; "last done": the whole
//! phase). The merged figures are in the summary's main table; this only breaks them down.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Table};

use super::terminal::STYLE;
use crate::results::{ClusterPhase, ClusterResult, ClusterStep, DoneFigures};
use crate::units::{format_latency_ns, format_mbps, format_rate};

pub fn write_cluster_summary(out: &mut dyn Write, cluster: &ClusterResult) -> io::Result<()> {
    let hosts: Vec<String> = cluster
        .hosts
        .iter()
        .map(|h| format!("rank {} on {} ({} CPUs)", h.rank, h.host.hostname, h.host.cpu_count))
        .collect();
    writeln!(out, "{} ranks: {}", cluster.ranks, hosts.join(", "))?;
    if cluster.phases.is_empty() {
        return Ok(());
    }
    writeln!(out, "per rank:")?;
    writeln!(out, "{}", rank_table(&cluster.phases))?;
    for phase in &cluster.phases {
        if let (Some(first), Some(last)) = (&phase.first_done, &phase.last_done) {
            writeln!(out, "{}: {}; {}", phase.name, done_words("first done", first), done_words("last done", last))?;
        }
    }
    Ok(())
}

/// Stream phases across clients: each step's viewers, stalls, issue lag, lateness and CPU per client, then the
/// verdict of each search (how many clients, and whether a client rather than the storage was the limit).
pub fn write_client_steps(out: &mut dyn Write, cluster: &ClusterResult) -> io::Result<()> {
    if cluster.steps.is_empty() {
        return Ok(());
    }
    writeln!(out, "per client, each step:")?;
    writeln!(out, "{}", client_table(&cluster.steps))?;
    for (_, verdict) in &cluster.verdicts {
        writeln!(out, "clients: {verdict}")?;
    }
    Ok(())
}

fn client_table(steps: &[ClusterStep]) -> Table {
    let mut table = Table::new();
    table.load_style(STYLE);
    table.set_header(["streams", "rank", "host", "viewers", "stalled", "errors", "issue lag p99", "late p99", "CPU"]);
    for step in steps {
        for (i, client) in step.clients.iter().enumerate() {
            let count = format!("{}{}", step.count, if step.meets_target { " ✓" } else { " ✗" });
            table.add_row(vec![
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
    for column in 3..=8 {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn rank_table(phases: &[ClusterPhase]) -> Table {
    let mut table = Table::new();
    table.load_style(STYLE);
    table.set_header(["phase", "rank", "host", "ops", "IOPS", "MB/s", "mean", "p99", "time", "CPU", "devices"]);
    for phase in phases {
        for (i, rank) in phase.ranks.iter().enumerate() {
            let devices: Vec<String> =
                rank.devices.iter().map(|d| format!("{} {:.0}%", d.activity.name, d.activity.busy_pct)).collect();
            table.add_row(vec![
                if i == 0 { phase.name.clone() } else { String::new() },
                rank.rank.to_string(),
                if rank.errors > 0 { format!("{} ({} err)", rank.host, rank.errors) } else { rank.host.clone() },
                rank.ops.to_string(),
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
    for column in 3..=9 {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn done_words(label: &str, d: &DoneFigures) -> String {
    format!(
        "{label} (rank {} on {}, {:.2} s) {} IOPS, {} MB/s",
        d.rank,
        d.host,
        d.elapsed_s,
        format_rate(d.iops),
        format_mbps(d.mbps)
    )
}
