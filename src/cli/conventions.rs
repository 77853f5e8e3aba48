//! What every command shares as a convention of well-made command-line tools, apart from its own flags: the
//! version string (`-V`, `--version` with the commit, the build date and the features) and `--color`, which
//! clap must know before it parses, since it colours its own help and errors.

use super::Cli;

/// `streamcap -V`: the version, the commit it was built from and the build date.
pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("STREAMCAP_COMMIT"), " ", env!("STREAMCAP_BUILD_DATE"), ")");

/// `streamcap --version`: as `-V`, then the features built in, each `+name` or `-name` (as `curl -V` says them).
/// io_uring is always built (and falls back to sync at run time where the kernel refuses it); `mpi` only with
/// `--features mpi`.
macro_rules! long_version {
    ($features:literal) => {
        concat!(
            env!("CARGO_PKG_VERSION"),
            "\ncommit:   ",
            env!("STREAMCAP_COMMIT"),
            "\nbuilt:    ",
            env!("STREAMCAP_BUILD_DATE"),
            "\nfeatures: ",
            $features
        )
    };
}
#[cfg(feature = "mpi")]
pub const LONG_VERSION: &str = long_version!("+io_uring +mpi");
#[cfg(not(feature = "mpi"))]
pub const LONG_VERSION: &str = long_version!("+io_uring -mpi");

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    Always,
    Never,
}

impl Cli {
    /// Parses the process's command line as [`Cli::parse`] does, with clap's own help and errors coloured as
    /// `--color` says: the flag is read first, since clap colours what it prints while it parses.
    pub fn parse_coloured() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let choice = match color_asked(&args) {
            Some(ColorWhen::Always) => clap::ColorChoice::Always,
            Some(ColorWhen::Never) => clap::ColorChoice::Never,
            Some(ColorWhen::Auto) | None => clap::ColorChoice::Auto,
        };
        let mut command = Cli::command().color(choice);
        let parsed = command.try_get_matches_from_mut(args).and_then(|mut m| Cli::from_arg_matches_mut(&mut m));
        parsed.unwrap_or_else(|e| e.format(&mut command).exit())
    }
}

/// The last `--color WHEN` or `--color=WHEN` before a `--`, if any and valid (an invalid one is clap's to refuse).
fn color_asked(args: &[std::ffi::OsString]) -> Option<ColorWhen> {
    use clap::ValueEnum;
    let mut asked = None;
    let mut words = args.iter().map(|a| a.to_str().unwrap_or_default()).take_while(|a| *a != "--");
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--color") {
            Some("") => words.next(),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        if let Some(when) = value.and_then(|v| ColorWhen::from_str(v, false).ok()) {
            asked = Some(when);
        }
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_colour_choice_is_read_before_clap_parses() {
        let asked = |argv: &[&str]| color_asked(&argv.iter().map(std::ffi::OsString::from).collect::<Vec<_>>());
        assert_eq!(asked(&["streamcap", "run", "--color", "never"]), Some(ColorWhen::Never));
        assert_eq!(asked(&["streamcap", "--color=always", "check"]), Some(ColorWhen::Always));
        assert_eq!(asked(&["streamcap", "--color=always", "--color", "never"]), Some(ColorWhen::Never));
        assert_eq!(asked(&["streamcap", "run", "--", "--color=never"]), None);
        assert_eq!(asked(&["streamcap", "--color", "purple"]), None);
        assert_eq!(asked(&["streamcap", "--colour-me"]), None);
        let cli = Cli::parse_from(["streamcap", "report", "r.json", "--color", "never"]);
        assert_eq!(cli.color, ColorWhen::Never);
    }
}
