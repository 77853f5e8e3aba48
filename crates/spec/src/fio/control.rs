//! fio's controls between jobs: `exitall`/`exit_what` (which jobs stop when one finishes) and `flow`,
//! `flow_id`, `flow_sleep` (jobs of one flow issue I/O in proportion to their weights), and the gathering of
//! these, the per-command priorities (`cmdprio`) and the latency target (`latency`) into each job's
//! `FioJobInfo`. This reads and checks the options; the run (`run::stage`, `run::flow`, `run::raw`,
//! `run::depth_search`) does what they say.
//!
//! As in fio, `exitall` in any job applies to the whole file (fio keeps it in one global switch): every job that
//! finishes then stops the jobs its own `exit_what` names. `exitall_on_error` is the job's own (fio's
//! `td->o.exitall_error`): when that job ends in error, it stops the jobs its `exit_what` names.
//!
//! Must not: decide when phases start (`mapping`) or anything about the I/O of one job.

use std::time::Duration;

use super::cmdprio::map_cmdprio;
use super::job::fail;
use super::latency::latency_target;
use super::mapping::Job;
use super::options::Problems;
use crate::spec::{ExitWhat, FioJobInfo, FlowSpec};

/// Each job's exitall scope, flow and per-command priorities, in job order; problems are recorded.
pub(super) fn job_controls(jobs: &[Job], problems: &mut Problems) -> Vec<FioJobInfo> {
    let exitall = jobs.iter().any(|j| j.options.flag("exitall"));
    let mut controls = Vec::with_capacity(jobs.len());
    for job in jobs {
        let scope = exit_what(job, problems);
        controls.push(FioJobInfo {
            exit_all: scope.filter(|_| exitall),
            exit_on_error: scope.filter(|_| job.options.flag("exitall_on_error")),
            flow: flow(job, problems),
            cmdprio: problems.take(map_cmdprio(job)).flatten(),
            latency_target: latency_target(job, problems),
            ..FioJobInfo::default()
        });
    }
    controls
}

fn exit_what(job: &Job, problems: &mut Problems) -> Option<ExitWhat> {
    let Some(said) = job.options.get("exit_what") else { return Some(ExitWhat::Group) };
    match said.raw.trim() {
        "group" => Some(ExitWhat::Group),
        "stonewall" => Some(ExitWhat::Stonewall),
        "all" => Some(ExitWhat::All),
        other => {
            let why = format!("'{other}' is not a choice; expected group, stonewall or all");
            problems.push(fail(said, "exit_what", why));
            None
        }
    }
}

fn flow(job: &Job, problems: &mut Problems) -> Option<FlowSpec> {
    let o = &job.options;
    let said = o.get("flow")?;
    let weight = match said.raw.trim().parse::<i64>() {
        Ok(0) => return None,
        Ok(w) if w > 0 => w as u64,
        Ok(_) => {
            let why = "negative weights are from fio's old flow counter; give each job of the flow a positive \
                       weight (flow=3 and flow=1 run 3:1)";
            problems.push(fail(said, "flow", why));
            return None;
        }
        Err(_) => {
            problems.push(fail(
                said,
                "flow",
                format!("'{}' is not a whole number; expected a weight such as 2", said.raw),
            ));
            return None;
        }
    };
    let sleep = o.time("flow_sleep").unwrap_or(Duration::ZERO);
    Some(FlowSpec { id: o.int("flow_id").unwrap_or(0), weight, sleep })
}

#[cfg(test)]
mod tests {
    use crate::spec::fio::parse_fio_job;
    use crate::spec::{ExitWhat, FlowSpec};
    use std::path::Path;
    use std::time::Duration;

    fn controls(text: &str) -> Vec<(Option<ExitWhat>, Option<FlowSpec>)> {
        let spec = parse_fio_job(Path::new("j.fio"), text).expect("parses");
        spec.phases.iter().map(|p| p.fio.info.as_ref().map(|f| (f.exit_all, f.flow)).expect("fio info")).collect()
    }

    #[test]
    fn exitall_anywhere_applies_to_every_job_with_its_own_exit_what() {
        let text = "[global]\nsize=1m\n[a]\nrw=read\nexitall\nexit_what=stonewall\n[b]\nrw=read\n[c]\nstonewall\n\
                    rw=read\nexit_what=all\n";
        let got: Vec<_> = controls(text).into_iter().map(|c| c.0).collect();
        assert_eq!(got, [Some(ExitWhat::Stonewall), Some(ExitWhat::Group), Some(ExitWhat::All)]);
        let without: Vec<_> = controls("[a]\nsize=1m\nrw=read\nexit_what=all\n").into_iter().map(|c| c.0).collect();
        assert_eq!(without, [None]);
    }

    #[test]
    fn flow_weights_ids_and_sleep() {
        let text = "[global]\nsize=1m\nflow_sleep=1000\n[a]\nrw=read\nflow=8\n[b]\nrw=write\nflow=1\nflow_id=3\n";
        let got: Vec<_> = controls(text).into_iter().map(|c| c.1).collect();
        let sleep = Duration::from_millis(1);
        assert_eq!(got, [Some(FlowSpec { id: 0, weight: 8, sleep }), Some(FlowSpec { id: 3, weight: 1, sleep })]);
    }

    #[test]
    fn bad_exit_what_and_negative_flow_are_errors_naming_the_option() {
        let err = parse_fio_job(Path::new("j.fio"), "[a]\nsize=1m\nrw=read\nexitall\nexit_what=some\nflow=-1\n")
            .expect_err("refused")
            .to_string();
        assert!(err.contains("line 5: option 'exit_what': 'some' is not a choice"), "{err}");
        assert!(err.contains("line 6: option 'flow': negative weights"), "{err}");
    }
}
