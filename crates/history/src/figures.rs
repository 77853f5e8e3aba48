//! The figures of a result that the history keeps beside its JSON, so that runs can be listed with a headline
//! and a figure followed over time without parsing every result again. Names are short slugs
//! (`random-4k-reads/read/iops`, `check/1080p/streams`, `streams/capacity`); each value has its unit.

use crate::results::{CacheSummary, OpResult, PhaseResult, PlateauKind, RunResult, SweepSummary};

/// One named figure of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    pub value: f64,
    /// "IOPS", "MB/s", "ms", "streams", "per s", "MiB".
    pub unit: &'static str,
}

/// Lower case, words joined by '-', nothing but letters, digits, '-' and '.'.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.trim().chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn op_figures(out: &mut Vec<Figure>, phase: &PhaseResult, name: &str, op: &OpResult) {
    let base = format!("{}/{name}", slug(&phase.name));
    let ms = |p: f64| op.latency.at(p).unwrap_or(0) as f64 / 1e6;
    out.push(Figure { name: format!("{base}/iops"), value: op.iops, unit: "IOPS" });
    out.push(Figure { name: format!("{base}/mbps"), value: op.mbps, unit: "MB/s" });
    out.push(Figure { name: format!("{base}/p50"), value: ms(50.0), unit: "ms" });
    out.push(Figure { name: format!("{base}/p99"), value: ms(99.0), unit: "ms" });
}

/// Every figure of a result.
pub fn figures(result: &RunResult) -> Vec<Figure> {
    let mut out = Vec::new();
    if let Some(answer) = result.streams.as_ref().and_then(|s| s.capacity.as_ref()) {
        out.push(Figure { name: "streams/capacity".into(), value: f64::from(answer.streams), unit: "streams" });
    }
    if let Some(check) = &result.check {
        for v in &check.verdict {
            out.push(Figure {
                name: format!("check/{}/streams", slug(&v.name)),
                value: f64::from(v.streams),
                unit: "streams",
            });
        }
    }
    if let Some(cache) = &result.cache {
        cache_figures(&mut out, cache);
    }
    if let Some(cliff) = result.sweep.as_ref().and_then(|s| s.cliff.as_ref()) {
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        out.push(Figure { name: "sweep/cliff/cached-up-to".into(), value: mib(cliff.cached_up_to_bytes), unit: "MiB" });
        out.push(Figure { name: "sweep/cliff/device-from".into(), value: mib(cliff.device_from_bytes), unit: "MiB" });
        out.push(Figure { name: "sweep/cliff/cached".into(), value: cliff.cached_mbps, unit: "MB/s" });
        out.push(Figure { name: "sweep/cliff/device".into(), value: cliff.device_mbps, unit: "MB/s" });
    }
    for phase in &result.phases {
        for (name, op) in [("read", &phase.read), ("write", &phase.write)] {
            if let Some(op) = op.as_ref().filter(|o| o.ops > 0) {
                op_figures(&mut out, phase, name, op);
            }
        }
        for op in phase.file_ops.iter().flat_map(|f| &f.ops).filter(|o| o.op != "read" && o.op != "write") {
            out.push(Figure { name: format!("{}/{}/rate", slug(&phase.name), op.op), value: op.rate, unit: "per s" });
        }
    }
    // Two phases of one name would give one figure twice; the first stands.
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(f.name.clone()));
    out
}

/// Each plateau's MB/s (and the access time's mean in ms), alone and under load: `cache/sustained-media/mbps`,
/// `cache/access-time-load/ms`.
fn cache_figures(out: &mut Vec<Figure>, cache: &CacheSummary) {
    for p in &cache.plateaus {
        let name = format!("cache/{}{}", slug(p.kind.label()), if p.under_load { "-load" } else { "" });
        match p.kind {
            PlateauKind::AccessTime => {
                out.push(Figure { name: format!("{name}/ms"), value: p.latency_mean_ns / 1e6, unit: "ms" });
            }
            _ => out.push(Figure { name: format!("{name}/mbps"), value: p.mbps, unit: "MB/s" }),
        }
    }
}

/// What the run did, in one word.
pub fn command(result: &RunResult) -> &'static str {
    if result.check.is_some() {
        "check"
    } else if result.cache.is_some() {
        "cache"
    } else if result.sweep.is_some() {
        "sweep"
    } else if result.streams.is_some() {
        "streams"
    } else if result.phases.is_empty() {
        "inspect"
    } else {
        "run"
    }
}

/// The run in a few words for a list: the capacity answers, or each phase's main figure (MB/s for sequential
/// phases, IOPS for random ones).
pub fn headline(result: &RunResult) -> String {
    if let Some(check) = &result.check {
        let parts: Vec<String> = check
            .verdict
            .iter()
            .map(|v| format!("{} {}{}", v.name, if v.capacity.at_limit { "≥" } else { "" }, v.streams))
            .collect();
        return format!("streams: {}", parts.join(" · "));
    }
    if let Some(cache) = &result.cache {
        return cache_headline(cache);
    }
    if let Some(sweep) = &result.sweep {
        return sweep_headline(sweep);
    }
    if let Some(s) = &result.streams {
        return match (&s.capacity, s.steps.last()) {
            (Some(a), _) => format!("{}{} × {}", if a.at_limit { "≥ " } else { "" }, a.streams, s.label),
            (None, Some(step)) => format!("{} × {}: {} stalled", step.count, s.label, step.streams_stalled),
            (None, None) => "no step measured".into(),
        };
    }
    let parts: Vec<String> = result
        .phases
        .iter()
        .filter_map(|p| {
            let op = RunResult::main_ops(p).filter(|o| o.ops > 0)?;
            Some(if p.rw.contains("rand") {
                format!("{} {:.0} IOPS", p.name, op.iops)
            } else {
                format!("{} {:.0} MB/s", p.name, op.mbps)
            })
        })
        .collect();
    if parts.is_empty() { "no operations".into() } else { parts.join(" · ") }
}

/// The plateaus measured alone: "page cache 4045 MB/s · … · sustained media 611 MB/s · access time 0.09 ms".
fn cache_headline(cache: &CacheSummary) -> String {
    let parts: Vec<String> = cache
        .plateaus
        .iter()
        .filter(|p| !p.under_load)
        .map(|p| match p.kind {
            PlateauKind::AccessTime => format!("{} {:.2} ms", p.kind.label(), p.latency_mean_ns / 1e6),
            _ => format!("{} {:.0} MB/s", p.kind.label(), p.mbps),
        })
        .collect();
    if parts.is_empty() { "no plateau measured".into() } else { parts.join(" · ") }
}

/// The cliff in a few words, or the sizes swept without one.
fn sweep_headline(sweep: &SweepSummary) -> String {
    let size = |b: u64| crate::units::Bytes(b).to_string();
    match &sweep.cliff {
        Some(c) => format!(
            "cliff: re-reads {:.0} MB/s up to {}, {:.0} MB/s from {}",
            c.cached_mbps,
            size(c.cached_up_to_bytes),
            c.fallen_mbps,
            size(c.device_from_bytes)
        ),
        None => {
            let (first, last) = (sweep.sizes_bytes.first(), sweep.sizes_bytes.last());
            match (first, last) {
                (Some(&a), Some(&b)) => format!("no cliff between {} and {}", size(a), size(b)),
                _ => "no size measured".into(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> RunResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name);
        crate::results::read_result(&path).unwrap()
    }

    #[test]
    fn slugs_are_short_and_safe() {
        assert_eq!(slug("random 4k reads"), "random-4k-reads");
        assert_eq!(slug(" Seq-read 1M (QD8) "), "seq-read-1m-qd8");
    }

    #[test]
    fn figures_and_headlines_of_each_kind() {
        let run = fixture("result-v1.json");
        let names: Vec<String> = figures(&run).into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"random-4k-reads/read/iops".to_string()), "{names:?}");
        assert_eq!(headline(&run), "write the data set 1878 MB/s · random 4k reads 153454 IOPS");
        let streams = fixture("streams-v1.json");
        assert_eq!(figures(&streams)[0], Figure { name: "streams/capacity".into(), value: 11.0, unit: "streams" });
        assert_eq!(headline(&streams), "11 × 1080p H.264 (8 Mbit/s)");
        let check = fixture("check-v1.json");
        assert_eq!(headline(&check), "streams: 1080p ≥387 · 2160p-hevc 107 · 2160p-remux 33");
        assert_eq!(command(&check), "check");
        let cache = fixture("cache-v1.json");
        assert_eq!(command(&cache), "cache");
        let line = headline(&cache);
        assert!(
            line.starts_with("page cache ") && line.contains(" · sustained media ") && line.ends_with(" ms"),
            "{line}"
        );
        let names: Vec<String> = figures(&cache).into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"cache/sustained-media/mbps".into()), "{names:?}");
        assert!(
            names.contains(&"cache/access-time/ms".into()) && names.contains(&"cache/sustained-media-load/mbps".into())
        );
    }
}
