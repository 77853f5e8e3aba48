//! An rd's for-loops on raw workloads: one combination of loop values applied to every workload generator of
//! the rd (vdbench's `forxfersize`, `forthreads`, `forrdpct` and `forseekpct` override every wd and sd of the
//! run) and to its rate (`foriorate`).

use super::super::expand::Loop;
use super::raw_wd::RawRun;
use super::timing::{Rate, rate_of};
use super::words::{bytes, loop_err, loop_num, seekpct};
use crate::spec::BlockSizeSpec;
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::Record;
use crate::spec::vdbench::values::Item;

/// Applies one combination (one value per loop) to the generators and the rate.
pub(super) fn apply(
    loops: &[Loop],
    combination: &[Item],
    rd: &Record,
    runs: &mut [RawRun],
    rate: &mut Option<Rate>,
) -> Result<(), VdbError> {
    for (l, item) in loops.iter().zip(combination) {
        match l.keyword {
            "forxfersize" => {
                let b = bytes(loop_num(l, item, rd)?).map_err(|m| loop_err(l, rd, m))?;
                for run in runs.iter_mut() {
                    run.xfer = BlockSizeSpec::Fixed(b);
                    run.align = None;
                }
            }
            "forthreads" => {
                let v = loop_num(l, item, rd)?;
                if v < 1.0 || v.fract() != 0.0 || v > 4096.0 {
                    return Err(loop_err(l, rd, format!("{v} is not a thread count from 1 to 4096")));
                }
                runs.iter_mut().for_each(|run| run.threads = super::concat::per_host(v as u32, run.thread_hosts));
            }
            "forrdpct" => {
                let v = loop_num(l, item, rd)?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(loop_err(l, rd, format!("{v} is not a percentage")));
                }
                runs.iter_mut().for_each(|run| run.rdpct = v.round() as u8);
            }
            "forseekpct" => {
                let seek = seekpct(item).map_err(|m| loop_err(l, rd, m))?;
                runs.iter_mut().for_each(|run| (run.seek, run.eof) = (seek.percent, seek.eof));
            }
            // The phase's data, read by `data::loop_compression`.
            "forcompratio" => {}
            "foriorate" => {
                *rate =
                    Some(rate_of(item).ok_or_else(|| {
                        loop_err(l, rd, format!("'{}': expected max, curve or a rate", item.display()))
                    })?)
            }
            other => {
                return Err(loop_err(
                    l,
                    rd,
                    format!("{other} does not apply to a raw workload or is not supported yet"),
                ));
            }
        }
    }
    Ok(())
}
