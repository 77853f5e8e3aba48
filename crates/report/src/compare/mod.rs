//! Several results side by side: phases matched by name and kind, each headline figure of the first run (the
//! baseline) beside the same figure of every other run, with the ratio and a verdict that accounts for noise.
//! Results of different workloads are refused (`Unlike`) unless the caller allows them, in which case the
//! reasons become warnings. Renderers (terminal, Markdown, HTML) read a `Comparison`; none of them judges.
//!
//! The noise rule: a figure measured over a phase's intervals varies from interval to interval. Its noise in a
//! run is the sample standard deviation of that figure over the phase's intervals. A difference between two
//! runs that is no larger than the larger of their two standard deviations is "no clear difference"; a run with
//! fewer than two intervals in the phase gives no noise estimate, and the verdict says so instead of guessing.
//! A stream capacity found by a search is known only to the search's step: the gap between the answer and the
//! first failing count (at least 1). A difference within the larger gap is "no clear difference". The steps of
//! streams results are compared count by count, with the stream-to-stream variation as their noise (`steps`).

mod markdown;
mod rows;
mod steps;
mod terminal;

use thiserror::Error;

use crate::results::{PhaseResult, RunResult};
pub use rows::{Measured, Row, Verdict};
pub use terminal::{NOTHING_IN_COMMON, RULE};

/// One run in a comparison.
pub struct Run {
    /// How the run is named in tables: "A", "B", …
    pub key: String,
    /// Where it came from ("raid1.json", "history #12").
    pub source: String,
    pub result: RunResult,
}

/// Runs side by side, with the rows the renderers show.
pub struct Comparison {
    /// The first is the baseline.
    pub runs: Vec<Run>,
    pub rows: Vec<Row>,
    /// Why the runs are not alike, when compared anyway; and phases only some runs have.
    pub warnings: Vec<String>,
}

/// The runs measured different things.
#[derive(Debug, Error)]
#[error("these results measured different workloads, so their figures cannot be compared:\n  {}\nrun the same workload on both, or pass --allow-different to compare them anyway", reasons.join("\n  "))]
pub struct Unlike {
    pub reasons: Vec<String>,
}

/// What a run did, in one word.
pub fn kind(result: &RunResult) -> &'static str {
    if result.check.is_some() {
        "check"
    } else if result.streams.is_some() {
        "streams"
    } else {
        "run"
    }
}

/// What makes two phases of the same name the same workload.
fn phase_kind(p: &PhaseResult) -> String {
    let files = if p.file_ops.is_some() { " file set" } else { "" };
    format!("{} {} QD {} × {}{files}", p.rw, p.bs, p.iodepth, p.jobs)
}

/// Why `other` is not the same workload as `base`; empty when it is.
pub fn differences(base: &RunResult, other: &RunResult) -> Vec<String> {
    let mut why = Vec::new();
    if kind(base) != kind(other) {
        why.push(format!("one is a {} result and the other a {} result", kind(base), kind(other)));
        return why;
    }
    for p in &base.phases {
        match other.phases.iter().find(|q| q.name == p.name) {
            Some(q) if phase_kind(p) != phase_kind(q) => {
                why.push(format!("phase '{}' is {} in one and {} in the other", p.name, phase_kind(p), phase_kind(q)))
            }
            Some(_) => {}
            None => why.push(format!("phase '{}' is only in the first", p.name)),
        }
    }
    for q in other.phases.iter().filter(|q| !base.phases.iter().any(|p| p.name == q.name)) {
        why.push(format!("phase '{}' is only in the second", q.name));
    }
    if let (Some(a), Some(b)) = (&base.streams, &other.streams)
        && a.label != b.label
    {
        why.push(format!("the streams are {} in one and {} in the other", a.label, b.label));
    }
    why.extend(steps::count_difference(base, other));
    if let (Some(a), Some(b)) = (&base.check, &other.check)
        && a.profile != b.profile
    {
        why.push(format!("the check profiles differ ({} and {})", a.profile, b.profile));
    }
    why
}

impl Comparison {
    /// Compares `runs` (the first is the baseline); `allow_different` turns a refusal into warnings.
    pub fn build(runs: Vec<Run>, allow_different: bool) -> Result<Comparison, Unlike> {
        let mut reasons = Vec::new();
        for other in &runs[1..] {
            for why in differences(&runs[0].result, &other.result) {
                reasons.push(format!("{} and {}: {why}", runs[0].key, other.key));
            }
        }
        if !reasons.is_empty() && !allow_different {
            return Err(Unlike { reasons });
        }
        let rows = rows::rows(&runs);
        Ok(Comparison { runs, rows, warnings: reasons })
    }

    /// Phases of the baseline that every other run has too, by name and kind.
    pub fn matched_phases(&self) -> Vec<Vec<&PhaseResult>> {
        let mut out = Vec::new();
        for p in &self.runs[0].result.phases {
            let found: Vec<&PhaseResult> = self.runs[1..]
                .iter()
                .filter_map(|r| r.result.phases.iter().find(|q| q.name == p.name && phase_kind(q) == phase_kind(p)))
                .collect();
            if found.len() + 1 == self.runs.len() {
                out.push(std::iter::once(p).chain(found).collect());
            }
        }
        out
    }
}

impl Comparison {
    /// The table every text format shows: group, figure, the baseline's value, then each other run's value and
    /// ratio, then the verdicts.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec!["phase".to_string(), "figure".into(), self.runs[0].key.clone()];
        for r in &self.runs[1..] {
            header.push(r.key.clone());
            header.push(format!("{}/{}", r.key, self.runs[0].key));
        }
        header.push("verdict".into());
        let mut last_group = "";
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let group = if row.group == last_group { String::new() } else { row.group.clone() };
                last_group = &row.group;
                let mut cells = vec![group, row.figure.clone(), row.shown(0)];
                let mut verdicts = Vec::new();
                for (n, r) in self.runs.iter().enumerate().skip(1) {
                    cells.push(row.shown(n));
                    cells.push(row.ratio_words(n));
                    verdicts.push(row.verdict_words(n, &r.key, &self.runs[0].key));
                }
                verdicts.dedup();
                cells.push(verdicts.join("; "));
                cells
            })
            .collect();
        (header, rows)
    }

    /// Some row's verdict is "cannot judge" (a run without a noise estimate for it).
    pub fn unjudged(&self) -> bool {
        self.rows.iter().any(|row| (1..self.runs.len()).any(|n| row.verdict(n) == Verdict::NoNoiseEstimate))
    }

    /// One line per run: its key, source, command, target, host and date.
    pub fn legend(&self) -> Vec<String> {
        self.runs
            .iter()
            .map(|r| {
                let x = &r.result;
                format!(
                    "{} = {}: {} of {} on {}, {}",
                    r.key,
                    r.source,
                    kind(x),
                    x.target.path,
                    x.host.hostname,
                    x.started_at
                )
            })
            .collect()
    }
}

/// The key of the n-th run: A, B, … Z, then 27, 28, …
pub fn run_key(n: usize) -> String {
    if n < 26 { char::from(b'A' + n as u8).to_string() } else { (n + 1).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json");
        crate::results::read_result(std::path::Path::new(path)).unwrap()
    }

    fn run(n: usize, result: RunResult) -> Run {
        Run { key: run_key(n), source: format!("r{n}.json"), result }
    }

    #[test]
    fn a_different_block_size_is_a_different_workload() {
        let a = fixture();
        let mut b = fixture();
        b.phases[1].bs = "64K".into();
        let why = differences(&a, &b);
        assert_eq!(
            why,
            ["phase 'random 4k reads' is randread 4K QD 32 × 1 in one and randread 64K QD 32 × 1 in the other"]
        );
        let refused = Comparison::build(vec![run(0, a.clone()), run(1, b.clone())], false).err().unwrap();
        assert!(refused.to_string().contains("--allow-different"));
        let allowed = Comparison::build(vec![run(0, a), run(1, b)], true).unwrap();
        assert_eq!(allowed.warnings.len(), 1);
        assert_eq!(allowed.matched_phases().len(), 1, "only the phase of the same kind is matched");
    }

    fn check() -> RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/check-v2.json");
        crate::results::read_result(std::path::Path::new(path)).unwrap()
    }

    /// Regression (issue 30): two checks made over 80 rows (every step of every format's search, each phase's
    /// four figures) with the 1080p row twice. Now: one row per format, then each phase's own figures.
    #[test]
    fn two_checks_make_a_short_table_with_each_format_once() {
        let c = Comparison::build(vec![run(0, check()), run(1, check())], false).unwrap();
        let groups: Vec<&str> = c.rows.iter().map(|r| r.group.as_str()).collect();
        assert_eq!(&groups[..3], ["1080p H.264", "2160p HEVC", "2160p remux"], "{groups:?}");
        assert_eq!(groups.iter().filter(|g| g.contains("1080p")).count(), 1, "{groups:?}");
        assert!(c.rows.len() <= 20, "{} rows: {groups:?}", c.rows.len());
        assert!(!groups.iter().any(|g| g.ends_with(" streams") || g.starts_with("estimate")), "{groups:?}");
        let figures: Vec<String> = c.rows.iter().map(|r| format!("{}: {}", r.group, r.figure)).collect();
        assert!(figures.contains(&"seq-read 1M qd8: read MB/s".to_string()), "{figures:?}");
        assert!(figures.contains(&"rand-read 4k qd32: read p99".to_string()), "{figures:?}");
        assert!(!figures.iter().any(|f| f.ends_with("p50")), "{figures:?}");
    }

    /// Regression (issue 30): every phase row of two quick checks said "too few intervals to judge", and
    /// nothing said why: the rows say "cannot judge (see below)", and one line under the table says why.
    #[test]
    fn rows_that_cannot_be_judged_are_explained_once() {
        let mut other = check();
        if let Some(w) = other.phases[0].write.as_mut() {
            w.mbps *= 2.0;
        }
        let c = Comparison::build(vec![run(0, check()), run(1, other)], false).unwrap();
        assert!(c.unjudged());
        let text = crate::render_to_string(&crate::Summary, &c);
        assert_eq!(text.matches(NOTHING_IN_COMMON).count(), 0);
        assert_eq!(text.matches(terminal::UNJUDGED).count(), 1, "{text}");
        assert!(text.contains("cannot judge (see below)"), "{text}");
        let same = Comparison::build(vec![run(0, check()), run(1, check())], false).unwrap();
        assert!(!same.unjudged());
        assert!(!crate::render_to_string(&crate::Summary, &same).contains(terminal::UNJUDGED));
    }

    /// Regression (issue 30): `--allow-different` on runs with nothing in common printed an empty table.
    #[test]
    fn runs_with_nothing_in_common_say_so_instead_of_an_empty_table() {
        let c = Comparison::build(vec![run(0, fixture()), run(1, check())], true).unwrap();
        let mut other = fixture();
        for p in &mut other.phases {
            p.name = format!("other {}", p.name);
        }
        let c2 = Comparison::build(vec![run(0, fixture()), run(1, other)], true).unwrap();
        assert!(c2.rows.is_empty());
        let text = crate::render_to_string(&crate::Summary, &c2);
        assert!(text.contains(NOTHING_IN_COMMON) && !text.contains("verdict"), "{text}");
        let markdown = crate::render_to_string(&crate::Markdown, &c2);
        assert!(markdown.contains(NOTHING_IN_COMMON) && !markdown.contains("| phase"), "{markdown}");
        assert!(!c.warnings.is_empty());
    }

    #[test]
    fn keys_name_runs_in_order() {
        assert_eq!([run_key(0), run_key(1), run_key(25), run_key(26)], ["A", "B", "Z", "27"]);
    }
}
