//! What a fio job reads and writes, and where: `rw` with fio's offset modifiers (`rw=read:-8k` steps backwards,
//! `rw=write:4k` leaves holes, `rw=randread:8` takes a new random offset every 8 operations, `rw_sequencer`
//! says what the ones between do), block sizes (`bs`, `bsrange`, `bssplit`, per direction) and
//! `random_distribution` (including fio's `zoned` and `zoned_abs`).

use super::job::fail;
use super::mapping::Job;
use super::options::{JobOptions, OptionError, Said, Value};
use super::values::{FioSize, KbBase, PerDirection, parse_size_or_percent};
use crate::spec::{BlockSizeSpec, ByteStep, DistributionSpec, PhaseSpec, RwMode, Sequencer, ZoneExtent};
use crate::units::{Bytes, Share};

/// rw (with its `:N` modifier) and rw_sequencer → mode and offset pattern.
pub(super) fn map_rw(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<RwMode, OptionError> {
    let o = &job.options;
    let Some(said) = o.get("rw") else {
        phase.rw = Some(RwMode::Read);
        return Ok(RwMode::Read);
    };
    let expected = "read, write, randread, randwrite, rw (readwrite) or randrw, optionally with :N";
    let (mode, suffix) = said.raw.split_once(':').map_or((said.raw.as_str(), None), |(m, s)| (m, Some(s)));
    let mode = mode.trim().to_ascii_lowercase();
    if mode.contains("trim") {
        return Err(fail(said, "rw", format!("'{}': streamcap does not issue trims; expected {expected}", said.raw)));
    }
    let rw: RwMode = mode
        .parse()
        .map_err(|_| fail(said, "rw", format!("'{}' is not an I/O pattern; expected {expected}", said.raw)))?;
    phase.rw = Some(rw);
    if let Some(suffix) = suffix {
        if rw.is_random() {
            let n: u32 = suffix.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                fail(
                    said,
                    "rw",
                    format!("'{}': after ':' a random mode takes a count above 0, as in randread:8", said.raw),
                )
            })?;
            phase.fio.random_every = (n > 1).then_some(n);
        } else {
            // fio adds the value (a size, negative to go backwards) to each sequential offset.
            let (negative, magnitude) = suffix.trim().strip_prefix('-').map_or((false, suffix.trim()), |m| (true, m));
            let step = match parse_size_or_percent(magnitude, o.base, false) {
                Ok(FioSize::Bytes(b)) => i64::try_from(b).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                fail(
                    said,
                    "rw",
                    format!("'{}': after ':' a sequential mode takes a size, as in write:4k or read:-8k", said.raw),
                )
            })?;
            phase.fio.offset_step = (step != 0).then_some(ByteStep(if negative { -step } else { step }));
        }
    }
    if let Some(said) = o.get("rw_sequencer") {
        let sequencer: Sequencer = said
            .raw
            .parse()
            .map_err(|_| fail(said, "rw_sequencer", format!("'{}': expected sequential or identical", said.raw)))?;
        if phase.fio.random_every.is_some() {
            phase.fio.sequencer = Some(sequencer);
        } else if sequencer == Sequencer::Identical {
            notices.push(format!(
                "job '{}': rw_sequencer=identical changes nothing without an offset modifier such as randread:8",
                job.name
            ));
        }
    }
    Ok(rw)
}

/// The value for the directions the mode uses: refused when a mixed mode gives reads and writes different ones.
pub(super) fn one_direction(
    values: Option<&PerDirection<u64>>,
    rw: RwMode,
    said: &Said,
    option: &str,
) -> Result<Option<u64>, OptionError> {
    let values = values.expect("the option was said with a per-direction value");
    match (rw.read_percent(Some(50)), values.read, values.write) {
        (100, r, _) => Ok(r),
        (0, _, w) => Ok(w),
        (_, r, w) if r == w => Ok(r),
        _ => Err(fail(
            said,
            option,
            format!(
                "'{}': different values for reads and writes in a mixed job are not supported yet; give one value",
                said.raw
            ),
        )),
    }
}

/// fio's block size when a job gives none for a direction.
const FIO_DEFAULT_BS: u64 = 4096;

/// Block sizes of reads, and of writes when a mixed job gives them apart (`bs=4k,64k`).
type DirectedSizes = (Option<BlockSizeSpec>, Option<BlockSizeSpec>);

/// bssplit, else bsrange, else bs (fio's order of precedence).
pub(super) fn map_block_sizes(o: &JobOptions, rw: RwMode) -> Result<DirectedSizes, OptionError> {
    if let Some(said) = o.get("bssplit") {
        let Value::Splits(v) = &said.value else { unreachable!("bssplit parses to splits") };
        let convert = |s: &Option<Vec<(u64, Option<u32>)>>| {
            s.as_ref()
                .map(|e| BlockSizeSpec::Split(e.iter().map(|(b, w)| (Bytes(*b), w.map(Share::percent))).collect()))
        };
        let spec = pick(rw, (convert(&v.read), convert(&v.write)), o.base, said, "bssplit")?;
        for side in [&spec.0, &spec.1] {
            if let Some(BlockSizeSpec::Split(entries)) = side {
                BlockSizeSpec::split_weights(entries)
                    .map_err(|why| fail(said, "bssplit", format!("'{}': {why}", said.raw)))?;
            }
        }
        return Ok(spec);
    }
    if let Some(said) = o.get("bsrange") {
        let Value::Ranges(v) = &said.value else { unreachable!("bsrange parses to ranges") };
        let convert = |r: Option<(u64, u64)>| {
            r.map(
                |(a, b)| if a == b { BlockSizeSpec::Fixed(Bytes(a)) } else { BlockSizeSpec::Range(Bytes(a), Bytes(b)) },
            )
        };
        return pick(rw, (convert(v.read), convert(v.write)), o.base, said, "bsrange");
    }
    if let Some(said) = o.get("bs") {
        let v = o.per_direction("bs").expect("bs parses to sizes");
        if v.read == Some(0) || v.write == Some(0) {
            return Err(fail(said, "bs", format!("'{}': a block size must be above zero", said.raw)));
        }
        let fixed = |b: Option<u64>| b.map(|b| BlockSizeSpec::Fixed(Bytes(b)));
        return pick(rw, (fixed(v.read), fixed(v.write)), o.base, said, "bs");
    }
    Ok((None, None))
}

/// The sizes of the directions the mode uses. Under `kb_base=1000` a size in `k` (`bs=4k`: 4,000 bytes) is
/// refused unless it is a whole number of 512-byte sectors: fio issues 4,000-byte reads with buffered I/O, but
/// streamcap's offsets are whole sectors (4 KiB with direct I/O, where fio's reads of 4,000 bytes fail too).
fn pick(
    rw: RwMode,
    (read, write): DirectedSizes,
    base: KbBase,
    said: &Said,
    option: &str,
) -> Result<DirectedSizes, OptionError> {
    if base == KbBase::Decimal
        && let Some(odd) = [&read, &write].into_iter().flatten().flat_map(sizes_of).find(|b| b.0 % SECTOR != 0)
    {
        return Err(fail(
            said,
            option,
            format!(
                "'{}' is {} bytes under kb_base=1000, not a whole number of 512-byte sectors, which streamcap's \
                 offsets are (fio takes it for buffered I/O only); give sizes in KiB (bs=4KiB is 4,096 bytes \
                 under kb_base=1000) or in bytes that are a multiple of 512, or drop kb_base=1000",
                said.raw, odd.0
            ),
        ));
    }
    match (rw.read_percent(Some(50)), read, write) {
        (100, r, _) => Ok((r, None)),
        (0, _, w) => Ok((w, None)),
        (_, r, w) if r == w => Ok((r, None)),
        (_, Some(r), Some(w)) => Ok((Some(r), Some(w))),
        // An empty entry is fio's default block size for that direction.
        (_, None, Some(w)) => Ok((Some(BlockSizeSpec::Fixed(Bytes(FIO_DEFAULT_BS))), Some(w))),
        (_, Some(r), None) => Ok((Some(r), Some(BlockSizeSpec::Fixed(Bytes(FIO_DEFAULT_BS))))),
        _ => Err(fail(
            said,
            option,
            format!("'{}': give the block size of both directions (e.g. 4k,64k) or one for both", said.raw),
        )),
    }
}

/// random_distribution: random, zipf:θ, pareto:h, normal:σ (gauss), zoned:… and zoned_abs:… (sizes under the
/// job's kb_base).
pub(super) fn distribution(said: &Said, base: KbBase) -> Result<DistributionSpec, OptionError> {
    let text = said.raw.trim().to_ascii_lowercase();
    let option = "random_distribution";
    if let Some((name @ ("zoned" | "zoned_abs"), zones)) = text.split_once(':') {
        let mut directions = zones.split(',').map(str::trim).filter(|d| !d.is_empty());
        let first = directions.next().unwrap_or("");
        if directions.any(|d| d != first) {
            return Err(fail(said, option, "different zones for reads and writes are not supported; give one list"));
        }
        return zoned(first, name == "zoned_abs", base)
            .map_err(|why| fail(said, option, format!("'{}': {why}", said.raw)));
    }
    let expected = "random, zipf:θ, pareto:h, normal:σ (σ in % of the data set), zoned:… or zoned_abs:…";
    if text.matches(':').count() > 1 {
        return Err(fail(said, option, format!("'{}': a centre for the distribution is not supported", said.raw)));
    }
    let not_fio = || fail(said, option, format!("'{}' is not a distribution; expected {expected}", said.raw));
    match text.replace("gauss", "normal").parse().map_err(|_| not_fio())? {
        // vdbench's words, which the same parser reads for flags and TOML, are no fio distribution.
        DistributionSpec::Hotband | DistributionSpec::Poisson(_) => Err(not_fio()),
        spec => Ok(spec),
    }
}

/// `60/10:30/20:10/` or `…:10` (percent of the file) or `60/20g:40/100g` (fio sizes), completed as fio
/// completes them.
fn zoned(text: &str, absolute: bool, base: KbBase) -> Result<DistributionSpec, String> {
    let mut raw = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        // fio reads a zone without '/' as one without a size: under zoned, one that takes what the others leave
        // (as `20/` does); under zoned_abs, a zone of 0 bytes, which is a mistake more than a wish.
        let (access, size) = match part.split_once('/') {
            Some(pair) => pair,
            None if !absolute => (part, ""),
            None => return Err(format!("'{part}' has no size: give each zone as access%/size (e.g. {part}/10g)")),
        };
        let percent = |t: &str| t.trim().parse::<f64>().map_err(|_| format!("'{t}' is not a percentage"));
        let access = if access.trim().is_empty() { None } else { Some(percent(access)?) };
        let size = match size.trim() {
            "" => None,
            s if absolute => match parse_size_or_percent(s, base, false) {
                Ok(FioSize::Bytes(b)) => Some(ZoneExtent::Bytes(Bytes(b))),
                _ => return Err(format!("'{s}' is not a size")),
            },
            s => Some(ZoneExtent::Percent(percent(s)?)),
        };
        raw.push((access, size));
    }
    DistributionSpec::zones(&raw)
}

/// The smallest unit of streamcap's offsets (`plan::defaults::BUFFERED_ALIGN`).
const SECTOR: u64 = 512;

/// Every size a block-size spec names (a range by its ends: its steps are multiples of its smaller end).
fn sizes_of(spec: &BlockSizeSpec) -> Vec<Bytes> {
    match spec {
        BlockSizeSpec::Fixed(b) => vec![*b],
        BlockSizeSpec::Range(low, high) => vec![*low, *high],
        BlockSizeSpec::Split(entries) => entries.iter().map(|(b, _)| *b).collect(),
    }
}
