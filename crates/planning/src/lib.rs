//! Capacity planning (`streamcap plan`): a model from drives to layouts to service. Drives come from a TOML
//! catalogue (`catalogue`) or from a result measured on one drive (`from_result`); `layout` says how each layout
//! allocates them; `members` what one logical read or write costs each member; `service` turns those costs into
//! streams, MB/s and operations per second with the sentence that says what limits them; `evaluate` adds the
//! degraded and rebuilding states and the costs; this file builds the pools and ranks the answers.
//!
//! Layer 5: imports `results` (the answer is a `results::PlanningResult`, with a schema of its own) and `units`;
//! no I/O — the app reads the files. Not to be confused with `plan`, the stage that expands a job into concrete
//! work. Every formula, its source and where it is known to be wrong: docs/planning.md.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::results;
pub(crate) use ::units;
// This crate, as `crate::planning::…` names it.
#[cfg(test)]
use crate as planning;

pub mod catalogue;
pub mod drive;
pub mod evaluate;
pub mod fill;
pub mod from_result;
mod honest;
pub mod infer;
pub mod layout;
pub mod measured;
pub mod members;
pub mod readers;
pub mod service;
pub mod spaces;
pub mod spaces_tune;
pub mod workload;

pub use catalogue::{CatalogueError, parse_catalogue};
pub use drive::{Cost, Dir, Drive, DriveCache, Price, RandomCost};
pub use from_result::{FromResultError, cache_served, drive_from_result};
pub use layout::{DEFAULT_LAYOUTS, Layout, parse_layouts};
pub use workload::{FileWorkload, Goal, Ingest, StreamDemand, StreamFormat, defaults};

use crate::results::{
    LayoutAnswer, PLANNING_SCHEMA, PLANNING_SCHEMA_VERSION, PlannedDrive, PlannedFileWorkload, PlannedFormat,
    PlannedWorkload, PlanningResult, Refusal, ToolInfo,
};
use crate::units::Bytes;

/// Input that cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanningError {
    #[error("--pool names '{0}', which is not a drive of the catalogue ({1})")]
    UnknownDrive(String, String),
    #[error("'{0}' in --pool is not NAME:COUNT (e.g. mg10-20tb:4)")]
    BadPool(String),
    #[error("the drives are priced in several currencies ({0}); give every price in one currency")]
    MixedCurrencies(String),
    #[error("no pool to plan: the catalogue has no drives")]
    NoDrives,
    #[error("--pool {0} has {1} drives: a pool holds at most {max} (give counts that add up to at most {max})", max = defaults::MAX_DRIVES)]
    TooManyDrives(String, usize),
    #[error(
        "a pool of {0} holds more than 16 EiB in all, beyond a 64-bit byte count: is the capacity's unit right \
         (TB, not PB)?"
    )]
    TooLarge(String),
}

/// Everything `plan` needs.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// Each pool: its members, in order.
    pub pools: Vec<Vec<Drive>>,
    pub layouts: Vec<Layout>,
    pub demand: StreamDemand,
    pub file: FileWorkload,
    pub goal: Goal,
    /// Share of each involved member's time a rebuild takes, 0–1.
    pub rebuild_share: f64,
    /// Request size of the sequential figures.
    pub sequential_request: u64,
    /// Data stored on the pool: a small data set lies on few members of a btrfs raid1 (`fill`); `None`: a pool
    /// full enough that data lies on every member.
    pub data_set: Option<Bytes>,
    /// A controller's read cache in front of every pool's members.
    pub controller: Option<DriveCache>,
}

/// The pools to compare: `pool` ("a:2,b:2", one mixed pool) when given, else `count` drives of each catalogue
/// model for every count.
pub fn build_pools(drives: &[Drive], pool: Option<&str>, counts: &[usize]) -> Result<Vec<Vec<Drive>>, PlanningError> {
    if drives.is_empty() {
        return Err(PlanningError::NoDrives);
    }
    let pools = match pool {
        Some(spec) => vec![pool_of(drives, spec)?],
        None => {
            let counts = if counts.is_empty() { &[defaults::COUNT][..] } else { counts };
            drives.iter().flat_map(|d| counts.iter().map(move |&n| vec![d.clone(); n])).collect()
        }
    };
    // Capacities are summed in bytes: a pool past 2^64 would saturate to a meaningless "18446744.1 TB".
    for members in &pools {
        if members.iter().try_fold(0u64, |sum, d| sum.checked_add(d.capacity.0)).is_none() {
            return Err(PlanningError::TooLarge(evaluate::pool_name(members)));
        }
    }
    Ok(pools)
}

/// The one mixed pool of `--pool NAME:COUNT,…`, at most `defaults::MAX_DRIVES` drives, counted before any is
/// made.
fn pool_of(drives: &[Drive], spec: &str) -> Result<Vec<Drive>, PlanningError> {
    let mut parts = Vec::new();
    let mut total = 0usize;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, count) = part.rsplit_once(':').unwrap_or((part, "1"));
        let count: usize =
            count.trim().parse().ok().filter(|c| *c > 0).ok_or_else(|| PlanningError::BadPool(part.into()))?;
        let drive = drives.iter().find(|d| d.name == name.trim()).ok_or_else(|| {
            let names: Vec<&str> = drives.iter().map(|d| d.name.as_str()).collect();
            PlanningError::UnknownDrive(name.trim().into(), names.join(", "))
        })?;
        total = total.saturating_add(count);
        if total > defaults::MAX_DRIVES {
            return Err(PlanningError::TooManyDrives(spec.into(), total));
        }
        parts.push((drive, count));
    }
    if parts.is_empty() {
        return Err(PlanningError::BadPool(spec.into()));
    }
    Ok(parts.into_iter().flat_map(|(drive, count)| std::iter::repeat_n(drive.clone(), count)).collect())
}

/// The one currency of every price, if every drive has a price.
fn currency(pools: &[Vec<Drive>]) -> Result<Option<String>, PlanningError> {
    let mut codes: Vec<&str> = Vec::new();
    let mut all_priced = true;
    for drive in pools.iter().flatten() {
        match &drive.price {
            Some(p) if !codes.contains(&p.currency.as_str()) => codes.push(&p.currency),
            Some(_) => {}
            None => all_priced = false,
        }
    }
    match codes.as_slice() {
        [] => Ok(None),
        [one] => Ok(all_priced.then(|| one.to_string())),
        many => Err(PlanningError::MixedCurrencies(many.join(", "))),
    }
}

/// Plans every buildable layout of every pool and ranks the answers by the goal.
pub fn plan(request: &PlanRequest, command: Vec<String>, created_at: String) -> Result<PlanningResult, PlanningError> {
    let currency = currency(&request.pools)?;
    let settings = evaluate::Settings {
        demand: &request.demand,
        file: &request.file,
        request: request.sequential_request as f64,
        rebuild_share: request.rebuild_share,
        data_set: request.data_set.map(|b| b.0 as f64),
        controller: request.controller,
    };
    let mut answers = Vec::new();
    let mut refused = Vec::new();
    for pool in &request.pools {
        for &layout in &request.layouts {
            match layout.refuses(pool.len()) {
                Some(why) => refused.push(Refusal { layout: layout.to_string(), pool: evaluate::pool_name(pool), why }),
                None => answers.push(evaluate::evaluate(layout, pool, &settings)),
            }
        }
    }
    rank(&mut answers, request.goal);
    let mut drives: Vec<&Drive> = Vec::new();
    for d in request.pools.iter().flatten() {
        if !drives.iter().any(|x| x.name == d.name) {
            drives.push(d);
        }
    }
    Ok(PlanningResult {
        schema: PLANNING_SCHEMA.into(),
        schema_version: PLANNING_SCHEMA_VERSION,
        tool: ToolInfo::current(),
        command,
        created_at,
        goal: request.goal.name().into(),
        currency,
        workload: planned_workload(request),
        drives: drives.iter().map(|d| planned_drive(d)).collect(),
        notes: notes(request, &answers),
        measured: Vec::new(),
        answers,
        refused,
    })
}

/// Best first: the goal's figure, then the cost per stream, then the layout name (a stable order).
fn rank(answers: &mut [LayoutAnswer], goal: Goal) {
    let cost = |a: &LayoutAnswer| a.healthy.cost_per_stream.unwrap_or(f64::INFINITY);
    answers.sort_by(|a, b| {
        let by_goal = match goal {
            Goal::CostPerStream => cost(a).total_cmp(&cost(b)).then(b.healthy.streams.cmp(&a.healthy.streams)),
            Goal::Capacity => b.usable_bytes.cmp(&a.usable_bytes),
            Goal::Streams => b.healthy.streams.cmp(&a.healthy.streams),
        };
        by_goal.then(cost(a).total_cmp(&cost(b))).then(a.layout.cmp(&b.layout)).then(a.pool.cmp(&b.pool))
    });
    for (i, a) in answers.iter_mut().enumerate() {
        a.rank = i as u32 + 1;
    }
}

fn planned_workload(request: &PlanRequest) -> PlannedWorkload {
    let file = &request.file;
    PlannedWorkload {
        mix: request
            .demand
            .formats
            .iter()
            .map(|f| PlannedFormat {
                name: f.name.clone(),
                label: f.label.clone(),
                bitrate_bps: f.bitrate.bits_per_sec(),
                weight: f.weight,
            })
            .collect(),
        chunk_bytes: request.demand.chunk.0,
        reader_threads: request.demand.reader_threads,
        ingest_mbps: request.demand.ingest.map_or(0.0, |i| i.rate.mb_per_sec()),
        ingest_writers: request.demand.ingest.map_or(0, |i| i.writers),
        file: PlannedFileWorkload {
            read_pct: file.read_pct,
            transfer_bytes: file.transfer.0,
            threads: file.threads,
            file_bytes: file.file_size.map(|b| b.0),
            fileio: if file.sequential { "sequential" } else { "random" }.into(),
        },
        rebuild_share_pct: request.rebuild_share * 100.0,
        data_set_bytes: request.data_set.map(|b| b.0),
    }
}

fn planned_drive(d: &Drive) -> PlannedDrive {
    PlannedDrive {
        name: d.name.clone(),
        product: d.product.clone(),
        source: d.source.clone(),
        capacity_bytes: d.capacity.0,
        price: d.price.as_ref().map(|p| p.amount),
        read_mbps: d.read.mb_per_sec(),
        write_mbps: d.write.mb_per_sec(),
        rotational: d.rotational,
        random_read_iops: d.random_read_iops(),
    }
}

/// The assumptions a reader of the table should not miss.
fn notes(request: &PlanRequest, answers: &[LayoutAnswer]) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Streams: each viewer reads one {} chunk per chunk period at a position unrelated to other viewers' \
             (no cache, no readahead); capacity is where the busiest member reaches 100 %, so expect to sustain \
             somewhat less (docs/planning.md).",
            Bytes(request.demand.chunk.0)
        ),
        format!(
            "Degraded: the member whose loss hurts most has failed. Rebuilding: it is being rebuilt at {:.0} % of \
             each involved member's time.",
            request.rebuild_share * 100.0
        ),
    ];
    if answers.iter().any(|a| a.layout.starts_with("snapraid")) {
        notes.push(
            "SnapRAID computes parity when `snapraid sync` runs: data written since the last sync is unprotected, and \
             a failed disk's files are unavailable until `snapraid fix` restores them."
                .into(),
        );
    }
    for pool in &request.pools {
        let capacities: Vec<f64> = pool.iter().map(|d| d.capacity.0 as f64).collect();
        for &layout in &request.layouts {
            let note = fill::note(layout, &capacities, request.data_set.map(|b| b.0 as f64));
            notes.extend(note.filter(|n| !notes.contains(n)));
        }
    }
    for pool in &request.pools {
        for &layout in &request.layouts {
            if layout.refuses(pool.len()).is_none() {
                notes.extend(spaces::penalty_note(layout, pool, request.sequential_request as f64));
            }
        }
    }
    if answers.iter().any(|a| a.layout.starts_with("btrfs")) {
        notes.push(
            "btrfs: reads choose a copy by the reader's pid (one reader thread uses one copy); raid1 writes fill one \
             chunk at a time, so they go to two members whatever the pool's size."
                .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::drive::tests::hdd;
    use crate::units::Bitrate;

    fn request(pools: Vec<Vec<Drive>>, goal: Goal) -> PlanRequest {
        let format =
            StreamFormat { name: "1080p".into(), label: "1080p".into(), bitrate: Bitrate(8_000_000), weight: 1 };
        PlanRequest {
            pools,
            layouts: DEFAULT_LAYOUTS.to_vec(),
            demand: StreamDemand { formats: vec![format], chunk: Bytes(1 << 20), reader_threads: None, ingest: None },
            file: FileWorkload::default(),
            goal,
            rebuild_share: 0.5,
            sequential_request: 1 << 20,
            data_set: None,
            controller: None,
        }
    }

    #[test]
    fn pools_come_from_counts_or_from_a_pool_spec() {
        let drives = vec![hdd(8), hdd(4)];
        assert_eq!(build_pools(&drives, None, &[2, 4]).unwrap().len(), 4);
        let mixed = build_pools(&drives, Some("hdd-8tb:2,hdd-4tb:1"), &[]).unwrap();
        assert_eq!(mixed[0].len(), 3);
        assert!(build_pools(&drives, Some("hdd-9tb:2"), &[]).unwrap_err().to_string().contains("hdd-8tb, hdd-4tb"));
    }

    #[test]
    fn answers_are_ranked_by_the_goal_and_impossible_layouts_refused() {
        let result = plan(&request(vec![vec![hdd(8); 4]], Goal::Capacity), vec![], "now".into()).unwrap();
        assert_eq!(result.schema, "streamcap.planning");
        assert_eq!(result.answers[0].layout, "single");
        assert!(result.refused.iter().any(|r| r.layout == "mirror3" && r.why.contains("multiple of 3")));
        let by_streams = plan(&request(vec![vec![hdd(8); 4]], Goal::Streams), vec![], "now".into()).unwrap();
        let streams: Vec<u32> = by_streams.answers.iter().map(|a| a.healthy.streams).collect();
        assert!(streams.windows(2).all(|w| w[0] >= w[1]), "{streams:?}");
        assert_eq!(result.currency.as_deref(), Some("USD"));
    }
}
