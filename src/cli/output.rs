//! The output flags every measuring command shares — `run`, `streams`, `check`, `cache` and `sweep`: `--json`,
//! `--html`, `--quiet`, `--dry-run` and the history flags, declared once here and flattened into each command,
//! so their names, value names and words are the same everywhere. What a command adds of its own stays in its
//! `Args`: `run`'s `--csv` and `--format`, `check`'s `--format` and `--no-html` (and its own words for `--html`,
//! whose default is a file beside the JSON). `trial`, `plan` and `inspect` write other documents (a trial
//! comparison, a planning result, the facts alone) and keep their own `--json`; they take no `--html`, history
//! or dry run, and gain none here.

use std::path::{Path, PathBuf};

use clap::Args;

use super::HistoryOptions;

/// The output flags of a measuring command. Each is said where it is used by the command's end
/// (`app::output::end_command`); the paths are checked up front through `outfile` (`files`).
#[derive(Debug, Args, Default, Clone)]
pub struct OutputArgs {
    /// Write the full result (configuration, host, percentiles, intervals, devices) as JSON, rewritten after every
    /// phase and stream step, so a run cut short keeps what it measured (`streamcap report FILE` prints it again).
    /// `-`: standard output, at the end.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write the self-contained HTML report (charts, facts, configuration) to FILE at the end. `-`: standard output.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// No progress and no summary (errors are still printed).
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// Also print the expanded plan (what --dry-run prints) on stderr before starting.
    #[arg(long, short, conflicts_with = "quiet", help_heading = "Output")]
    pub verbose: bool,
    /// Print the expanded plan and do nothing.
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,
    #[command(flatten)]
    pub history: HistoryOptions,
}

impl OutputArgs {
    /// The files these flags name, by flag, for the output-file check every command makes before it starts.
    pub fn files(&self) -> [(&'static str, Option<&Path>); 2] {
        [("--json", self.json.as_deref()), ("--html", self.html.as_deref())]
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// Every measuring command takes the same output flags, with the same meaning.
    #[test]
    fn every_measuring_command_takes_the_shared_output_flags() {
        let flags = ["--json", "r.json", "--html", "r.html", "-q", "--dry-run", "--no-history", "--color", "never"];
        let commands: [&[&str]; 5] = [
            &["run"],
            &["streams", "/x", "--bitrate", "1080p", "--max"],
            &["check"],
            &["cache", "/x"],
            &["sweep", "/x"],
        ];
        for command in commands {
            let argv = [&["streamcap"], command, &flags].concat();
            let output = match Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}")).command {
                Command::Run(args) => args.output,
                Command::Streams(args) => args.output,
                Command::Check(args) => args.output,
                Command::Cache(args) => args.output,
                Command::Sweep(args) => args.output,
                other => panic!("{other:?}"),
            };
            assert_eq!(output.json.as_deref(), Some(std::path::Path::new("r.json")), "{command:?}");
            assert_eq!(output.files()[1].1, Some(std::path::Path::new("r.html")), "{command:?}");
            assert!(output.quiet && output.dry_run && output.history.no_history, "{command:?}");
        }
    }

    /// `check --html` keeps its own words (a default beside the JSON) and its conflict with `--no-html`.
    #[test]
    fn check_keeps_its_html_default_and_no_html() {
        assert!(Cli::try_parse_from(["streamcap", "check", "--html", "x.html", "--no-html"]).is_err());
        let help = {
            use clap::CommandFactory;
            let mut cli = Cli::command();
            let check = cli.find_subcommand_mut("check").expect("check exists");
            check.render_long_help().to_string()
        };
        assert!(help.contains("beside the JSON as NAME.html"), "{help}");
    }
}
