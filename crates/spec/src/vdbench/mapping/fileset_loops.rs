//! An rd's for-loops on file-system workloads: one combination of loop values applied to every fwd of the rd
//! (`forxfersize`, `forthreads`, `forrdpct`, `foroperations`, `forfileio`, `forfileselect`), every fsd
//! (`fordepth`, `forwidth`, `forfiles`, `forsizes`, `fortotalsize`) and its rate (`foriorate`).

use super::super::expand::Loop;
use super::timing::{Rate, rate_of};
use super::words::{bytes, file_io, file_select, loop_err, loop_num};
use crate::spec::BlockSizeSpec;
use crate::spec::fileset::{FileIo, FileOp, FileSizeSpec, FileTreeSpec, FileWorkloadSpec};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::Record;
use crate::spec::vdbench::values::Item;

/// Applies one combination (one value per loop) to the trees, the workloads and the rate.
pub(super) fn apply(
    loops: &[Loop],
    combination: &[Item],
    rd: &Record,
    (trees, workloads): (&mut [FileTreeSpec], &mut [FileWorkloadSpec]),
    rate: &mut Option<Rate>,
) -> Result<(), VdbError> {
    for (l, item) in loops.iter().zip(combination) {
        let num = || loop_num(l, item, rd);
        let count = |v: f64| -> Result<u64, VdbError> {
            if v.fract() != 0.0 || v > u32::MAX as f64 {
                return Err(loop_err(l, rd, format!("{v} is not a whole number")));
            }
            Ok(v as u64)
        };
        match l.keyword {
            "forxfersize" => {
                let b = bytes(num()?).map_err(|m| loop_err(l, rd, m))?;
                workloads.iter_mut().for_each(|w| w.xfersize = Some(BlockSizeSpec::Fixed(b)));
            }
            "forthreads" => {
                let t = count(num()?)?;
                if t == 0 || t > 4096 {
                    return Err(loop_err(l, rd, format!("{t} is not a thread count from 1 to 4096")));
                }
                workloads.iter_mut().for_each(|w| w.threads = Some(t as u32));
            }
            "forrdpct" => {
                let v = num()?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(loop_err(l, rd, format!("{v} is not a percentage")));
                }
                workloads.iter_mut().for_each(|w| w.rdpct = Some(v.round() as u8));
            }
            "fordepth" | "forwidth" | "forfiles" | "forsizes" | "fortotalsize" => {
                tree_loop(l, rd, num()?, trees, count)?;
            }
            // The phase's data, read by `data::loop_compression`.
            "forcompratio" => {}
            "foriorate" => {
                *rate =
                    Some(rate_of(item).ok_or_else(|| {
                        loop_err(l, rd, format!("'{}': expected max, curve or a rate", item.display()))
                    })?)
            }
            _ => word_loop(l, rd, &item.display(), workloads)?,
        }
    }
    Ok(())
}

/// Loops over the fsds' shape.
fn tree_loop(
    l: &Loop,
    rd: &Record,
    v: f64,
    trees: &mut [FileTreeSpec],
    count: impl Fn(f64) -> Result<u64, VdbError>,
) -> Result<(), VdbError> {
    match l.keyword {
        "fordepth" => {
            let v = count(v)? as u32;
            trees.iter_mut().for_each(|t| t.depth = v);
        }
        "forwidth" => {
            let v = count(v)? as u32;
            trees.iter_mut().for_each(|t| t.width = v);
        }
        "forfiles" => {
            let v = count(v)?;
            trees.iter_mut().for_each(|t| t.files = v);
        }
        "forsizes" => {
            let b = bytes(v).map_err(|m| loop_err(l, rd, m))?;
            trees.iter_mut().for_each(|t| t.size = FileSizeSpec::Fixed(b));
        }
        _ => {
            let b = bytes(v).map_err(|m| loop_err(l, rd, m))?;
            trees.iter_mut().for_each(|t| t.total_size = Some(b));
        }
    }
    Ok(())
}

/// Loops whose values are words: operations, fileio, fileselect.
fn word_loop(l: &Loop, rd: &Record, word: &str, workloads: &mut [FileWorkloadSpec]) -> Result<(), VdbError> {
    match l.keyword {
        "foroperations" => {
            let op = word.parse::<FileOp>().map_err(|e| loop_err(l, rd, e.to_string()))?;
            workloads.iter_mut().for_each(|w| w.operation = Some(op));
        }
        "forfileio" => {
            let (io, _) = file_io(&[word.to_string()]).map_err(|m| loop_err(l, rd, m))?;
            // Sharing comes with random I/O only (fileio=(random,shared)): a sequential pass stops it.
            workloads.iter_mut().for_each(|w| {
                w.fileio = Some(io);
                w.shared = w.shared.filter(|_| io == FileIo::Random);
            });
        }
        "forfileselect" => {
            let select = file_select(&[word.to_string()]).map_err(|m| loop_err(l, rd, m))?;
            workloads.iter_mut().for_each(|w| w.fileselect = Some(select));
        }
        other => {
            return Err(loop_err(
                l,
                rd,
                format!("{other} does not apply to a file-system workload or is not supported yet"),
            ));
        }
    }
    Ok(())
}
