//! The streamcap binary: parse the command line, hand it to `app::run`, print any error, pick the exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    // On a thread whose stack streamcap chooses: the main thread's is whatever `ulimit -s` says.
    streamcap::app::with_command_stack(|| {
        let cli = streamcap::cli::Cli::parse_coloured();
        match streamcap::app::run(cli) {
            Ok(code) => code,
            Err(error) => {
                // Messages quote job files and results: escape what a terminal would act on.
                eprintln!("error: {}", streamcap::escape::for_terminal(&format!("{error:#}")));
                ExitCode::from(2)
            }
        }
    })
}
