//! `streamcap trial DEV… --layouts …`: the experiment people run by hand when they build a NAS. On blank
//! devices only (`safety`: every device passes `run`'s device checks, and the user has seen what will be
//! destroyed), for each layout in turn: build it with btrfs over all the devices (`pool`), measure it through
//! the one path (`measure`), unmount and wipe it; then the comparison with the planner's prediction for the
//! same drives (`predict`; drives from a `--drives` catalogue entry, or the first device measured alone).
//!
//! Ctrl-C tears down whatever is built (unmount, wipefs) and keeps the partial table (exit 130). The JSON
//! (`--json`, schema `streamcap.trial`) is rewritten after every layout. Bad input and devices that fail a check
//! are exit 2 with nothing touched.

mod measure;
mod pool;
mod predict;
mod safety;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::output::{print_quietly, say};
use crate::cli::TrialArgs;
use crate::planning::{Drive, Layout, drive_from_result};
use crate::report::{Summary, render_to_string};
use crate::results::{TRIAL_SCHEMA, TRIAL_SCHEMA_VERSION, ToolInfo, TrialLayout, TrialResult, rfc3339};
use crate::run::{INTERRUPTED_EXIT, Interrupt};
use measure::{Settings, figures, layout_job, problem};
use pool::Pool;

pub fn run(args: TrialArgs) -> Result<ExitCode> {
    let settings = Settings {
        size: args.size,
        runtime: args.runtime,
        format: args.format.clone(),
        chunk: args.chunk,
        engine: args.engine,
    };
    measure::check_runtime(&settings)?;
    let layouts = layouts(&args.layouts.0, args.devices.len())?;
    let inputs: Vec<&std::path::Path> = args.drives.iter().chain(&args.devices).map(PathBuf::as_path).collect();
    super::outputs::check(&[("--json", args.json.as_deref())], &inputs, None)?;
    let catalogue = args.drives.as_ref().map(|p| predict::catalogue_drive(p, args.drive.as_deref())).transpose()?;
    pool::check_tools()?;
    // Held to the end of the trial (also through Ctrl-C and the teardown of a layout).
    let _locks = safety::lock_devices(&args.devices)?;
    let checked = safety::check_devices(&args.devices, args.allow_device_writes)?;
    let names: Vec<&str> = layouts.iter().map(|l| l.name()).collect();
    let what = format!(
        "It builds {} over all {} devices in turn (mkfs.btrfs), measures each for about {} s{}, and wipes the \
         signatures it wrote (wipefs -a) after each.",
        names.join(", then "),
        args.devices.len(),
        (args.runtime * 30).as_secs(),
        if catalogue.is_none() {
            "; first it writes to and reads from the first device alone to model the drive"
        } else {
            ""
        }
    );
    safety::confirm(&checked, &what, args.yes)?;
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let drive = match catalogue {
        Some(d) => d,
        None => match measure_drive(&args.devices[0], &settings, &interrupt, args.quiet)? {
            Some(d) => d,
            None => {
                say("Interrupted before any layout was built; the first device was wiped.");
                return Ok(ExitCode::from(INTERRUPTED_EXIT as u8));
            }
        },
    };
    let first = predict::predict(&drive, layouts[0], args.devices.len(), &settings)?;
    let mut result = TrialResult {
        schema: TRIAL_SCHEMA.into(),
        schema_version: TRIAL_SCHEMA_VERSION,
        tool: ToolInfo::current(),
        command: std::env::args().collect(),
        created_at: rfc3339(std::time::SystemTime::now()),
        devices: checked.into_iter().map(|c| c.device).collect(),
        drive: first.drive,
        format: settings.format.name.clone(),
        bitrate_bps: settings.format.bitrate.bits_per_sec(),
        chunk_bytes: args.chunk.0,
        interrupted: false,
        layouts: Vec::new(),
    };
    let outcome = trial_layouts(&args, &layouts, &drive, &settings, &interrupt, &mut result);
    finish(&args, &mut result, outcome)
}

/// The btrfs layouts asked for, each buildable from `n` devices; otherwise exit 2 saying why.
fn layouts(asked: &[Layout], n: usize) -> Result<Vec<Layout>> {
    let mut out = Vec::new();
    for &layout in asked {
        let Some(built) = pool::btrfs_layout(layout) else {
            bail!(
                "trial builds its layouts with btrfs and cannot build {layout}; choose among single, mirror, mirror3, raid10, parity (raid5) and raid6"
            );
        };
        if let Some(why) = built.refuses(n) {
            bail!("{layout} (built as {built}) {why}, and {n} devices were given");
        }
        if !out.contains(&built) {
            out.push(built);
        }
    }
    Ok(out)
}

/// Measures the first device alone and models the drive from it; `None` when Ctrl-C stopped it. The device is
/// wiped afterwards in every outcome.
fn measure_drive(device: &PathBuf, settings: &Settings, interrupt: &Interrupt, quiet: bool) -> Result<Option<Drive>> {
    if !quiet {
        say(&format!("modelling the drive: measuring {} alone", device.display()));
    }
    let measured = measure::measure(device, &measure::drive_job(settings), interrupt, quiet);
    pool::wipe(std::slice::from_ref(device))?;
    let measured = measured?;
    if interrupt.is_set() {
        return Ok(None);
    }
    let name = device.file_name().map_or("device".into(), |n| n.to_string_lossy().to_string());
    let drive = drive_from_result(&name, &measured, None)?;
    // Which figures the predictions use, and what was corrected (a throttle, a rotational flag): always said.
    say(&format!("the drive as measured: {}", drive.source));
    Ok(Some(drive))
}

/// What went wrong while the layouts were tried: an error that left a device not blank stops the trial.
struct Outcome {
    failed: bool,
    teardown: Option<anyhow::Error>,
}

fn trial_layouts(
    args: &TrialArgs,
    layouts: &[Layout],
    drive: &Drive,
    settings: &Settings,
    interrupt: &Interrupt,
    result: &mut TrialResult,
) -> Outcome {
    let n = args.devices.len();
    let mut outcome = Outcome { failed: false, teardown: None };
    for (i, &layout) in layouts.iter().enumerate() {
        if interrupt.is_set() {
            break;
        }
        if !args.quiet {
            say(&format!(
                "[{}/{}] {} over {n} devices: building, measuring, wiping",
                i + 1,
                layouts.len(),
                layout.label()
            ));
        }
        let (entry, teardown) = trial_one(args, layout, drive, settings, interrupt);
        outcome.failed |= entry.status == "failed";
        result.layouts.push(entry);
        result.interrupted = interrupt.is_set();
        save(args, result);
        if let Some(e) = teardown {
            outcome.teardown = Some(e);
            break;
        }
    }
    outcome
}

/// Where the stream search stops: above anything the devices could serve, so that it brackets the real
/// capacity instead of stopping at a guess. No pool reads faster than all its members' sequential rates
/// together, so `n × read ÷ bitrate` streams is a ceiling (only a cache could pass it, and a step a cache served
/// does not count); twice the prediction when that is higher (a drive model that underrates the devices).
fn search_limit(predicted: u32, drive: &Drive, n: usize, settings: &Settings) -> u32 {
    let per_stream = settings.format.bitrate.byte_rate().bytes_per_sec().max(1.0);
    let ceiling = (drive.read.bytes_per_sec() * n as f64 / per_stream).ceil().min(f64::from(u32::MAX / 4)) as u32;
    ceiling.max(predicted.saturating_mul(2)).saturating_add(4)
}

/// Builds, measures and tears down one layout: its entry, and the teardown's error if the devices are not blank.
fn trial_one(
    args: &TrialArgs,
    layout: Layout,
    drive: &Drive,
    settings: &Settings,
    interrupt: &Interrupt,
) -> (TrialLayout, Option<anyhow::Error>) {
    let n = args.devices.len();
    let mut entry = TrialLayout {
        layout: layout.name().into(),
        label: layout.label(),
        members: n,
        status: "failed".into(),
        failure: None,
        figures: Vec::new(),
    };
    let prediction = match predict::predict(drive, layout, n, settings) {
        Ok(p) => p,
        Err(e) => {
            entry.failure = Some(format!("{e:#}"));
            return (entry, None);
        }
    };
    let pool = match Pool::build(layout, &args.devices) {
        Ok(pool) => pool,
        Err(e) => {
            entry.failure = Some(format!("{e:#}"));
            entry.status = if interrupt.is_set() { "interrupted" } else { "failed" }.into();
            return (entry, None);
        }
    };
    let limit = search_limit(prediction.many.streams, drive, n, settings);
    let measured = measure::measure(&pool.mount_point, &layout_job(settings, limit), interrupt, args.quiet);
    let teardown = pool.teardown().err();
    let measured = match measured {
        Ok(r) => r,
        Err(e) => {
            entry.failure = Some(format!("{e:#}"));
            return (entry, teardown);
        }
    };
    entry.figures = predict::rows(&prediction, &figures(&measured), &settings.format);
    entry.failure = problem(&measured);
    entry.status = if interrupt.is_set() {
        "interrupted"
    } else if entry.failure.is_some() {
        "failed"
    } else {
        "measured"
    }
    .into();
    (entry, teardown)
}

/// Rewrites the JSON (`--json -`: printed once, by `finish`).
fn save(args: &TrialArgs, result: &TrialResult) {
    if let Some(path) = args.json.as_ref().filter(|p| !crate::outfile::is_stdout(p)) {
        save_to(path, result);
    }
}

fn save_to(path: &std::path::Path, result: &TrialResult) {
    if let Err(e) = crate::results::write_json_atomically(result, path) {
        say(&format!("warning: cannot write {}: {e}", path.display()));
    }
}

/// Prints the table and picks the exit code.
fn finish(args: &TrialArgs, result: &mut TrialResult, outcome: Outcome) -> Result<ExitCode> {
    print_quietly(&render_to_string(&Summary, &*result));
    if let Some(path) = &args.json {
        save_to(path, result);
    }
    if let Some(e) = outcome.teardown {
        return Err(e.context("the trial stopped because a layout could not be taken down; the devices are NOT blank"));
    }
    Ok(if result.interrupted {
        ExitCode::from(INTERRUPTED_EXIT as u8)
    } else if outcome.failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_built_as_btrfs_and_refused_when_the_devices_cannot_make_them() {
        let asked = crate::planning::parse_layouts("mirror,raid10,parity,btrfs-raid1").unwrap();
        assert_eq!(layouts(&asked, 4).unwrap(), [Layout::BtrfsRaid1, Layout::BtrfsRaid10, Layout::BtrfsRaid5]);
        let err = layouts(&asked, 3).unwrap_err().to_string();
        assert!(err.contains("raid10") && err.contains("3 devices were given"), "{err}");
        let err = layouts(&[Layout::Raidz1], 4).unwrap_err().to_string();
        assert!(err.contains("cannot build raidz1"), "{err}");
    }

    /// Issue 28: the search stopped at twice the prediction and printed "≥". It now stops above what the
    /// devices could serve together.
    #[test]
    fn the_stream_search_goes_past_what_the_devices_could_serve() {
        let catalogue = "[[drive]]\nname = \"t\"\ncapacity = \"1GB\"\nread = \"30MB/s\"\nwrite = \"20MB/s\"\n\
                         rotational = false\nrandom_read_iops = 150\n";
        let drive = crate::planning::parse_catalogue(std::path::Path::new("t.toml"), catalogue).unwrap().remove(0);
        let settings = Settings {
            size: crate::units::Bytes(1 << 20),
            runtime: std::time::Duration::from_secs(2),
            format: "8Mbit/s".parse().unwrap(),
            chunk: crate::units::Bytes(256 << 10),
            engine: None,
        };
        // 4 × 30 MB/s ÷ 1 MB/s = 120 streams at most, whatever the prediction (30): the search goes to 124.
        assert_eq!(search_limit(30, &drive, 4, &settings), 124);
        // A prediction above the ceiling (a drive model that underrates the devices): twice it.
        assert_eq!(search_limit(100, &drive, 4, &settings), 204);
    }
}
