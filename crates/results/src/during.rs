//! "What breaks first": each format's stream capacity alone and beside each of the server's background loads
//! (`check --thorough`, `check --during`), which load cost the most streams, and what each load did meanwhile.
//! Part of `CheckSummary` (additive to schema version 1; absent without loads). Pure: built from capacities the
//! check's phases found.

use serde::{Deserialize, Serialize};

use ::streams::BackgroundFigures;

/// The table: one row per format, one column per load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BreaksFirst {
    /// The loads, in column order (`library-scan` …).
    pub loads: Vec<String>,
    /// One row per format, in the verdict's order.
    pub rows: Vec<BreaksRow>,
    /// What each load did over all its searches together (files/s, MB/s), in column order; a load not yet run
    /// is absent.
    pub rates: Vec<BackgroundFigures>,
    /// The load that cost the most streams, as a share of each format's capacity alone (the mean over the formats
    /// measured both ways); absent until one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hurts_most: Option<String>,
    /// The answer in a sentence.
    pub words: String,
}

/// One format's capacities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BreaksRow {
    /// The format's short name ("2160p-remux").
    pub format: String,
    /// Its label ("2160p remux (80 Mbit/s)").
    pub label: String,
    /// Streams alone (the verdict's capacity); absent when not measured.
    pub alone: Option<u32>,
    /// Streams beside each load, in column order; absent when not measured.
    pub with: Vec<Option<u32>>,
}

impl BreaksRow {
    /// The share of the streams alone that load `i` cost, from 0 (none) to 1 (every stream); `None` unless
    /// both were measured and the format played alone.
    pub fn cost(&self, i: usize) -> Option<f64> {
        let (alone, with) = (self.alone?, (*self.with.get(i)?)?);
        (alone > 0).then(|| f64::from(alone.saturating_sub(with)) / f64::from(alone))
    }
}

/// The table from its rows: which load hurts most, and the sentence.
pub fn breaks_first(loads: Vec<String>, rows: Vec<BreaksRow>, rates: Vec<BackgroundFigures>) -> BreaksFirst {
    let mean_cost = |i: usize| {
        let costs: Vec<f64> = rows.iter().filter_map(|r| r.cost(i)).collect();
        (!costs.is_empty()).then(|| costs.iter().sum::<f64>() / costs.len() as f64)
    };
    let worst = (0..loads.len()).filter_map(|i| mean_cost(i).map(|c| (i, c))).max_by(|a, b| a.1.total_cmp(&b.1));
    let words = match worst {
        Some((i, cost)) if cost > 0.0 => {
            let row = rows
                .iter()
                .filter(|r| r.cost(i).is_some())
                .max_by(|a, b| a.cost(i).unwrap_or(0.0).total_cmp(&b.cost(i).unwrap_or(0.0)));
            let example = row.map_or(String::new(), |r| {
                format!(": {} {} → {} streams", r.label, r.alone.unwrap_or(0), r.with[i].unwrap_or(0))
            });
            format!("{} hurts playback most, {:.0} % of the streams on average{example}", loads[i], cost * 100.0)
        }
        Some(_) => "no background load cost a stream".into(),
        None => "not measured: no format ran both alone and beside a load".into(),
    };
    let hurts_most = worst.filter(|w| w.1 > 0.0).map(|(i, _)| loads[i].clone());
    BreaksFirst { loads, rows, rates, hurts_most, words }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(format: &str, alone: Option<u32>, with: &[Option<u32>]) -> BreaksRow {
        BreaksRow { format: format.into(), label: format.into(), alone, with: with.to_vec() }
    }

    #[test]
    fn the_load_that_costs_the_largest_share_hurts_most() {
        let loads = vec!["library-scan".to_string(), "transcode".to_string()];
        // Scan: 10 → 6 (40 %) and 40 → 30 (25 %): 32.5 % on average; transcode: 10 → 9, 40 → 38: 7.5 %.
        let rows =
            vec![row("2160p-remux", Some(10), &[Some(6), Some(9)]), row("1080p", Some(40), &[Some(30), Some(38)])];
        let t = breaks_first(loads.clone(), rows, Vec::new());
        assert_eq!(t.hurts_most.as_deref(), Some("library-scan"));
        assert!(t.words.starts_with("library-scan hurts playback most, 32 % of the streams"), "{}", t.words);
        assert!(t.words.ends_with("2160p-remux 10 → 6 streams"), "{}", t.words);
        // A format measured only alone, or a load not yet run, is left out of the means.
        let partial = vec![row("2160p-remux", Some(10), &[None, Some(10)]), row("1080p", None, &[Some(3), None])];
        let t = breaks_first(loads.clone(), partial, Vec::new());
        assert_eq!((t.hurts_most, t.words.as_str()), (None, "no background load cost a stream"));
        let none = breaks_first(loads, vec![row("1080p", None, &[None, None])], Vec::new());
        assert!(none.words.starts_with("not measured"));
    }

    #[test]
    fn a_load_that_adds_streams_costs_nothing() {
        // Noise can put a capacity beside a load above the one alone: no negative cost.
        assert_eq!(row("1080p", Some(40), &[Some(41)]).cost(0), Some(0.0));
        assert_eq!(row("1080p", Some(0), &[Some(0)]).cost(0), None);
    }
}
