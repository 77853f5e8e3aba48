//! `--expect`: will a household's streams play together on this storage? The answer per format and for the
//! household as a whole, in three words as Blackmagic's and AJA's "will it work" grids give it: **yes** (within
//! the comfortable count, which keeps the check's margin), **only without margin** (within the measured
//! capacity, not within the comfortable count), **no** (beyond the capacity). Pure: from the verdict table.
//!
//! Formats that play together share the storage: each stream of format f takes 1 ÷ Cf of it (Cf its measured
//! capacity), so the household fits while Σ nf ÷ Cf ≤ 1, and comfortably while Σ nf ÷ Pf ≤ 1 (Pf the comfortable
//! count). With one format that is the row's own answer. The mix is arithmetic on capacities measured one
//! format at a time, and the answer says so. `check --expect` answers from its verdict table (`answer`),
//! `streams --expect 2x2160p` from its search's answer for the one format it streams (`answer_from`).

use serde::{Deserialize, Serialize};

use super::CapacityAnswer;
use super::check::FormatVerdict;

/// One of the three answers, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    OnlyWithoutMargin,
    No,
    /// The format's capacity was not measured (interrupted, cache-served), or the search stopped at its limit
    /// below the count asked.
    NotMeasured,
}

impl Answer {
    pub fn words(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::OnlyWithoutMargin => "only without margin",
            Answer::No => "no",
            Answer::NotMeasured => "not measured",
        }
    }
}

/// One format of the household.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HouseholdRow {
    /// The format's name ("2160p-remux") and label ("2160p remux (80 Mbit/s)").
    pub format: String,
    pub label: String,
    /// Streams of it the household plays.
    pub wanted: u32,
    /// Its measured capacity and comfortable count (0: not measured).
    pub capacity: u32,
    pub plan_for: u32,
    /// This format's streams alone.
    pub alone: Answer,
}

/// The answer to `--expect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HouseholdAnswer {
    /// The household as asked ("2x2160p-remux,3x1080p").
    pub expect: String,
    /// The margin the comfortable count keeps below the capacity, percent.
    pub margin_pct: f64,
    pub rows: Vec<HouseholdRow>,
    /// Σ wanted ÷ capacity over the formats, percent of the storage the household takes (absent when a
    /// capacity is unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_pct: Option<f64>,
    /// All of it together.
    pub together: Answer,
    /// The answer in a sentence.
    pub words: String,
}

/// The household `wanted` ((format name, count), in the order asked) against the verdict table.
pub fn answer(expect: &str, wanted: &[(String, u32)], verdicts: &[FormatVerdict], margin: f64) -> HouseholdAnswer {
    let measured: Vec<Measured> =
        verdicts.iter().map(|v| Measured { name: &v.name, label: &v.label, capacity: &v.capacity }).collect();
    answer_from(expect, wanted, &measured, margin)
}

/// One format's measured capacity, as the answer reads it: a check's verdict row, or a `streams --max` answer.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The format's name ("2160p-hevc").
    pub name: &'a str,
    /// In words ("2160p HEVC (25 Mbit/s)").
    pub label: &'a str,
    pub capacity: &'a CapacityAnswer,
}

/// The household's answer from the formats measured (`streams --expect 2x2160p`: the one format streamed).
pub fn answer_from(expect: &str, wanted: &[(String, u32)], measured: &[Measured], margin: f64) -> HouseholdAnswer {
    let rows: Vec<HouseholdRow> = wanted.iter().map(|(name, n)| row(name, *n, measured)).collect();
    let known = rows.iter().all(|r| r.alone != Answer::NotMeasured);
    let share = |of: fn(&HouseholdRow) -> u32| -> f64 {
        rows.iter().map(|r| if of(r) == 0 { f64::INFINITY } else { f64::from(r.wanted) / f64::from(of(r)) }).sum()
    };
    let (load, comfortable) = (share(|r| r.capacity), share(|r| r.plan_for));
    let together = match () {
        _ if !known => Answer::NotMeasured,
        _ if comfortable <= 1.0 => Answer::Yes,
        _ if load <= 1.0 => Answer::OnlyWithoutMargin,
        _ => Answer::No,
    };
    let load_pct = (known && load.is_finite()).then_some(load * 100.0);
    let words = sentence(together, load_pct, rows.len(), margin);
    HouseholdAnswer { expect: expect.into(), margin_pct: margin * 100.0, rows, load_pct, together, words }
}

fn row(name: &str, wanted: u32, measured: &[Measured]) -> HouseholdRow {
    let verdict = measured.iter().find(|v| v.name == name);
    let (capacity, plan_for) = verdict.map_or((0, 0), |v| (v.capacity.streams, v.capacity.plan_for));
    let unknown = verdict.is_none_or(|v| v.capacity.not_measured.is_some())
        || verdict.is_some_and(|v| v.capacity.at_limit && wanted > capacity);
    let alone = match () {
        _ if unknown => Answer::NotMeasured,
        _ if wanted <= plan_for => Answer::Yes,
        _ if wanted <= capacity => Answer::OnlyWithoutMargin,
        _ => Answer::No,
    };
    let label = verdict.map_or_else(|| name.to_string(), |v| v.label.to_string());
    HouseholdRow { format: name.into(), label, wanted, capacity, plan_for, alone }
}

fn sentence(together: Answer, load_pct: Option<f64>, formats: usize, margin: f64) -> String {
    let what = if formats > 1 { "its streams together" } else { "its streams" };
    let load = load_pct.map(|l| format!(" ({l:.0} % of the measured capacity)")).unwrap_or_default();
    let mix = if formats > 1 { "; a mix is added up from capacities measured one format at a time" } else { "" };
    match together {
        Answer::Yes => format!("yes: {what} fit with the {:.0} % margin{load}{mix}", margin * 100.0),
        Answer::OnlyWithoutMargin => {
            format!(
                "only without margin: {what} fit the measured capacity{load} but not the {:.0} % margin{mix}",
                margin * 100.0
            )
        }
        Answer::No => format!("no: {what} need more than the storage delivered{load}{mix}"),
        Answer::NotMeasured => format!("not measured: a format's capacity is unknown, so {what} cannot be judged"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CapacityAnswer;

    fn verdict(name: &str, streams: u32, plan_for: u32) -> FormatVerdict {
        FormatVerdict {
            name: name.into(),
            label: name.into(),
            bitrate_bps: 0,
            streams,
            limited_by: String::new(),
            bandwidth_ceiling: 0,
            headroom_pct: None,
            beyond_ceiling: false,
            ceiling_understated: false,
            capacity: CapacityAnswer { streams, plan_for, ..CapacityAnswer::default() },
            estimate: None,
            steps: Vec::new(),
        }
    }

    fn ask(wanted: &[(&str, u32)], verdicts: &[FormatVerdict]) -> HouseholdAnswer {
        let wanted: Vec<(String, u32)> = wanted.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        answer("asked", &wanted, verdicts, 0.2)
    }

    #[test]
    fn each_format_alone_is_yes_within_the_comfortable_count_and_no_beyond_the_capacity() {
        let table = [verdict("1080p", 40, 32), verdict("2160p-remux", 4, 3)];
        let alone = |n| ask(&[("2160p-remux", n)], &table);
        let answers: Vec<Answer> = (1..=5).map(|n| alone(n).together).collect();
        use Answer::*;
        assert_eq!(answers, [Yes, Yes, Yes, OnlyWithoutMargin, No]);
        assert_eq!(alone(3).rows[0].alone, Yes);
        assert!(alone(5).words.starts_with("no: its streams need more"), "{}", alone(5).words);
    }

    #[test]
    fn a_mix_adds_each_format_s_share_of_its_capacity() {
        let table = [verdict("1080p", 40, 32), verdict("2160p-remux", 4, 3)];
        // 2/4 + 8/40 = 70 % of the capacity; comfortably 2/3 + 8/32 = 92 %: yes.
        let fits = ask(&[("2160p-remux", 2), ("1080p", 8)], &table);
        assert_eq!((fits.together, fits.load_pct.map(f64::round)), (Answer::Yes, Some(70.0)));
        // 2/4 + 16/40 = 90 %: within the capacity, not within the margin, though each alone is yes.
        let tight = ask(&[("2160p-remux", 2), ("1080p", 16)], &table);
        assert!(tight.rows.iter().all(|r| r.alone == Answer::Yes));
        assert_eq!(tight.together, Answer::OnlyWithoutMargin);
        assert_eq!(ask(&[("2160p-remux", 3), ("1080p", 16)], &table).together, Answer::No);
    }

    #[test]
    fn an_unmeasured_capacity_gives_no_answer() {
        let mut unmeasured = verdict("2160p-remux", 0, 0);
        unmeasured.capacity.not_measured = Some("interrupted".into());
        let a = ask(&[("2160p-remux", 1)], &[unmeasured]);
        assert_eq!((a.together, a.load_pct), (Answer::NotMeasured, None));
        let mut at_limit = verdict("1080p", 64, 51);
        at_limit.capacity.at_limit = true;
        assert_eq!(ask(&[("1080p", 50)], std::slice::from_ref(&at_limit)).together, Answer::Yes);
        assert_eq!(ask(&[("1080p", 70)], &[at_limit]).together, Answer::NotMeasured, "more than the search tried");
    }

    #[test]
    fn one_format_streamed_is_answered_from_its_capacity_as_a_verdict_row_is() {
        // `streams --expect 2x2160p`: the search's answer is the one capacity.
        let capacity = CapacityAnswer { streams: 10, plan_for: 8, ..CapacityAnswer::default() };
        let measured = [Measured { name: "2160p", label: "2160p HEVC", capacity: &capacity }];
        let ask = |n: u32| answer_from("x", &[("2160p".into(), n)], &measured, 0.2);
        assert_eq!(
            (ask(8).together, ask(10).together, ask(11).together),
            (Answer::Yes, Answer::OnlyWithoutMargin, Answer::No)
        );
        assert_eq!(ask(8).rows[0].label, "2160p HEVC");
        let verdicts = [verdict("2160p", 10, 8)];
        assert_eq!(answer("x", &[("2160p".into(), 10)], &verdicts, 0.2).together, Answer::OnlyWithoutMargin);
        assert_eq!(answer_from("x", &[("2160p".into(), 1)], &[], 0.2).together, Answer::NotMeasured, "no answer yet");
    }
}
