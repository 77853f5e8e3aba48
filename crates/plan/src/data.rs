//! The planned shape of written data (`spec::DataSpec` resolved against the phase): which unit repeats, how
//! many units the working set of repeats holds, and how each chunk is laid out for compression. The worker's
//! `run::pattern::Shaper` writes it.

use serde::Serialize;

use crate::spec::{MAX_PATTERN, PhaseSpec};
use crate::units::Bytes;
use crate::workload::BlockSizes;

/// fio's buffer_compress_chunk default.
const COMPRESS_CHUNK: u32 = 512;

/// How a phase's writes are filled when the user asked for deduplicable or compressible data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DataShape {
    /// Percent of units that repeat one written before.
    pub dedupe_percent: f64,
    /// Bytes of a unit; `None`: each write's whole buffer.
    pub unit: Option<u32>,
    /// Repeats are drawn from this many units: the first unique units of the worker's own sequence of unique
    /// data, as fio's working set is; `None`: a repeat is the last unique unit written.
    pub working_set_units: Option<u64>,
    /// The working set is shared: its units come in turn from the unique sequences of every worker of the
    /// job's global phases, so their files deduplicate against each other too (fio dedupe_global).
    pub global: Option<GlobalSet>,
    /// Percent of every chunk that is zeros.
    pub compress_percent: f64,
    /// Bytes of a chunk: random bytes first, then the zeros.
    pub compress_chunk: u32,
    /// Every write is this pattern repeated from its first byte (fio buffer_pattern); the rest is then unused.
    pub pattern: Option<Pattern>,
    /// vdbench's way: each unit's kind is a function of its address, not drawn per write; `None`: fio's.
    pub by_address: Option<ByAddress>,
}

/// Deciding by address (vdbench's dedup): a unit at (file, offset) is unique with this probability, drawn
/// from a hash of its address, or else a copy of one of `working_set_units` sets, also by its address. A
/// unique unit's content changes with every write (vdbench stamps the write's time); a set's never does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ByAddress {
    /// Percent of addresses that hold unique units: 100 − `dedupe_percent` − the sets' own share.
    pub unique_percent: f64,
    /// The phase's seed: the same for every phase of a run that does not choose its own, so the format's sets
    /// and a later phase's are the same bytes.
    pub seed: u64,
}

/// A byte pattern kept inline, so that the shape stays plain data the workers copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    bytes: [u8; MAX_PATTERN],
    len: u16,
}

impl Pattern {
    /// `bytes`, which `DataSpec::check` holds to 1..=MAX_PATTERN bytes (longer ones are cut there).
    pub fn new(bytes: &[u8]) -> Pattern {
        let len = bytes.len().min(MAX_PATTERN);
        let mut inline = [0u8; MAX_PATTERN];
        inline[..len].copy_from_slice(&bytes[..len]);
        Pattern { bytes: inline, len: len as u16 }
    }

    /// The pattern's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let hex: String = self.bytes().iter().map(|b| format!("{b:02x}")).collect();
        s.serialize_str(&format!("0x{hex}"))
    }
}

impl DataShape {
    /// One line for the dry run and the summary: what repeats and what compresses.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.dedupe_percent > 0.0 {
            let unit = self.unit.map_or_else(|| "each write".to_string(), |u| Bytes(u64::from(u)).to_string());
            let from = match self.working_set_units {
                Some(n) if self.by_address.is_some() => format!("one of {n} sets shared by all files"),
                Some(n) if self.global.is_some() => format!("one of a working set of {n} units shared by all jobs"),
                Some(n) => format!("one of a working set of {n} units per job"),
                None => "the last unique one".to_string(),
            };
            let by = self.by_address.map_or(String::new(), |b| {
                format!(", decided by address, {:.1} % of addresses unique (vdbench)", b.unique_percent)
            });
            parts.push(format!("{:.0} % of units ({unit}) repeat {from}{by}", self.dedupe_percent));
        }
        if let Some(pattern) = &self.pattern {
            parts.push(format!("every write is a pattern of {} bytes, repeated (fio buffer_pattern)", pattern.len));
        }
        if self.compress_percent > 0.0 {
            let chunk = Bytes(u64::from(self.compress_chunk));
            parts.push(format!("{:.0} % of every {chunk} chunk is zeros (compressible)", self.compress_percent));
        }
        if parts.is_empty() {
            return "written data: fresh random bytes for every write (nothing repeats or compresses)".into();
        }
        format!("written data: {}", parts.join("; "))
    }
}

/// Where a phase's workers stand among the workers that share a global working set; filled in once every
/// phase is planned (`number_global_sets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GlobalSet {
    /// The run-wide number of the phase's first worker among them.
    pub first: u32,
    /// How many workers share the set.
    pub workers: u32,
}

/// Numbers the workers of the phases with a global working set, in phase order, and tells each phase how
/// many share it.
pub(super) fn number_global_sets(phases: &mut [super::PhasePlan]) {
    let mut next = 0u32;
    for phase in phases.iter_mut().filter_map(super::PhasePlan::raw_mut) {
        if let Some(global) = phase.data.as_mut().and_then(|d| d.global.as_mut()) {
            global.first = next;
            next = next.saturating_add(phase.workers.len() as u32);
        }
    }
    // Only raw phases share a global set: a file set's is refused (`fileset_data_shape`).
    let raw = phases.iter_mut().filter_map(super::PhasePlan::raw_mut);
    for global in raw.filter_map(|p| p.data.as_mut()?.global.as_mut()) {
        global.workers = next;
    }
}

/// The shape of the phase's writes, or `None` when it asks for none (random buffers filled once, stamped).
pub(super) fn data_shape(spec: &PhaseSpec, data_set: Bytes, writes: &BlockSizes) -> Result<Option<DataShape>, String> {
    let Some(data) = spec.data.as_ref().filter(|d| d.fills()) else { return Ok(None) };
    let unit = data.dedupe_unit.map(|u| u.0 as u32);
    if let Some(unit) = unit
        && let Some(size) = writes.sizes().into_iter().find(|s| s % unit != 0)
    {
        return Err(format!(
            "a write of {} is not a whole number of data.dedupe-unit ({}): give block sizes that are multiples of \
             the unit (vdbench: xfersize a multiple of dedupunit)",
            Bytes(u64::from(size)),
            Bytes(u64::from(unit))
        ));
    }
    let unit_bytes = u64::from(unit.unwrap_or_else(|| writes.min()).max(1));
    let share = |percent: f64| ((data_set.0 as f64 * percent / 100.0) / unit_bytes as f64).ceil().max(1.0) as u64;
    let working_set_units = data.dedupe_sets.or(data.dedupe_working_set.map(share));
    let dedupe_percent = data.dedupe_percent.unwrap_or(0.0);
    let by_address = match (data.dedupe_by_address == Some(true) && dedupe_percent > 0.0, working_set_units) {
        (true, Some(sets)) => Some(by_address(spec, data_set.0 / unit_bytes, sets, dedupe_percent)?),
        _ => None,
    };
    Ok(Some(DataShape {
        dedupe_percent,
        unit,
        working_set_units,
        global: (data.dedupe_global == Some(true)).then_some(GlobalSet { first: 0, workers: 0 }),
        compress_percent: data.compress_percent.unwrap_or(0.0),
        compress_chunk: data.compress_chunk.map_or(COMPRESS_CHUNK, |c| c.0 as u32),
        pattern: data.pattern.as_deref().map(Pattern::new),
        by_address,
    }))
}

/// vdbench's shares (Dedup.adjustSdDedupValue): of `units` addresses, `copies` % hold copies and the `sets`
/// are among them, so the unique share is what is left once the sets are taken out, and the ratio written is
/// units / (uniques + sets) = 100 / (100 − copies).
fn by_address(spec: &PhaseSpec, units: u64, sets: u64, copies: f64) -> Result<ByAddress, String> {
    let copied = units as f64 * copies / 100.0;
    if sets as f64 > copied {
        return Err(format!(
            "data.dedupe-by-address: {sets} sets are more than the {copied:.0} units that hold copies (of {units}): \
             give fewer sets or a larger data set (vdbench: more dedupsets than non-unique data blocks)"
        ));
    }
    let unique_percent = (100.0 - copies - 100.0 * sets as f64 / units.max(1) as f64).max(0.0);
    Ok(ByAddress { unique_percent, seed: spec.seed.unwrap_or(crate::defaults::SEED) })
}

/// The shape of a file-set phase's writes (format and workloads): every workload's transfer sizes must be whole
/// units; the working set is a share of all its trees' bytes. A global set (shared by the workers of several
/// phases) is refused: file-set threads are not numbered across phases.
pub(super) fn fileset_data_shape(spec: &PhaseSpec, plan: &super::FileSetPlan) -> Result<Option<DataShape>, String> {
    if spec.data.as_ref().is_some_and(|d| d.dedupe_global == Some(true)) {
        return Err("data.dedupe-global applies to raw phases; a file-set phase's threads share no working set \
                    across phases: remove it"
            .into());
    }
    let data_set = Bytes(plan.trees.iter().map(|t| t.bytes.0).sum());
    let mut shape = None;
    for w in &plan.workloads {
        shape = shape.or(data_shape(spec, data_set, &w.xfer)?);
    }
    match shape {
        Some(shape) => Ok(Some(shape)),
        // Only the format step writes: its units are whole dedupe units (`run::fileset::format`).
        None => {
            let unit = spec.data.as_ref().and_then(|d| d.dedupe_unit).map_or(4096, |u| u.0 as u32);
            data_shape(spec, data_set, &BlockSizes::Fixed { size: unit })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::DataSpec;

    fn spec(data: DataSpec) -> PhaseSpec {
        PhaseSpec { data: Some(data), ..Default::default() }
    }

    #[test]
    fn a_working_set_is_a_share_of_the_data_set_in_units() {
        let data = DataSpec { dedupe_percent: Some(50.0), dedupe_working_set: Some(5.0), ..Default::default() };
        let shape = data_shape(&spec(data), Bytes(100 << 20), &BlockSizes::Fixed { size: 4096 }).unwrap().unwrap();
        assert_eq!(shape.working_set_units, Some(1280));
        assert_eq!((shape.unit, shape.compress_chunk), (None, 512));
        // vdbench dedupsets=N: a count of units, whatever the data set.
        let data = DataSpec { dedupe_percent: Some(50.0), dedupe_sets: Some(7), ..Default::default() };
        let shape = data_shape(&spec(data), Bytes(100 << 20), &BlockSizes::Fixed { size: 4096 }).unwrap().unwrap();
        assert_eq!(shape.working_set_units, Some(7));
    }

    #[test]
    fn writes_must_hold_whole_units_and_an_unshaped_spec_plans_nothing() {
        let data = DataSpec { dedupe_percent: Some(50.0), dedupe_unit: Some(Bytes(8192)), ..Default::default() };
        let split = BlockSizes::Split { entries: vec![(8192, 1), (4096, 1)] };
        let err = data_shape(&spec(data), Bytes(1 << 20), &split).unwrap_err();
        assert!(err.contains("4.0 KiB") || err.contains("4 KiB"), "{err}");
        let none = DataSpec { dedupe_unit: Some(Bytes(4096)), ..Default::default() };
        assert_eq!(data_shape(&spec(none), Bytes(1 << 20), &split).unwrap(), None);
    }
}
