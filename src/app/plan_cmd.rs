//! `streamcap plan` (capacity planning with the `planning` model — not the plan *stage* of a run): reads the
//! drive catalogue and any results of single drives, builds the pools, asks `planning::plan` for the ranked
//! answers, prints them and writes the JSON. Bad input is an error (exit code 2) naming the file, line and key.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::output::print_quietly;
use crate::cli::{PlanArgs, PlanFormat};
use crate::planning::{
    self, Drive, Ingest, PlanRequest, Price, StreamDemand, StreamFormat, drive_from_result, parse_catalogue,
};
use crate::report::{Markdown, Ranked, Renderer, Summary, render_to_string};
use crate::results::{PhaseResultKind, read_result, rfc3339, write_json_atomically};
use crate::units::Bytes;

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    // Checked first: `--json c.toml` with `--drives c.toml` replaced the catalogue it read.
    let inputs: Vec<&Path> =
        args.drives.iter().chain(&args.drive_result).chain(&args.result).map(PathBuf::as_path).collect();
    super::outputs::check(&[("--json", args.json.as_deref())], &inputs, None)?;
    let drives = drives(&args)?;
    let counts: Vec<usize> = args.count.iter().map(|&c| c as usize).collect();
    // With only measured pools (--result) there is nothing to model.
    let pools = match drives.is_empty() {
        true => Vec::new(),
        false => planning::build_pools(&drives, args.pool.as_deref(), &counts)?,
    };
    let formats = args
        .mix
        .0
        .iter()
        .map(|(f, weight)| StreamFormat {
            name: f.name.clone(),
            label: f.label.clone(),
            bitrate: f.bitrate,
            weight: *weight,
        })
        .collect();
    let request = PlanRequest {
        pools,
        layouts: args.layouts.clone().map_or_else(|| planning::DEFAULT_LAYOUTS.to_vec(), |l| l.0),
        demand: StreamDemand {
            formats,
            chunk: args.chunk,
            reader_threads: args.reader_threads,
            ingest: args.ingest.map(|i| Ingest {
                rate: i.rate,
                writers: i.writers,
                request: Bytes(u64::from(crate::run::INGEST_WRITE)),
            }),
        },
        file: args.file_workload.clone().unwrap_or_default(),
        goal: args.optimize,
        rebuild_share: args.rebuild_share / 100.0,
        sequential_request: planning::defaults::SEQUENTIAL_REQUEST,
        data_set: args.data_set,
        controller: args.controller_cache,
    };
    let mut result = planning::plan(&request, std::env::args().collect(), rfc3339(std::time::SystemTime::now()))?;
    result.measured = measured(&args, &mut result.currency)?;
    if let Some(path) = &args.json {
        write_json_atomically(&result, path)?;
    }
    let renderer: &dyn Renderer<Ranked> = match args.format {
        PlanFormat::Terminal => &Summary,
        PlanFormat::Markdown => &Markdown,
    };
    print_quietly(&render_to_string(renderer, &Ranked { result: &result, top: args.top }));
    Ok(ExitCode::SUCCESS)
}

/// The catalogue's drives, then one per `--drive-result`.
fn drives(args: &PlanArgs) -> Result<Vec<Drive>> {
    let mut drives = Vec::new();
    if let Some(path) = &args.drives {
        drives = read_catalogue(path)?;
    }
    if args.price.len() > args.drive_result.len() + args.result.len() {
        bail!(
            "{} --price given for {} --drive-result and {} --result: give one price per result, in order",
            args.price.len(),
            args.drive_result.len(),
            args.result.len()
        );
    }
    for (i, path) in args.drive_result.iter().enumerate() {
        let result = read_result(path)?;
        let price = args.price.get(i).map(|p| parse_price(p)).transpose()?;
        let name = path.file_stem().map_or("measured".into(), |s| s.to_string_lossy().to_string());
        drives
            .push(drive_from_result(&name, &result, price).with_context(|| format!("{}", Path::new(path).display()))?);
        // Figures a cache served describe no drive: said, and left out of the model.
        for phase in result.phases.iter().filter(|p| matches!(p.kind(), PhaseResultKind::Raw)) {
            if let Some(why) = planning::cache_served(phase) {
                super::output::say(&format!(
                    "note: {}: '{}' {why}; left out of the drive's model",
                    Path::new(path).display(),
                    phase.name
                ));
            }
        }
    }
    if drives.is_empty() && args.result.is_empty() {
        bail!(
            "no drives to plan with: give a drive catalogue (--drives examples/drives.toml) or a result of one drive (--drive-result R.json)"
        );
    }
    Ok(drives)
}

/// Each `--result` pool as measured, priced by the `--price` values after the drive results'; the prices share
/// the plan's currency (set here when the plan has none).
fn measured(args: &PlanArgs, currency: &mut Option<String>) -> Result<Vec<crate::results::MeasuredPool>> {
    let mut pools = Vec::new();
    for (i, path) in args.result.iter().enumerate() {
        let result = read_result(path)?;
        let price = args.price.get(args.drive_result.len() + i).map(|p| parse_price(p)).transpose()?;
        if let Some(p) = &price {
            match currency {
                Some(c) if *c != p.currency => bail!(
                    "--price {} {} for {} is not in the plan's currency ({c}): give every price in one currency",
                    p.amount,
                    p.currency,
                    path.display()
                ),
                Some(_) => {}
                None => *currency = Some(p.currency.clone()),
            }
        }
        let name = path.file_stem().map_or("measured".into(), |s| s.to_string_lossy().to_string());
        pools.push(planning::measured::measured(&name, &result, price.map(|p| p.amount)));
    }
    Ok(pools)
}

/// The drives of a catalogue file, read with the cap every input file has (`limits::read_text_file`: a device
/// such as /dev/zero or a huge file ends at once with a message).
pub(super) fn read_catalogue(path: &Path) -> Result<Vec<Drive>> {
    let text = crate::limits::read_text_file(path, crate::limits::MAX_INPUT_FILE_BYTES)
        .with_context(|| format!("cannot read the drive catalogue {}", path.display()))?;
    Ok(parse_catalogue(path, &text)?)
}

fn parse_price(text: &str) -> Result<Price> {
    let (amount, currency) = planning::catalogue::parse_price(text)
        .with_context(|| format!("--price {text}: give an amount and a currency, e.g. \"389 USD\""))?;
    Ok(Price { amount, currency: currency.to_ascii_uppercase() })
}
