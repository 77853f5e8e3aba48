//! The library the viewers watch: how many titles it holds, which title each viewer of a step picks (its own
//! title, or a Zipf popularity whose hot set is stated), and what a plan and a result say about it. Pure: no I/O,
//! no clock. Which files hold the titles (streamcap's generated title files, or the user's own media) is the
//! plan's business; this module only numbers them 0..count.

use serde::{Deserialize, Serialize};

use crate::workload::{Rng, Zipf};

/// The titles of a run, as the viewers see them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Titles {
    /// How many titles (at least 1).
    pub count: u32,
    /// Zipf exponent of the titles' popularity; `None`: each viewer its own title.
    pub zipf: Option<f64>,
}

/// Which title each viewer of one step watches.
pub enum Picker {
    /// Viewer i of n watches title (offset + ⌊i × count ÷ n⌋) mod count: its own title while there are titles
    /// enough, and the step's titles spread evenly over the whole library, as a real audience's are, rather
    /// than n neighbours. Titles are written one after another, so neighbours lie together on the storage: on a
    /// btrfs raid1 of four members, seven remux viewers of seven neighbouring titles read one pair of members
    /// and left the other idle (docs/validation.md, "Findings").
    Own { offset: u64, count: u64, viewers: u64 },
    /// Titles drawn by popularity (rank 1 is title 0 … then shifted by `offset`, so that the hottest title
    /// differs from step to step and a cache does not keep it warm across steps).
    Zipf { zipf: Zipf, offset: u64, count: u64 },
    /// Zipf exponent 0: every title equally likely.
    Uniform { count: u64 },
}

impl Picker {
    /// The title of viewer `viewer` (its index in the step).
    pub fn pick(&self, viewer: usize, rng: &mut Rng) -> u32 {
        match self {
            Picker::Own { offset, count, viewers } => {
                let spread = (viewer as u128 * u128::from(*count) / u128::from((*viewers).max(1))) as u64;
                ((offset + spread) % count) as u32
            }
            Picker::Zipf { zipf, offset, count } => ((zipf.sample(rng) - 1 + offset) % count) as u32,
            Picker::Uniform { count } => rng.below(*count) as u32,
        }
    }
}

/// The hottest titles and the share of the viewers they draw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HotSet {
    /// The hottest tenth of the titles, at least one.
    pub titles: u32,
    /// The share of the viewers they draw, 0–100.
    pub viewers_pct: f64,
}

impl Titles {
    /// The picker of one step of `viewers` viewers; `rng` is the step's (its offset is drawn from it).
    pub fn picker(&self, viewers: u32, rng: &mut Rng) -> Picker {
        let count = u64::from(self.count.max(1));
        match self.zipf {
            None => Picker::Own { offset: rng.below(count), count, viewers: u64::from(viewers.max(1)) },
            Some(theta) if theta > 0.0 && count > 1 => {
                Picker::Zipf { zipf: Zipf::new(count, theta), offset: rng.below(count), count }
            }
            Some(_) => Picker::Uniform { count },
        }
    }

    /// With a Zipf popularity: the hottest tenth of the titles (at least one) and the share of viewers they draw.
    pub fn hot_set(&self) -> Option<HotSet> {
        let theta = self.zipf?;
        let n = self.count.max(1);
        let hot = (n / 10).max(1);
        let weight = |k: u32| (1..=k).map(|i| f64::from(i).powf(-theta)).sum::<f64>();
        Some(HotSet { titles: hot, viewers_pct: 100.0 * weight(hot) / weight(n) })
    }

    /// How viewers pick titles, in words: "each viewer its own title (64 titles; …)" or "Zipf popularity 1.0:
    /// the 6 hottest titles draw 52 % of the viewers, …".
    pub fn popularity(&self) -> String {
        let moving = "each viewer from a random position; titles and positions change from step to step";
        match (self.zipf, self.hot_set()) {
            (Some(theta), Some(hot)) if theta > 0.0 => format!(
                "Zipf popularity {theta}: {} {:.0} % of the viewers, {moving}",
                if hot.titles == 1 {
                    "the hottest title draws".to_string()
                } else {
                    format!("the {} hottest titles draw", hot.titles)
                },
                hot.viewers_pct
            ),
            (Some(_), _) => format!("every title equally likely (Zipf exponent 0), {moving}"),
            (None, _) => {
                format!(
                    "each viewer its own title, a step's titles spread evenly over the library (beyond {} viewers \
                     they share titles), {moving}",
                    self.count
                )
            }
        }
    }
}

/// Where a library's titles come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibrarySource {
    /// Title files streamcap writes before the first stream phase and removes after the run.
    Generated,
    /// The user's own media files (`--library DIR`), only ever read.
    User,
}

/// One of the user's media files the viewers read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryFile {
    /// Path below the library directory.
    pub path: String,
    /// Size, bytes.
    pub bytes: u64,
}

/// What a plan and a result say about the library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryInfo {
    pub source: LibrarySource,
    /// The user's library directory (absent for a generated library).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Titles the viewers pick from.
    pub titles: u32,
    /// Bytes of all the titles together.
    pub bytes: u64,
    /// A generated library: the size of each title, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_bytes: Option<u64>,
    /// Zipf exponent of the titles' popularity; absent: each viewer its own title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf: Option<f64>,
    /// With a Zipf popularity: the hottest titles and the share of the viewers they draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_set: Option<HotSet>,
    /// How viewers pick titles, in words.
    pub popularity: String,
    /// Why the library has this size (and which caches it exceeds), in words.
    pub why: String,
    /// The user's files the viewers read (at most `FILES_LISTED` of them, in order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<LibraryFile>,
    /// For a fixed count of viewers: the title each viewer of the (first) step watches, by viewer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub viewer_titles: Vec<u32>,
    /// A generated library kept between runs under the target; absent: written for this run and removed after
    /// it (and in every result before libraries were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<KeptInfo>,
}

/// A generated library kept between runs in `TARGET/.streamcap/library` (`LibraryInfo::kept`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptInfo {
    pub dir: String,
    /// Read as an earlier run wrote it (this run wrote nothing of it).
    pub reused: bool,
    /// When the earlier run wrote it (unix seconds), for a library read again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<u64>,
    /// Left there after the run for the next one; `false`: removed at its end.
    pub kept_after: bool,
    /// All of that, in words.
    pub words: String,
}

/// The most files a result lists by name (a library of thousands is summed up, not listed).
pub const FILES_LISTED: usize = 1000;

impl LibraryInfo {
    /// One line for summaries: "7.98 GiB in 61 titles of 134 MiB, written by streamcap" or "your library
    /// /srv/media: 412 files, 3.1 TiB, only read".
    pub fn headline(&self) -> String {
        let size = crate::units::Bytes(self.bytes);
        match (self.source, &self.dir) {
            (LibrarySource::User, Some(dir)) => {
                format!("your library {dir}: {} media file(s), {size}, only read", self.titles)
            }
            _ => format!(
                "{size} in {} title(s){}, {}",
                self.titles,
                self.title_bytes.map_or_else(String::new, |b| format!(" of {}", crate::units::Bytes(b))),
                match &self.kept {
                    Some(kept) if kept.reused => "written by streamcap in an earlier run, kept and read again",
                    _ => "written by streamcap",
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_titles_are_distinct_up_to_the_title_count_and_shared_beyond() {
        let titles = Titles { count: 10, zipf: None };
        let mut rng = Rng::new(3);
        let picker = titles.picker(10, &mut rng);
        let picked: Vec<u32> = (0..10).map(|v| picker.pick(v, &mut rng)).collect();
        let mut sorted = picked.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>(), "ten viewers, ten titles: {picked:?}");
        let picker = titles.picker(20, &mut rng);
        let mut per_title = [0u32; 10];
        for v in 0..20 {
            per_title[picker.pick(v, &mut rng) as usize] += 1;
        }
        assert_eq!(per_title, [2; 10], "twenty viewers, two on each title");
    }

    /// A step's viewers watch titles spread over the whole library, not neighbours: the generated titles are
    /// written one after another, so neighbours lie on the same part of the storage (on btrfs raid1, seven
    /// remux viewers of seven neighbouring titles all read one pair of the four members).
    #[test]
    fn a_few_viewers_watch_titles_spread_over_the_whole_library() {
        let titles = Titles { count: 24, zipf: None };
        let mut rng = Rng::new(5);
        for viewers in [1u32, 4, 7, 8, 13] {
            let picker = titles.picker(viewers, &mut rng);
            let Picker::Own { offset, .. } = picker else { panic!("an own-title picker") };
            // Each title's place in the library, counted from the step's first title.
            let mut places: Vec<u64> =
                (0..viewers as usize).map(|v| (u64::from(picker.pick(v, &mut rng)) + 24 - offset) % 24).collect();
            places.sort();
            places.dedup();
            assert_eq!(places.len(), viewers as usize, "distinct titles: {places:?}");
            // Evenly spaced: every gap, the wrap-around included, is within one of 24 ÷ n.
            let gap = 24.0 / f64::from(viewers);
            for (i, p) in places.iter().enumerate() {
                let next = places.get(i + 1).copied().unwrap_or(places[0] + 24);
                assert!(((next - p) as f64 - gap).abs() < 1.0, "{viewers} viewers: {places:?}");
            }
        }
    }

    #[test]
    fn zipf_titles_stay_in_range_and_the_hot_set_draws_its_share() {
        let titles = Titles { count: 50, zipf: Some(1.0) };
        let hot = titles.hot_set().unwrap();
        assert_eq!(hot.titles, 5);
        // H(5) / H(50) = 2.2833 / 4.4992.
        assert!((hot.viewers_pct - 50.75).abs() < 0.1, "{hot:?}");
        let mut rng = Rng::new(9);
        let picker = titles.picker(20_000, &mut rng);
        let Picker::Zipf { offset, .. } = picker else { panic!("a Zipf picker") };
        let mut hits = [0u32; 50];
        for v in 0..20_000 {
            hits[picker.pick(v, &mut rng) as usize] += 1;
        }
        let hottest: u32 = (0..5).map(|k| hits[((offset + k) % 50) as usize]).sum();
        let share = f64::from(hottest) / 200.0;
        assert!((share - hot.viewers_pct).abs() < 3.0, "{share} % against {hot:?}");
        assert!(
            titles.popularity().contains("the 5 hottest titles draw 51 % of the viewers"),
            "{}",
            titles.popularity()
        );
    }

    #[test]
    fn one_title_is_the_whole_hot_set() {
        let titles = Titles { count: 1, zipf: Some(1.2) };
        assert_eq!(titles.hot_set(), Some(HotSet { titles: 1, viewers_pct: 100.0 }));
        let mut rng = Rng::new(1);
        let picker = titles.picker(10, &mut rng);
        assert!((0..10).all(|v| picker.pick(v, &mut rng) == 0));
    }
}
