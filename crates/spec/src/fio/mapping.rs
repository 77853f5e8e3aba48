//! From the sections of a fio file to a `JobSpec`: one phase per job section, in file order; which `[global]`
//! applies to which job; the engine of each job, looked at first; when jobs start (stonewall, wait_for) and how
//! they are reported (groups); and the notices. Every problem is recorded and mapping goes on, so that one pass
//! finds them all.
//!
//! The conversions that are not one-to-one, and why:
//! - fio jobs start together unless `stonewall` (or `wait_for`) says otherwise: a job without it runs
//!   `concurrent` with the phase before it.
//! - Reporting groups start at every `stonewall` and `new_group`, as fio numbers them; every phase carries its
//!   fio group and job name so that fio's JSON comes out as fio forms it.
//! - A job whose engine streamcap does not run is reported once, for its engine; its other options (often that
//!   engine's own) are not looked at.
//!
//! Must not: read files or the environment (the reader did), or decide anything the planner decides.

use std::path::{Path, PathBuf};

use super::control::job_controls;
use super::devices::{Targets, check_mappings, check_ordered, place_job};
use super::engines::{EngineUse, classify};
use super::files::within_file_budget;
use super::ini::{Entry, Location, Section};
use super::job::map_job;
use super::options::{JobOptions, OptionError, Problems};
use crate::spec::{EngineChoice, FioJobInfo, JobSpec, PhaseSpec, SpecOrigin};

/// One job section with its effective options.
pub(super) struct Job {
    pub name: String,
    pub at: Location,
    pub options: JobOptions,
    pub engine: EngineUse,
    /// The options said in the job's own section, in order (fio's "job options" in its JSON).
    pub own: Vec<(String, String)>,
}

/// Options as fio lists them in its JSON: fio's name for each, and the value as written (after `${VAR}` and
/// keyword substitution); bare flags (`time_based`, `stonewall`) are not listed, as fio does not list them.
fn listed(entries: &[Entry]) -> Vec<(String, String)> {
    entries.iter().filter_map(|e| e.value.clone().map(|v| (canonical_name(&e.key), v))).collect()
}

/// What mapping one job gives.
pub(super) struct Mapped {
    pub phase: PhaseSpec,
    pub target: Option<PathBuf>,
    pub interval: Option<std::time::Duration>,
}

/// Turns the sections of a fio file into a job, recording every problem.
pub fn map_sections(path: &Path, sections: &[Section], targets: &Targets, problems: &mut Problems) -> Option<JobSpec> {
    let (global, jobs) = read_jobs(sections, problems);
    refuse_without_jobs(path, sections, problems);
    let mut spec = JobSpec {
        origin: SpecOrigin::Fio { path: path.to_path_buf() },
        target: None,
        interval: None,
        phases: Vec::new(),
        notices: Vec::new(),
    };
    let single = jobs.len() == 1;
    let mut named_files = 0;
    let mut named_devices = Vec::new();
    for (index, job) in jobs.iter().enumerate() {
        if problems.take(within_file_budget(job, &mut named_files)).is_none() {
            continue;
        }
        let Some(mut mapped) = map_job(job, single, &mut spec.notices, problems) else { continue };
        let placed = (&mut spec, &mut named_devices);
        place_job(placed, (job, mapped.target), &mut mapped.phase, targets, problems);
        if let Some(interval) = mapped.interval {
            spec.interval = Some(spec.interval.map_or(interval, |i| i.min(interval)));
        }
        let mut phase = mapped.phase;
        phase.concurrent = problems.take(concurrency(&jobs, index, &mut spec.notices)).flatten();
        spec.phases.push(phase);
    }
    if !targets.devices.is_empty() {
        check_mappings(path, &named_devices, targets.devices, problems);
        super::devices_onto::check_onto(path, targets.devices, problems);
    }
    check_ordered(path, &named_devices, targets.ordered, problems);
    let by_order = named_devices.iter().zip(targets.ordered).map(|(n, t)| (n.display().to_string(), t.clone()));
    super::devices_onto::check_onto(path, &by_order.collect::<Vec<_>>(), problems);
    inherit_fill(&mut spec.phases, &mut spec.notices);
    let controls = job_controls(&jobs, problems);
    if !problems.is_empty() {
        return None;
    }
    assign_groups(&jobs, &mut spec.phases, &listed(&global));
    super::steady::check_groups(&jobs, &spec.phases, problems);
    if !problems.is_empty() {
        return None;
    }
    for (phase, controls) in spec.phases.iter_mut().zip(controls) {
        if let Some(fio) = phase.fio.info.as_mut() {
            (fio.exit_all, fio.flow, fio.cmdprio) = (controls.exit_all, controls.flow, controls.cmdprio);
            (fio.latency_target, fio.exit_on_error) = (controls.latency_target, controls.exit_on_error);
        }
    }
    global_notices(&jobs, &mut spec.notices);
    Some(spec)
}

/// The job sections, each with the `[global]` entries before it; and all the `[global]` entries.
fn read_jobs(sections: &[Section], problems: &mut Problems) -> (Vec<Entry>, Vec<Job>) {
    let mut global: Vec<Entry> = Vec::new();
    let mut jobs = Vec::new();
    for section in sections {
        if section.is_global() {
            // A [global] applies to the jobs after it, on top of any earlier [global].
            global.extend(section.entries.iter().cloned());
            continue;
        }
        if let Some(job) = read_job(&global, section, problems) {
            jobs.push(job);
        }
    }
    (global, jobs)
}

/// fio gives a job without a size the size of the files it finds: a job with none on the files an earlier job
/// fills (fill_device) works on all of them too, as surface-scan's verify phase reads what its write phase wrote.
fn inherit_fill(phases: &mut [PhaseSpec], notices: &mut Vec<String>) {
    for i in 0..phases.len() {
        let (earlier, rest) = phases.split_at_mut(i);
        let phase = &mut rest[0];
        if phase.size.is_some() || phase.fill_device.is_some() || phase.file_names.is_none() {
            continue;
        }
        if earlier.iter().any(|p| p.fill_device == Some(true) && p.file_names == phase.file_names) {
            phase.fill_device = Some(true);
            let name = phase.name.as_deref().unwrap_or_default();
            notices.retain(|n| !n.starts_with(&format!("job '{name}' gives no size")));
        }
    }
}

/// A job's options from the `[global]` entries before it and its own, with its engine looked at first.
fn read_job(global: &[Entry], section: &Section, problems: &mut Problems) -> Option<Job> {
    let entries = || global.iter().chain(section.entries.iter());
    let engine_entry = entries().rfind(|e| e.key == "ioengine");
    let engine = match engine_entry.and_then(|e| e.value.as_deref()) {
        None => EngineUse::Io(EngineChoice::Sync),
        Some(name) => match classify(name) {
            Ok(engine) => engine,
            Err(why) => {
                let at = engine_entry.expect("a value came from it").at.clone();
                problems.push(OptionError { at, message: why });
                return None;
            }
        },
    };
    let options = JobOptions::parse(entries(), problems);
    let name = options.text("name").map_or_else(|| section.name.clone(), str::to_string);
    Some(Job { name, at: section.at.clone(), options, engine, own: listed(&section.entries) })
}

fn refuse_without_jobs(path: &Path, sections: &[Section], problems: &mut Problems) {
    if sections.iter().all(Section::is_global) {
        problems.push(OptionError {
            at: Location { file: path.to_path_buf(), line: 1 },
            message: "the file has no job section: add one such as [randread] after [global]".into(),
        });
    }
}

/// fio reports an option under its own name, not the alias used (`ss` → `steadystate`).
fn canonical_name(key: &str) -> String {
    super::table::find(key).map_or(key, |o| o.name).to_string()
}

/// `Some(true)` when the job starts together with the one before it.
fn concurrency(jobs: &[Job], index: usize, notices: &mut Vec<String>) -> Result<Option<bool>, OptionError> {
    if index == 0 {
        return Ok(None);
    }
    let job = &jobs[index];
    if let Some(said) = job.options.get("wait_for") {
        let Some(waited) = jobs[..index].iter().position(|j| j.name == said.raw) else {
            return Err(OptionError {
                at: said.at.clone(),
                message: format!(
                    "option 'wait_for': '{}' is not the name of an earlier job; expected one of: {}",
                    said.raw,
                    jobs[..index].iter().map(|j| j.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
        };
        if waited + 1 != index {
            notices.push(format!(
                "job '{}' waits for '{}'; streamcap starts it after the phase just before it, '{}'",
                job.name,
                said.raw,
                jobs[index - 1].name
            ));
        }
        return Ok(None);
    }
    Ok((!job.options.flag("stonewall")).then_some(true))
}

/// fio's reporting groups, numbered as fio numbers them: a new one at every stonewall and new_group after the
/// first job. With `group_reporting`, the phases of a group share a `group` label and are reported together.
fn assign_groups(jobs: &[Job], phases: &mut [PhaseSpec], global_options: &[(String, String)]) {
    let mut current = 0usize;
    let mut group_of = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        if i > 0 && (job.options.flag("stonewall") || job.options.flag("new_group")) {
            current += 1;
        }
        group_of.push(current);
    }
    for (i, job) in jobs.iter().enumerate() {
        let members: Vec<usize> = (0..jobs.len()).filter(|j| group_of[*j] == group_of[i]).collect();
        if job.options.flag("group_reporting") && members.len() > 1 {
            phases[i].group = Some(jobs[members[0]].name.clone());
        }
        phases[i].fio.info = Some(FioJobInfo {
            group_id: group_of[i] as u32,
            group_reporting: job.options.flag("group_reporting"),
            job_options: job.own.clone(),
            global_options: global_options.to_vec(),
            ..FioJobInfo::default()
        });
    }
}

/// One notice per option with no effect, and per value with arithmetic outside parentheses.
fn global_notices(jobs: &[Job], notices: &mut Vec<String>) {
    let mut add = |notice: String| {
        if !notices.contains(&notice) {
            notices.push(notice);
        }
    };
    for job in jobs {
        for (option, why) in &job.options.no_effect {
            add(format!("fio option '{option}' has no effect in streamcap: {why}"));
        }
        for (option, raw) in &job.options.unparenthesized {
            let leading: String = raw.trim().chars().take_while(char::is_ascii_digit).collect();
            add(format!(
                "{option}={raw}: streamcap evaluates the whole expression; fio evaluates arithmetic only inside \
                 parentheses or in a value with $ncpus, $mb_memory or $pagesize, and reads this one as the number \
                 before the first operator ({leading}, no unit); write {option}=({raw}) for both to agree"
            ));
        }
    }
}
