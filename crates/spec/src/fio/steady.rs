//! fio's steady-state options: `steadystate`/`ss` (`iops:N%`, `iops_slope:N`, `bw:N%`, `bw_slope:N`; a bare
//! bandwidth limit is a size per second), `steadystate_duration`/`ss_dur` (the rolling window; 0, fio's default,
//! turns detection off), `steadystate_ramp_time`/`ss_ramp`. As in fio (options.c), `ss` without `ss_dur` checks
//! nothing and `ss_dur` without `ss` uses `iops_slope:0.01%`. `ss_interval` becomes the reporting interval
//! (`job.rs`), since streamcap checks once per interval.
//!
//! Must not: judge rates (`metrics::steady`) or decide the window in rounds (`plan`).

use std::time::Duration;

use super::job::fail;
use super::mapping::Job;
use super::options::{OptionError, Problems};
use super::values::parse_size;
use crate::spec::{PhaseSpec, SteadyCriterion, SteadyOn, SteadyStateSpec, SteadyWindow};

/// fio's default criterion (options.c: `.def = "iops_slope:0.01%"`).
const FIO_DEFAULT: &str = "iops_slope:0.01%";

/// The job's steady-state detection; `None` when it has none (no ss_dur, or ss_dur=0).
pub(super) fn map_steady(job: &Job, notices: &mut Vec<String>) -> Result<Option<SteadyStateSpec>, OptionError> {
    let o = &job.options;
    let window = o.time("steadystate_duration").filter(|d| !d.is_zero());
    let Some(window) = window else {
        if o.get("steadystate").is_some() {
            notices.push(format!(
                "job '{}': steadystate without ss_dur checks nothing in fio (ss_dur defaults to 0), nor here; \
                 add ss_dur=30s to end the job at steady state",
                job.name
            ));
        }
        return Ok(None);
    };
    let criterion = match o.get("steadystate") {
        Some(said) => parse_criterion(said.raw.trim(), o.base).map_err(|why| fail(said, "steadystate", why))?,
        None => parse_criterion(FIO_DEFAULT, o.base).expect("fio's default criterion parses"),
    };
    let ramp = o.time("steadystate_ramp_time").unwrap_or(Duration::ZERO);
    Ok(Some(SteadyStateSpec { criterion, window: SteadyWindow::Time(window), ramp }))
}

/// fio judges a reporting group as one, and rejects a job whose steady-state options differ from those of another
/// job of its group (steadystate.c: "steadystate options must be consistent within reporting groups"), whichever
/// of them comes first: so does streamcap, naming the job that differs from the group's first. Groups are runs of
/// consecutive jobs (`mapping::assign_groups`), so one pass suffices.
pub(super) fn check_groups(jobs: &[Job], phases: &[PhaseSpec], problems: &mut Problems) {
    let group = |p: &PhaseSpec| p.fio.info.as_ref().map(|f| f.group_id);
    let mut first = 0;
    for (i, (job, phase)) in jobs.iter().zip(phases).enumerate() {
        if group(phase) != group(&phases[first]) {
            first = i;
        } else if phase.steady_state != phases[first].steady_state {
            problems.push(OptionError {
                at: job.at.clone(),
                message: format!(
                    "job '{}': its steadystate options (ss, ss_dur, ss_ramp) differ from those of job '{}' in the \
                     same reporting group, and fio rejects such a job (\"steadystate options must be consistent \
                     within reporting groups\"): give both the same, or start a new group with new_group or \
                     stonewall",
                    job.name, jobs[first].name
                ),
            });
        }
    }
}

/// fio's `criterion:limit` written elsewhere (the TOML key `steady-state`), sizes in powers of 1024.
pub(crate) fn parse_steady_criterion(raw: &str) -> Result<SteadyCriterion, String> {
    parse_criterion(raw.trim(), super::values::KbBase::Binary)
}

/// `criterion:limit`, as fio's str_steadystate_cb reads it.
fn parse_criterion(raw: &str, base: super::values::KbBase) -> Result<SteadyCriterion, String> {
    let expected = "expected iops:N%, iops_slope:N%, bw:N% or bw_slope:N% (or a limit without %: IOPS, or bytes \
                    per second such as 10m)";
    let (name, limit) = raw.split_once(':').map_or((raw, ""), |(n, l)| (n.trim(), l.trim()));
    let (on, slope) = match name.to_ascii_lowercase().as_str() {
        "iops" => (SteadyOn::Iops, false),
        "iops_slope" => (SteadyOn::Iops, true),
        "bw" => (SteadyOn::Bw, false),
        "bw_slope" => (SteadyOn::Bw, true),
        "lat" | "lat_slope" => {
            return Err(format!(
                "'{name}' (a latency criterion of newer fio) is not supported; use iops, iops_slope, bw or bw_slope"
            ));
        }
        _ => return Err(format!("'{name}' is not a steady-state criterion; {expected}")),
    };
    if limit.is_empty() {
        return Err(format!("'{raw}' has no threshold after the criterion; {expected}"));
    }
    let bad = || format!("'{limit}' is not a threshold; {expected}");
    let (limit, percent) = match limit.strip_suffix('%') {
        Some(pct) => (pct.trim().parse::<f64>().map_err(|_| bad())?, true),
        None if on == SteadyOn::Iops => (limit.parse::<f64>().map_err(|_| bad())?, false),
        None => (parse_size(limit, base).map_err(|_| bad())? as f64, false),
    };
    if !limit.is_finite() || limit <= 0.0 {
        return Err(format!("the threshold '{limit}' must be above zero: a criterion below it can never hold"));
    }
    Ok(SteadyCriterion::Fio { on, slope, limit, percent })
}

#[cfg(test)]
mod tests {
    use super::parse_criterion;
    use crate::spec::fio::parse_fio_job;
    use crate::spec::fio::values::KbBase;
    use crate::spec::{SteadyCriterion, SteadyOn, SteadyWindow};
    use std::path::Path;
    use std::time::Duration;

    fn fio(on: SteadyOn, slope: bool, limit: f64, percent: bool) -> SteadyCriterion {
        SteadyCriterion::Fio { on, slope, limit, percent }
    }

    #[test]
    fn criteria_and_thresholds_read_as_fio_reads_them() {
        let read = |s| parse_criterion(s, KbBase::Binary);
        assert_eq!(read("iops:10%"), Ok(fio(SteadyOn::Iops, false, 10.0, true)));
        assert_eq!(read("bw_slope:1%"), Ok(fio(SteadyOn::Bw, true, 1.0, true)));
        assert_eq!(read("iops_slope:25"), Ok(fio(SteadyOn::Iops, true, 25.0, false)));
        assert_eq!(read("bw:10m"), Ok(fio(SteadyOn::Bw, false, 10485760.0, false)));
        assert!(read("iops").unwrap_err().contains("no threshold"));
        assert!(read("speed:1%").unwrap_err().contains("'speed' is not a steady-state criterion"));
        assert!(read("iops:x%").unwrap_err().contains("'x%' is not a threshold"));
        assert!(read("iops:0%").unwrap_err().contains("must be above zero"));
        assert!(read("lat:1ms").unwrap_err().contains("not supported"));
    }

    #[test]
    fn the_window_and_ramp_come_from_ss_dur_and_ss_ramp_and_ss_alone_checks_nothing() {
        let text = "[a]\nsize=1m\nrw=read\nss=bw:5%\nss_dur=30s\nss_ramp=10\n[b]\nnew_group\nsize=1m\nrw=read\n\
                    ss=iops:1%\n[c]\nnew_group\nsize=1m\nrw=read\nss_dur=1m\n";
        let spec = parse_fio_job(Path::new("j.fio"), text).expect("parses");
        let a = spec.phases[0].steady_state.expect("a has steady state");
        assert_eq!(a.criterion, fio(SteadyOn::Bw, false, 5.0, true));
        assert_eq!((a.window, a.ramp), (SteadyWindow::Time(Duration::from_secs(30)), Duration::from_secs(10)));
        assert!(spec.phases[1].steady_state.is_none());
        assert!(spec.notices.iter().any(|n| n.contains("job 'b': steadystate without ss_dur")), "{:?}", spec.notices);
        let c = spec.phases[2].steady_state.expect("c has fio's default criterion");
        assert_eq!(c.criterion, fio(SteadyOn::Iops, true, 0.01, true));
    }

    #[test]
    fn jobs_of_one_reporting_group_must_agree_as_fio_demands() {
        let head = "[global]\nsize=1m\nrw=read\n";
        let err = parse_fio_job(Path::new("j.fio"), &format!("{head}[a]\n[b]\nss=iops:10%\nss_dur=5\n"))
            .expect_err("refused as fio refuses it")
            .to_string();
        assert!(err.contains("line 5: job 'b': its steadystate options (ss, ss_dur, ss_ramp) differ from"), "{err}");
        let apart = format!("{head}[a]\n[b]\nnew_group\nss=iops:10%\nss_dur=5\n[c]\nss=iops:10%\nss_dur=5\n");
        let spec = parse_fio_job(Path::new("j.fio"), &apart).expect("groups agree");
        assert!(spec.phases[0].steady_state.is_none() && spec.phases[2].steady_state.is_some());
    }

    #[test]
    fn a_bad_criterion_is_an_error_naming_the_line_and_option() {
        let err = parse_fio_job(Path::new("j.fio"), "[a]\nsize=1m\nrw=read\nss=iops\nss_dur=10\n")
            .expect_err("refused")
            .to_string();
        assert!(err.contains("line 4: option 'steadystate': 'iops' has no threshold"), "{err}");
    }
}
