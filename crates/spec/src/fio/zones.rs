//! fio's zonemode=strided (zonesize, zonerange, zoneskip) onto `strided`. As fio does, a zonesize without a
//! zonemode means strided, and zonerange defaults to zonesize. zonemode=zbd needs a zoned block device and is
//! refused; so is strided with random I/O, which fio confines to each zone in turn and streamcap does not.

use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use super::values::FioSize;
use crate::spec::{PhaseSpec, StridedSpec};
use crate::units::Bytes;

pub(super) fn map_zones(job: &Job, phase: &mut PhaseSpec) -> Result<(), OptionError> {
    let o = &job.options;
    let bytes = |name: &str| match o.size(name) {
        Some(FioSize::Bytes(b)) => Some(Bytes(b)),
        _ => None,
    };
    let mode = o.get("zonemode").map(|s| (s, s.raw.trim().to_ascii_lowercase()));
    match mode.as_ref().map(|(s, m)| (*s, m.as_str())) {
        Some((_, "none")) => return Ok(()),
        None if bytes("zonesize").is_none_or(|b| b.0 == 0) => return Ok(()),
        None | Some((_, "strided")) => {}
        Some((said, other)) => {
            let why = match other {
                "zbd" => "zonemode=zbd needs a zoned block device, which streamcap does not drive; remove the zone \
                          options"
                    .to_string(),
                _ => format!("'{other}' is not a zone mode; expected none, strided or zbd"),
            };
            return Err(fail(said, "zonemode", why));
        }
    }
    let Some(size) = bytes("zonesize").filter(|b| b.0 > 0) else {
        let said = o.get("zonemode").expect("a mode was said");
        return Err(fail(said, "zonemode", "strided needs zonesize (the bytes transferred in each zone)"));
    };
    phase.fio.strided = Some(StridedSpec {
        size,
        range: bytes("zonerange").filter(|b| b.0 > 0),
        skip: bytes("zoneskip").unwrap_or_default(),
    });
    Ok(())
}
