//! The command line: subcommands and flags (clap derive), with every value parsed by the same parsers job files
//! use, so `--bs 4k/60:64k/40` and `bs = "4k/60:64k/40"` mean the same thing. Flag names follow fio where
//! natural. Turning flags into a `PhaseSpec` happens here too; nothing else in the crate sees clap.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

mod cache;
mod check;
mod conventions;
mod generate;
mod output;
mod plan;
mod steady;
mod streams;
mod sweep;
mod trial;
mod workload;

pub use cache::{CacheArgs, Load};
pub use check::{CheckArgs, CheckFormat};
pub use conventions::{ColorWhen, LONG_VERSION, VERSION};
pub use generate::{CompletionsArgs, ManArgs, ManError, Shell, write_completions, write_man};
pub use output::OutputArgs;
pub use plan::{LayoutList, PlanArgs, PlanFormat};
pub use steady::{SteadyFlags, SteadyRate};
pub use streams::StreamsArgs;
pub use sweep::{SweepArgs, SweepIo};
pub use trial::TrialArgs;
pub use workload::WorkloadFlags;

use crate::spec::{ReadOptions, VerifyChoice};
use crate::units::{ByteRate, Bytes, parse_duration};

#[derive(Debug, Parser)]
#[command(
    name = "streamcap",
    version = VERSION,
    long_version = LONG_VERSION,
    about = "Storage benchmark and capacity planner for media and content servers",
    long_about = "Storage benchmark and capacity planner for media and content servers.\n\n\
                  `streamcap check` answers the media server's question: how many concurrent streams of each \
                  video format the storage under the current directory serves, with a verdict per format, in about \
                  four minutes (--quick: about a minute). `streamcap run` with no arguments is the raw first look: \
                  sequential and random reads and writes with direct I/O, in about 40 seconds."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour the output (help, errors, the progress line): auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: a short media-server check of the storage under DIR (default: the current directory),
    /// ending in a verdict table of concurrent streams per video format.
    Check(Box<CheckArgs>),
    /// Run a workload against a directory, file or block device.
    Run(Box<RunArgs>),
    /// Print the summary of a saved result (a JSON file written with --json).
    Report(ReportArgs),
    /// Results side by side: each headline figure with the ratio to the first and a verdict that accounts for
    /// each run's own variation.
    Compare(CompareArgs),
    /// The local history of runs: list them, show one again (or its JSON), follow a figure over time.
    History(HistoryArgs),
    /// Paced stream viewers: how many concurrent streams of a bitrate this storage serves without a stall.
    Streams(Box<StreamsArgs>),
    /// Capacity planning: layouts × drives × workload → usable capacity, streams, reads/s and cost per stream, per
    /// usable TB and per 1,000 reads/s, healthy, degraded and rebuilding, ranked. A model: nothing is measured.
    Plan(Box<PlanArgs>),
    /// What is beneath a target, without any I/O: filesystem, pool profile, members, raw and usable capacity,
    /// read policy, device facts, free space and the RAM this process may use.
    Inspect(InspectArgs),
    /// Cache versus device, measured and labelled: page cache, drive or controller cache (and where it ends),
    /// sustained media and access time, each also under a concurrent load, with what each means for serving.
    Cache(Box<CacheArgs>),
    /// File size × record size sweeps (write, re-write, read, re-read, random read; buffered and direct), like
    /// iozone -a: names the cache cliff and sets it against the RAM; --memory shows a smaller RAM's effect.
    Sweep(Box<SweepArgs>),
    /// On blank devices: build each layout with btrfs, measure it, tear it down and wipe it, then compare each
    /// measurement with the planner's prediction.
    Trial(Box<TrialArgs>),
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish.
    Completions(CompletionsArgs),
    /// Print the man page (roff): streamcap(1), or streamcap-COMMAND(1) with every flag of one command.
    Man(ManArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap inspect /srv/media\n  \
    streamcap inspect /dev/sdb --json sdb.json")]
pub struct InspectArgs {
    /// A directory, a file or a block device.
    pub target: PathBuf,
    /// Also write what was found to FILE as a result JSON with no phases (`streamcap report FILE` prints it again).
    /// `-`: standard output.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result file written by `streamcap run --json FILE`.
    pub result: PathBuf,
    /// What to print: the summary table, fio's JSON (as `fio --output-format=json`) or Markdown tables.
    #[arg(long, value_enum, default_value_t = ReportFormat::Summary)]
    pub format: ReportFormat,
    /// Also write the self-contained HTML report (charts, facts, configuration) to FILE. `-`: standard output.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap compare raid1.json raid5.json\n  \
    streamcap compare raid1.json raid5.json --html cmp.html\n  \
    streamcap compare before.json after.json --format markdown")]
pub struct CompareArgs {
    /// Result files written with --json, or history ids (#12), two or more; the first is the baseline the others
    /// are measured against.
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    pub results: Vec<String>,
    /// What to print: summary (the terminal table) or markdown (Markdown tables), as `report` and `check` say it.
    #[arg(long, value_enum, default_value_t = CheckFormat::Summary, value_parser = compare_format)]
    pub format: CheckFormat,
    /// The same as --format markdown (kept for scripts that say it).
    #[arg(long, hide = true, conflicts_with = "format")]
    pub markdown: bool,
    /// Also write the comparison as a self-contained HTML page with overlaid charts to FILE. `-`: standard output.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare results of different workloads anyway (with a warning per difference).
    #[arg(long, visible_alias = "force")]
    pub allow_different: bool,
    #[command(flatten)]
    pub history: HistoryOptions,
}

/// Where finished runs are stored. Tests and scripts that must not touch the home directory set
/// STREAMCAP_NO_HISTORY=1 or STREAMCAP_HISTORY_DB.
#[derive(Debug, Args, Default, Clone)]
pub struct HistoryOptions {
    /// The history database (default: $XDG_DATA_HOME/streamcap/history.db, or
    /// ~/.local/share/streamcap/history.db).
    #[arg(long, value_name = "PATH", env = "STREAMCAP_HISTORY_DB", global = true, help_heading = "History")]
    pub history_db: Option<PathBuf>,
    /// Do not store this run in the history.
    #[arg(long, env = "STREAMCAP_NO_HISTORY", value_parser = clap::builder::FalseyValueParser::new(),
          global = true, help_heading = "History")]
    pub no_history: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap history                                  every run, newest first\n  \
    streamcap history --host nas --command check       one host's checks\n  \
    streamcap history trend check/2160p-hevc/streams   one figure over time\n  \
    streamcap history show 12 --json > r.json          a run's JSON again")]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// Only runs on this host.
    #[arg(long, global = true)]
    pub host: Option<String>,
    /// Only runs whose target path contains this.
    #[arg(long, global = true)]
    pub target: Option<String>,
    /// Only runs of this command: run, streams, check, inspect.
    #[arg(long, global = true)]
    pub command: Option<String>,
    /// At most this many runs (the newest).
    #[arg(long, global = true)]
    pub limit: Option<u32>,
    #[command(flatten)]
    pub db: HistoryOptions,
}

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// Print a stored run's summary again, or its JSON exactly as it was written.
    Show {
        /// The run's id (as listed: #12 or 12).
        #[arg(value_parser = parse_run_id)]
        id: i64,
        /// The JSON instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Follow one figure over time; with a group's name, list its figures; without a name, list the groups.
    Trend {
        /// A figure's name (e.g. rand-read-4k-qd1/read/iops, check/1080p/streams) or a group's (check).
        figure: Option<String>,
    },
}

/// `compare --format`: the summary or Markdown (a comparison has no JSON of its own).
fn compare_format(s: &str) -> Result<CheckFormat, String> {
    use clap::ValueEnum;
    match CheckFormat::from_str(s, false) {
        Ok(CheckFormat::Json) => {
            Err("a comparison prints as summary or markdown (--json of each run holds its figures)".into())
        }
        Ok(format) => Ok(format),
        Err(_) => Err(format!("'{s}' is not a format of compare: summary or markdown")),
    }
}

/// A history id: "12" or "#12".
pub fn parse_run_id(s: &str) -> Result<i64, String> {
    s.trim_start_matches('#')
        .parse::<i64>()
        .map_err(|_| format!("'{s}' is not a run id (a number, as listed by `streamcap history`)"))
}

/// What `report` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// The terminal summary (run, streams or check, by what the result holds).
    #[default]
    Summary,
    /// fio's JSON output (`fio --output-format=json`), for scripts written for fio.
    FioJson,
    /// fio's json+ (`fio --output-format=json+`): fio's JSON with the latency histogram's bins.
    #[value(name = "fio-jsonplus")]
    FioJsonPlus,
    /// Markdown tables, for a forum post or an issue.
    Markdown,
    /// The self-contained HTML page (better written to a file with --html FILE).
    Html,
    /// The result JSON itself (as it is stored), for scripts.
    Json,
}

impl From<ReportFormat> for crate::report::Format {
    fn from(format: ReportFormat) -> Self {
        match format {
            ReportFormat::Summary => crate::report::Format::Summary,
            ReportFormat::FioJson => crate::report::Format::FioJson,
            ReportFormat::FioJsonPlus => crate::report::Format::FioJsonPlus,
            ReportFormat::Markdown => crate::report::Format::Markdown,
            ReportFormat::Html => crate::report::Format::Html,
            ReportFormat::Json => crate::report::Format::Json,
        }
    }
}

/// What `run` and `report` print on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// The terminal summary.
    #[default]
    Summary,
    /// fio's JSON output (`fio --output-format=json`), for scripts written for fio.
    FioJson,
    /// fio's json+ (`fio --output-format=json+`): fio's JSON with the latency histogram's bins.
    #[value(name = "fio-jsonplus")]
    FioJsonPlus,
    /// The result JSON (as `--json -` writes it), for scripts.
    Json,
}

impl OutputFormat {
    /// The machine format that replaces the summary, if any.
    pub fn machine(self) -> Option<crate::report::Format> {
        match self {
            OutputFormat::Summary => None,
            OutputFormat::FioJson => Some(crate::report::Format::FioJson),
            OutputFormat::FioJsonPlus => Some(crate::report::Format::FioJsonPlus),
            OutputFormat::Json => Some(crate::report::Format::Json),
        }
    }

    /// The format as it is typed.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Summary => "summary",
            OutputFormat::FioJson => "fio-json",
            OutputFormat::FioJsonPlus => "fio-jsonplus",
            OutputFormat::Json => "json",
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap run                                   first look at the current directory\n  \
    streamcap run /srv/media --rw randread --bs 4k --size 8G --iodepth 32 --runtime 30s --json r.json\n  \
    streamcap run /srv/media --job examples/jobs/seq-write-then-random-read.toml\n  \
    streamcap run --job examples/jobs/vdbench-small-files.vdb --anchor H:=/srv/pool --elapsed 60s\n  \
    streamcap run --job two-disks.fio --device /dev/sdb=/dev/loop3 --device /dev/sdc=/dev/loop4\n  \
    streamcap run /dev/loop3 /dev/loop4 --job two-disks.fio     (the file's devices, in the order it names them)\n  \
    streamcap run /dev/sdb --rw read --bs 1M --iodepth 8          (reads only; writes need --allow-device-writes)")]
pub struct RunArgs {
    /// Directory (data files are created in TARGET/.streamcap and removed after), existing file (read only) or
    /// block device. Default: the current directory.
    pub target: Option<PathBuf>,
    /// fio files whose jobs name several devices: more block devices after TARGET, taking the file's devices in
    /// the order its jobs first name them (TARGET the first), as --device would map them.
    #[arg(value_name = "DEVICE", requires = "job", conflicts_with = "device")]
    pub more_targets: Vec<PathBuf>,

    /// A job file with several phases: streamcap TOML, a fio job file or a vdbench parameter file (see
    /// examples/jobs/). Flags given as well override every phase.
    #[arg(long, value_name = "FILE", help_heading = "Job files")]
    pub job: Option<PathBuf>,
    /// vdbench files: the local directory for an anchor or drive the file names, e.g. --anchor H:=/srv/pool.
    /// Repeatable.
    #[arg(long, value_name = "NAME=DIR", value_parser = parse_anchor, help_heading = "Job files")]
    pub anchor: Vec<(String, PathBuf)>,
    /// fio files: the block device of this machine to run on for a device the file names, e.g. --device
    /// /dev/sdb=/dev/loop3 (--device /dev/sdb=/dev/sdb uses it as named); each job then runs on its own devices.
    /// Onto a directory (every device onto the same one), each device is a file of its name there, sized by the
    /// job; onto an existing file, the jobs read it. Repeatable; instead of TARGET.
    #[arg(long, value_name = "NAME=DEVICE", value_parser = parse_device, conflicts_with = "target", help_heading = "Job files")]
    pub device: Vec<(String, PathBuf)>,
    /// vdbench files: set KEY to VALUE wherever the file can say it (e.g. --set files=200 --set size=64m on the
    /// fsd) and define $KEY. Repeatable.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_set, help_heading = "Job files")]
    pub set: Vec<(String, String)>,
    /// vdbench files: length of every run, warm-up included (vdbench -e).
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Job files")]
    pub elapsed: Option<Duration>,
    /// vdbench files: warm-up of every run, left out of the results (vdbench -w). Default: one interval.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Job files")]
    pub warmup: Option<Duration>,

    #[command(flatten)]
    pub workload: WorkloadFlags,

    /// Reporting interval for the progress line, the interval series and the CSV.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Output")]
    pub interval: Option<Duration>,
    /// The interval of the fio logs in milliseconds (fio's log_avg_msec): the reporting interval, as a job
    /// file's log_avg_msec sets it.
    #[arg(long, value_name = "MS", conflicts_with = "interval", help_heading = "fio logs")]
    pub log_avg_msec: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// What to print at the end: the summary, fio's JSON (as `fio --output-format=json`) or the result JSON
    /// (as `--json -`); a JSON is printed even with --quiet.
    #[arg(long, value_enum, default_value_t = OutputFormat::Summary, help_heading = "Output")]
    pub format: OutputFormat,
    /// Write one CSV row per interval, as the run goes. `-`: standard output.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub csv: Option<PathBuf>,

    /// Keep the data files after the run.
    #[arg(long, help_heading = "Safety")]
    pub keep: bool,
    /// Allow writing to a block device (destroys its contents). The device must not be mounted or in use.
    #[arg(long, help_heading = "Safety")]
    pub allow_device_writes: bool,
    /// When a file-set tree is in use by another streamcap run, wait for it to finish instead of refusing.
    #[arg(long, help_heading = "Safety")]
    pub wait: bool,
    /// With --allow-device-writes: write even though the device carries a filesystem or partition signature.
    /// Alone it is an error (it would do nothing, and a user who typed it believed it did something).
    #[arg(long, requires = "allow_device_writes", help_heading = "Safety")]
    pub force: bool,

    /// Write nothing: re-read what the most recent run kept under TARGET (--keep) wrote with --verify, and check
    /// every block with ALGO (the algorithm it was written with). Bad blocks make the exit code 1.
    #[arg(
        long,
        value_name = "ALGO",
        value_parser = parse_value::<VerifyChoice>,
        conflicts_with_all = ["job", "verify", "rw", "keep", "dry_run", "csv", "html"],
        help_heading = "Verification"
    )]
    pub verify_only: Option<VerifyChoice>,
    /// With --verify-only: the kept run's work directory to check (TARGET/.streamcap/run-…) instead of the most
    /// recent one.
    #[arg(long, value_name = "RUNDIR", requires = "verify_only", help_heading = "Verification")]
    pub from: Option<PathBuf>,
}

impl RunArgs {
    /// What reading the job file needs from the command line.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            anchors: self.anchor.clone(),
            sets: self.set.clone(),
            elapsed: self.elapsed,
            interval: self.interval,
            warmup: self.warmup,
            ranks: None,
            // Several TARGETs are devices in order; one is the target of every job.
            target: self.target.clone().filter(|_| self.more_targets.is_empty()),
            devices: self.device.clone(),
            ordered_devices: match &self.target {
                Some(first) if !self.more_targets.is_empty() => {
                    std::iter::once(first).chain(&self.more_targets).cloned().collect()
                }
                _ => Vec::new(),
            },
        }
    }
}

/// `--engine` of every command that takes one (`run`, `check`, `streams`): the one engine-name parser, the one
/// job files use too (`spec::EngineChoice`'s `FromStr`: io_uring, uring, iouring; sync, psync; null), so every
/// command accepts the same names and refuses others with the same words.
pub(crate) fn parse_engine(s: &str) -> Result<crate::spec::EngineChoice, String> {
    parse_value(s)
}

/// The spec's value types parse from text with one error type; clap wants a function per flag.
fn parse_value<T: std::str::FromStr<Err = crate::spec::ValueError>>(s: &str) -> Result<T, String> {
    s.parse().map_err(|e: crate::spec::ValueError| e.to_string())
}

fn parse_anchor(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, dir)) if !name.trim().is_empty() && !dir.trim().is_empty() => {
            Ok((name.trim().to_string(), PathBuf::from(dir.trim())))
        }
        _ => Err("expected NAME=DIR, e.g. H:=/srv/pool".into()),
    }
}

fn parse_device(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, device)) if !name.trim().is_empty() && !device.trim().is_empty() => {
            Ok((name.trim().to_string(), PathBuf::from(device.trim())))
        }
        _ => Err("expected NAME=DEVICE, e.g. /dev/sdb=/dev/loop3".into()),
    }
}

fn parse_set(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() && !value.is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err("expected KEY=VALUE, e.g. files=200".into()),
    }
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}

/// A size that must hold something (`units::Bytes::parse_positive`).
pub(crate) fn parse_positive_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse_positive(s).map_err(|e| e.to_string())
}

/// A time that must pass (`units::parse_positive_duration`).
pub(crate) fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    crate::units::parse_positive_duration(s).map_err(|e| e.to_string())
}

/// The bytes a viewer reads per request, as `streams --chunk` takes them (`spec::ChunkSize`: 4 KiB to 64 MiB),
/// for the commands that take a chunk in bytes only (`plan`, `trial`, `cache`).
pub(crate) fn parse_chunk_bytes(s: &str) -> Result<Bytes, String> {
    match s.parse::<crate::spec::ChunkSize>()? {
        crate::spec::ChunkSize::Bytes(bytes) => Ok(Bytes(bytes)),
        crate::spec::ChunkSize::Media(_) => Err(format!("'{s}' is seconds of media: give the chunk in bytes (1M)")),
    }
}

fn parse_rate(s: &str) -> Result<ByteRate, String> {
    ByteRate::parse(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RwMode;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The long help of `streamcap` or of one of its subcommands, as `--help` prints it.
    fn long_help(sub: Option<&str>) -> String {
        let mut cli = Cli::command();
        match sub {
            None => cli.render_long_help().to_string(),
            Some(name) => cli.find_subcommand_mut(name).expect("exists").render_long_help().to_string(),
        }
    }

    /// Regression (issue 30): the top-level help opened on `run` and then called `check` the main job.
    #[test]
    fn the_top_level_help_opens_on_check() {
        let help = long_help(None);
        let check = help.find("`streamcap check`").expect("the description names check");
        assert!(check < help.find("`streamcap run`").expect("and run"), "{help}");
        let commands = &help[help.find("Commands:").expect("a command list")..];
        assert!(commands.lines().nth(1).is_some_and(|l| l.trim_start().starts_with("check ")), "{commands}");
    }

    /// Regression (issue 30): `--job` sat under Options while the vdbench flags had the "Job files" group, and
    /// --jobs, --iodepth and --runtime showed no default.
    #[test]
    fn run_help_groups_the_job_file_flags_and_shows_the_defaults() {
        let help = long_help(Some("run"));
        let group = &help[help.find("Job files:").expect("a Job files group")..];
        let group = &group[..group.find("\n\n\n").or_else(|| group.find("Workload:")).unwrap_or(group.len())];
        for flag in ["--job <FILE>", "--anchor", "--set", "--elapsed", "--warmup"] {
            assert!(group.contains(flag), "{flag} not under Job files:\n{group}");
        }
        let options = &help[help.find("Options:").expect("options")..help.find("Job files:").expect("group")];
        assert!(!options.contains("--job"), "{options}");
        let unwrapped = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for (flag, default) in [
            ("--jobs <JOBS>", format!("[default: {};", crate::plan::defaults::JOBS)),
            ("--iodepth <IODEPTH>", format!("[default: {};", crate::plan::defaults::IODEPTH)),
            ("--runtime <TIME>", "[default: one pass over the data set".to_string()),
        ] {
            let after = &unwrapped[unwrapped.find(flag).unwrap_or_else(|| panic!("{flag}"))..];
            let next_flag = after[flag.len()..].find(" --").map_or(after.len(), |i| i + flag.len());
            assert!(after[..next_flag].contains(&default), "{flag}: {}", &after[..next_flag]);
        }
    }

    #[test]
    fn flags_become_a_phase_layer() {
        let cli = Cli::parse_from(["streamcap", "run", "/tmp", "--rw", "randread", "--bs", "4k", "--buffered"]);
        let Command::Run(args) = cli.command else { panic!() };
        let spec = args.workload.to_phase_spec();
        assert_eq!(spec.rw, Some(RwMode::RandRead));
        assert_eq!(spec.direct, Some(false));
        assert_eq!(spec.iodepth, None);
        assert_eq!(args.format, OutputFormat::Summary);
    }

    #[test]
    fn fio_json_is_a_format_of_run_and_report() {
        let cli = Cli::parse_from(["streamcap", "run", "--format", "fio-json"]);
        let Command::Run(args) = cli.command else { panic!() };
        assert_eq!(args.format, OutputFormat::FioJson);
        let cli = Cli::parse_from(["streamcap", "report", "r.json", "--format", "fio-json"]);
        let Command::Report(args) = cli.command else { panic!() };
        assert_eq!(args.format, ReportFormat::FioJson);
        let cli = Cli::parse_from(["streamcap", "report", "r.json", "--format", "markdown"]);
        let Command::Report(args) = cli.command else { panic!() };
        assert_eq!(crate::report::Format::from(args.format), crate::report::Format::Markdown);
    }

    /// Regression: `streams --engine psync` was refused while `run` and `check` took it (two parsers, two lists).
    #[test]
    fn every_command_takes_the_same_engine_names_with_the_same_refusal() {
        use crate::spec::EngineChoice::{IoUring, Null, Sync};
        let engine_of = |argv: &[&str]| match Cli::try_parse_from(argv).map(|cli| cli.command) {
            Ok(Command::Run(args)) => Ok(args.workload.engine),
            Ok(Command::Check(args)) => Ok(args.engine),
            Ok(Command::Streams(args)) => Ok(args.engine),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.to_string().lines().next().unwrap_or_default().to_string()),
        };
        let commands: [&[&str]; 3] = [
            &["streamcap", "run"],
            &["streamcap", "check"],
            &["streamcap", "streams", "/x", "--bitrate", "1080p", "--max"],
        ];
        let names = [("io_uring", IoUring), ("uring", IoUring), ("iouring", IoUring), ("sync", Sync), ("psync", Sync)];
        let mut refusals = Vec::new();
        for command in commands {
            for (name, engine) in names.iter().chain(&[("null", Null)]) {
                let argv = [command, &["--engine", name]].concat();
                assert_eq!(engine_of(&argv), Ok(Some(*engine)), "{argv:?}");
            }
            refusals.push(engine_of(&[command, &["--engine", "warp"]].concat()).unwrap_err());
        }
        assert!(refusals[0].contains("'warp' is not a valid engine"), "{}", refusals[0]);
        assert!(refusals.iter().all(|r| *r == refusals[0]), "{refusals:#?}");
    }

    #[test]
    fn job_file_options_become_read_options() {
        let cli = Cli::parse_from([
            "streamcap",
            "run",
            "--job",
            "x.vdb",
            "--anchor",
            "H:=/srv/pool",
            "--set",
            "files=200",
            "--set",
            "size=64m",
            "--elapsed",
            "2m",
            "--warmup",
            "10s",
            "--interval",
            "5s",
        ]);
        let Command::Run(args) = cli.command else { panic!() };
        let options = args.read_options();
        assert_eq!(options.anchors, [("H:".to_string(), PathBuf::from("/srv/pool"))]);
        assert_eq!(options.sets.len(), 2);
        assert_eq!(options.elapsed, Some(Duration::from_secs(120)));
        assert_eq!(options.warmup, Some(Duration::from_secs(10)));
        assert_eq!(options.interval, Some(Duration::from_secs(5)));
        assert!(Cli::try_parse_from(["streamcap", "run", "--anchor", "H:"]).is_err());
    }

    #[test]
    fn device_maps_the_names_a_fio_file_uses_and_excludes_a_target() {
        let args =
            ["streamcap", "run", "--job", "f.fio", "--device", "/dev/sdb=/dev/loop3", "--device=/dev/sdc=/dev/sdc"];
        let Command::Run(run) = Cli::try_parse_from(args).unwrap().command else { panic!("run") };
        let devices = run.read_options().devices;
        assert_eq!(devices[0], ("/dev/sdb".to_string(), PathBuf::from("/dev/loop3")));
        assert_eq!(devices[1], ("/dev/sdc".to_string(), PathBuf::from("/dev/sdc")));
        assert!(Cli::try_parse_from(["streamcap", "run", "--device", "/dev/sdb"]).is_err());
        assert!(Cli::try_parse_from(["streamcap", "run", "/dev/loop3", "--device", "/dev/sdb=/dev/loop3"]).is_err());
    }
}
