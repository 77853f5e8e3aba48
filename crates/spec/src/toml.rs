//! The native job file: TOML with optional top-level `target` and `interval`, a `[global]` table of phase
//! defaults and any number of `[[phase]]` tables, each with the same keys as the command-line flags.
//!
//! ```toml
//! interval = "1s"
//! [global]
//! size = "1G"
//! runtime = "10s"
//! [[phase]]
//! name = "write the data set"
//! rw = "write"
//! bs = "1M"
//! [[phase]]
//! rw = "randread"
//! bs = "4k"
//! iodepth = 32
//! ```
//!
//! Unknown keys are errors (with the line), never silently ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::SpecError;
use super::job::{JobSpec, PhaseSpec, SpecOrigin};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobFile {
    target: Option<PathBuf>,
    #[serde(default, deserialize_with = "crate::units::deserialize_opt_duration")]
    interval: Option<Duration>,
    global: Option<PhaseSpec>,
    #[serde(default)]
    phase: Vec<PhaseSpec>,
}

/// Reads a native job from `text`; `path` is used in messages and recorded as the origin.
pub fn parse_toml_job(path: &Path, text: &str) -> Result<JobSpec, SpecError> {
    // Counted before the TOML is parsed: the parser's tree of a job of 179,166 phases alone outgrows a 64 MiB
    // memory cgroup, so a job over the cap must be refused before it is built.
    let headers = text.lines().filter(|l| is_phase_header(l)).count();
    if headers > crate::limits::MAX_PHASES {
        return Err(SpecError::Syntax { path: path.to_path_buf(), message: crate::limits::too_many_phases(headers) });
    }
    let file: JobFile = toml::from_str(text)
        .map_err(|e| SpecError::Syntax { path: path.to_path_buf(), message: describe_toml_error(text, &e) })?;
    let mut global = file.global.unwrap_or_default();
    // The kind is decided here, once, by the tables the phase has.
    let invalid =
        |which: String, e: String| SpecError::Syntax { path: path.to_path_buf(), message: format!("{which}: {e}") };
    global.kind_from_tables().map_err(|e| invalid("[global]".into(), e))?;
    let mut read = file.phase;
    for (i, phase) in read.iter_mut().enumerate() {
        phase.kind_from_tables().map_err(|e| invalid(format!("phase {}", i + 1), e))?;
        // [global]'s kind is every phase's; a phase of another kind would be both.
        let kinds = (global.kind.as_ref().map(std::mem::discriminant), phase.kind.as_ref().map(std::mem::discriminant));
        if let (Some(all), Some(own)) = kinds
            && all != own
        {
            let both = "a phase is either a file-set phase or a streams phase, not both ([global] says the other)";
            return Err(invalid(format!("phase {}", i + 1), both.into()));
        }
    }
    // In place (into_iter → collect reuses the allocation): a second vector of phases doubled the memory a long
    // job took.
    let mut phases: Vec<PhaseSpec> = read.into_iter().map(|p| global.overlay(&p)).collect();
    if phases.is_empty() && global.rw.is_some() {
        // A file with only [global] and an rw is a one-phase job.
        phases.push(global);
    }
    Ok(JobSpec {
        origin: SpecOrigin::Toml { path: path.to_path_buf() },
        target: file.target,
        interval: file.interval,
        phases,
        notices: Vec::new(),
    })
}

/// `[[phase]]` as TOML allows it to be written (spaces inside the brackets, a comment after).
fn is_phase_header(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("[[") else { return false };
    let Some((name, _)) = rest.split_once("]]") else { return false };
    name.trim() == "phase"
}

/// "line 7, column 1: unknown field `bz`, expected one of …" — the position first, as compilers do.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let mut message = error.message().trim().to_string();
    if message.starts_with("unknown field `during`") {
        // A raw or file-set phase has no viewers to run beside.
        message = "unknown field `during`: background loads (library-scan, thumbnails, transcode, recording, \
                   scrub) run beside stream viewers, so `during` belongs in a [phase.streams] table"
            .into();
    }
    match error.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let line =
                key_line_in_table(text, start, &message).unwrap_or_else(|| text[..start].matches('\n').count() + 1);
            let column = match key_line_in_table(text, start, &message) {
                Some(_) => 1 + text.lines().nth(line - 1).map_or(0, |l| l.len() - l.trim_start().len()),
                None => start - text[..start].rfind('\n').map_or(0, |i| i + 1) + 1,
            };
            let source_line = text.lines().nth(line - 1).unwrap_or("").trim();
            let source_line = crate::limits::shorten(source_line, crate::limits::MAX_MESSAGE_LINE);
            format!("line {line}, column {column}: {message}\n    {source_line}")
        }
        None => message,
    }
}

/// The line (1-based) of the key an error is about when the parser could only point at its table's header: the
/// dialect knobs (`spec::extras`) are flattened into a phase, and serde reads them after the table, without their
/// own positions. An unknown key is found by its name; a bad value by reading each knob of the table alone.
fn key_line_in_table(text: &str, start: usize, message: &str) -> Option<usize> {
    if !text[start..].starts_with('[') {
        return None;
    }
    let first = text[..start].matches('\n').count() + 1;
    let unknown = message.strip_prefix("unknown field `").and_then(|m| m.split('`').next());
    let lines = text.lines().enumerate().skip(first);
    for (i, line) in lines.take_while(|(_, l)| !l.trim_start().starts_with('[')) {
        let Some((key, _)) = line.split_once('=') else { continue };
        let key = key.trim();
        let found = match unknown {
            Some(name) => key == name,
            None => {
                toml::from_str::<toml::Table>(line).is_ok() && toml::from_str::<super::FioExtras>(line).is_err()
                    || toml::from_str::<super::VdbenchExtras>(line).is_err()
            }
        };
        if found {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::values::{BlockSizeSpec, RwMode};
    use crate::units::Bytes;

    #[test]
    fn global_values_flow_into_phases() {
        let text = r#"
interval = "2s"
[global]
size = "64M"
runtime = "3s"
[[phase]]
name = "fill"
rw = "write"
bs = "1M"
[[phase]]
rw = "randread"
bs = "4k"
iodepth = 32
runtime = 5
"#;
        let job = parse_toml_job(Path::new("j.toml"), text).unwrap();
        assert_eq!(job.interval, Some(Duration::from_secs(2)));
        assert_eq!(job.phases.len(), 2);
        assert_eq!(job.phases[0].size, Some(Bytes(64 << 20)));
        assert_eq!(job.phases[0].bs, Some(BlockSizeSpec::Fixed(Bytes(1 << 20))));
        assert_eq!(job.phases[1].rw, Some(RwMode::RandRead));
        assert_eq!(job.phases[1].runtime, Some(Duration::from_secs(5)));
        assert_eq!(job.phases[0].runtime, Some(Duration::from_secs(3)));
    }

    #[test]
    fn unknown_keys_are_reported_with_their_line() {
        let text = "[[phase]]\nrw = \"read\"\nbz = \"4k\"\n";
        let err = parse_toml_job(Path::new("bad.toml"), text).unwrap_err().to_string();
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("bz"), "{err}");
    }

    #[test]
    fn background_loads_belong_to_a_stream_phase() {
        let raw = "[[phase]]\nrw = \"read\"\nduring = \"library-scan\"\n";
        let err = parse_toml_job(Path::new("raw.toml"), raw).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("belongs in a [phase.streams] table"), "{err}");
        let streams =
            "[[phase]]\n[phase.streams]\nformat = \"1080p\"\nmax = true\nduring = \"library-scan,transcode\"\n";
        let job = parse_toml_job(Path::new("s.toml"), streams).unwrap();
        assert_eq!(job.phases[0].streams().unwrap().during.as_ref().unwrap().0.len(), 2);
        let unknown = streams.replace("transcode", "defrag");
        let err = parse_toml_job(Path::new("s.toml"), &unknown).unwrap_err().to_string();
        assert!(err.contains("'defrag' is not a background load"), "{err}");
    }

    #[test]
    fn a_job_over_the_phase_cap_is_refused_before_it_is_parsed() {
        // Guards issue 25: a job of 179,166 phases took 634 MB to dry-run (OOM-killed in a 64 MiB cgroup).
        let one = "[[phase]]\nrw = \"read\"\n";
        let text = one.repeat(crate::limits::MAX_PHASES + 1);
        let err = parse_toml_job(Path::new("big.toml"), &text).unwrap_err().to_string();
        assert!(err.contains("10001 phases or more") && err.contains("at most 10000"), "{err}");
        let text = format!("{}[[ phase ]] # the last\nrw = \"read\"\n", one.repeat(crate::limits::MAX_PHASES - 1));
        assert_eq!(parse_toml_job(Path::new("ok.toml"), &text).unwrap().phases.len(), crate::limits::MAX_PHASES);
        assert!(!is_phase_header("name = \"[[phase]]\"") && !is_phase_header("[[phases]]"));
    }

    /// The kind is the reader's to say, once: a `[phase.streams]` or `[phase.fileset]` table makes the phase of
    /// that kind, a phase with neither is raw, and both at once are refused before anything is planned.
    #[test]
    fn a_phase_table_decides_the_kind_and_two_kinds_are_refused() {
        use crate::spec::SpecKind;
        let fileset = "[phase.fileset]\ntree = []\nworkload = []\n";
        let text = format!("[[phase]]\nrw = \"read\"\n[[phase]]\n[phase.streams]\ncount = 4\n[[phase]]\n{fileset}");
        let job = parse_toml_job(Path::new("j.toml"), &text).unwrap();
        assert!(job.phases[0].kind.is_none());
        assert!(matches!(&job.phases[1].kind, Some(SpecKind::Streams(s)) if s.count == Some(4)));
        assert!(matches!(job.phases[2].kind, Some(SpecKind::FileSet(_))));
        assert!(job.phases.iter().all(|p| p.fileset_table.is_none() && p.streams_table.is_none()));
        let both = format!("[[phase]]\n[phase.streams]\ncount = 4\n{fileset}");
        let err = parse_toml_job(Path::new("both.toml"), &both).unwrap_err().to_string();
        assert!(err.contains("phase 1: a phase is either a file-set phase or a streams phase, not both"), "{err}");
        let global = format!("[global]\n{}[[phase]]\n[phase.streams]\ncount = 4\n", fileset.replace("phase", "global"));
        let err = parse_toml_job(Path::new("global.toml"), &global).unwrap_err().to_string();
        assert!(err.contains("phase 1: a phase is either a file-set phase or a streams phase"), "{err}");
        // A part's table becomes the part's kind, which the phase's check refuses: a part is raw I/O.
        let part = "[[phase]]\nrw = \"read\"\n[[phase.part]]\n[phase.part.streams]\ncount = 2\n";
        let job = parse_toml_job(Path::new("part.toml"), part).unwrap();
        assert!(job.check().unwrap_err().contains("a part is one raw workload"));
    }

    #[test]
    fn the_kind_travels_with_a_serialized_job_but_a_job_file_cannot_say_it() {
        // A multi-host run sends rank 0's job to the others as serialized data: the kind must arrive with it.
        let text = "[[phase]]\n[phase.streams]\ncount = 4\n[[phase]]\n[phase.fileset]\ntree = []\nworkload = []\n";
        let job = parse_toml_job(Path::new("j.toml"), text).unwrap();
        for phase in &job.phases {
            let back: super::PhaseSpec = toml::from_str(&toml::to_string(phase).unwrap()).unwrap();
            assert_eq!(&back, phase);
        }
        let written = "[[phase]]\n[phase.kind.streams]\ncount = 4\n";
        let err = parse_toml_job(Path::new("kind.toml"), written).unwrap_err().to_string();
        assert!(err.contains("phase 1: unknown key `kind`"), "{err}");
    }

    #[test]
    fn a_dialect_knob_is_reported_at_its_own_line() {
        // The fio and vdbench knobs are flattened into the phase: serde reads them without their positions.
        let text = "[global]\nrw = \"read\"\n[[phase]]\nrw = \"read\"\nthinktime = \"abc\"\n";
        let err = parse_toml_job(Path::new("t.toml"), text).unwrap_err().to_string();
        assert!(err.contains("line 5, column 1") && err.contains("thinktime = \"abc\""), "{err}");
        let text = "[[phase]]\nrw = \"read\"\n  skew-limit = \"x\"\n";
        let err = parse_toml_job(Path::new("t.toml"), text).unwrap_err().to_string();
        assert!(err.contains("line 3, column 3") && err.contains("expected f64"), "{err}");
    }

    #[test]
    fn the_dialect_knobs_travel_with_a_serialized_job_and_load_from_flat_keys() {
        use crate::spec::{ByteStep, IoAmount, Sequencer};
        let text = "[[phase]]\nrw = \"randread\"\nthinktime = \"2ms\"\nthinktime-blocks = 4\nrandom-every = 8\n\
                    sequencer = \"identical\"\nrate-min-iops = 10\nio-passes = 2\nio-read = \"1M\"\n\
                    rate-percent-of-max = 50\nskew-limit = 5.0\n[[phase]]\nrw = \"write\"\noffset-step = \"-8k\"\n";
        let job = parse_toml_job(Path::new("j.toml"), text).unwrap();
        let (fio, vdbench) = (&job.phases[0].fio, &job.phases[0].vdbench);
        assert_eq!(fio.thinktime, Some(Duration::from_millis(2)));
        assert_eq!((fio.thinktime_blocks, fio.random_every, fio.rate_min_iops), (Some(4), Some(8), Some(10)));
        assert_eq!(fio.sequencer, Some(Sequencer::Identical));
        assert_eq!(job.phases[0].io_passes, Some(2.0));
        assert_eq!(vdbench.io_read, Some(IoAmount::Bytes(Bytes(1 << 20))));
        assert_eq!((vdbench.rate_percent_of_max, vdbench.skew_limit), (Some(50.0), Some(5.0)));
        assert_eq!(job.phases[1].fio.offset_step, Some(ByteStep(-8192)));
        for phase in &job.phases {
            let back: super::PhaseSpec = toml::from_str(&toml::to_string(phase).unwrap()).unwrap();
            assert_eq!(&back, phase);
            let json: super::PhaseSpec = serde_json::from_slice(&serde_json::to_vec(phase).unwrap()).unwrap();
            assert_eq!(&json, phase, "as the mpi broadcast sends it");
        }
        let text = "[global]\nthinktime = \"1ms\"\nskew-limit = 3.0\n[[phase]]\nrw = \"read\"\nskew-limit = 1.0\n";
        let job = parse_toml_job(Path::new("g.toml"), text).unwrap();
        assert_eq!(job.phases[0].fio.thinktime, Some(Duration::from_millis(1)), "[global]'s knob reaches the phase");
        assert_eq!(job.phases[0].vdbench.skew_limit, Some(1.0), "the phase's own knob wins");
    }

    #[test]
    fn bad_values_are_reported_with_what_is_expected() {
        let text = "[[phase]]\nrw = \"sideways\"\n";
        let err = parse_toml_job(Path::new("bad.toml"), text).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("randread"), "{err}");
    }
}
