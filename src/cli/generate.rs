//! `streamcap completions SHELL` and `streamcap man`: shell completion scripts (clap_complete) and the roff man
//! page (clap_mangen), both generated from the very `Command` clap parses with, so they cannot fall behind a
//! flag. They only write text to the writer they are given; where it goes (stdout, a closed pipe) is app's.

use std::io::Write;

use clap::{Args, CommandFactory, ValueEnum};

use super::Cli;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    source <(streamcap completions bash)                                   this shell only\n  \
    streamcap completions bash > ~/.local/share/bash-completion/completions/streamcap\n  \
    streamcap completions zsh > ~/.zfunc/_streamcap        (with fpath+=~/.zfunc before compinit)\n  \
    streamcap completions fish > ~/.config/fish/completions/streamcap.fish")]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap man | man -l -                  the whole tool\n  \
    streamcap man check | man -l -            one command, every flag\n  \
    streamcap man > /usr/local/share/man/man1/streamcap.1\n  \
    streamcap man check > /usr/local/share/man/man1/streamcap-check.1")]
pub struct ManArgs {
    /// A subcommand: its own page, streamcap-COMMAND(1), with every flag. Without it: streamcap(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// The shells completion scripts are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl From<Shell> for clap_complete::Shell {
    fn from(shell: Shell) -> Self {
        match shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Powershell => clap_complete::Shell::PowerShell,
            Shell::Elvish => clap_complete::Shell::Elvish,
        }
    }
}

/// Writes the completion script of `shell` for every subcommand and flag.
pub fn write_completions(shell: Shell, out: &mut dyn Write) {
    let mut command = Cli::command();
    clap_complete::generate(clap_complete::Shell::from(shell), &mut command, "streamcap", out);
}

/// Writes the man page streamcap(1), or streamcap-COMMAND(1) for a subcommand (its flags with the same words as
/// `--help`). An unknown COMMAND is an error naming the ones there are.
pub fn write_man(command: Option<&str>, out: &mut dyn Write) -> Result<(), ManError> {
    let top = Cli::command();
    let page = match command {
        None => top,
        Some(name) => {
            let Some(sub) = top.find_subcommand(name) else {
                let names: Vec<&str> = top.get_subcommands().map(clap::Command::get_name).collect();
                return Err(ManError::Unknown(name.to_string(), names.join(", ")));
            };
            let full = format!("streamcap-{}", sub.get_name());
            sub.clone().bin_name(format!("streamcap {}", sub.get_name())).display_name(full)
        }
    };
    let source = format!("streamcap {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(page).source(source).render(out).map_err(ManError::Write)
}

/// Why `streamcap man` wrote no page.
#[derive(Debug, thiserror::Error)]
pub enum ManError {
    #[error("there is no command '{0}': give one of {1}, or none for the page of streamcap itself")]
    Unknown(String, String),
    #[error("cannot write the man page: {0}")]
    Write(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for shell in Shell::value_variants() {
            let mut script = Vec::new();
            write_completions(*shell, &mut script);
            let script = String::from_utf8(script).expect("completion scripts are text");
            for word in ["check", "compare", "history", "--json"] {
                assert!(script.contains(word), "{shell:?} lacks {word}");
            }
        }
    }

    #[test]
    fn the_man_page_has_every_subcommand_and_its_flags() {
        let page = |command: Option<&str>| {
            let mut page = Vec::new();
            write_man(command, &mut page).expect("writing to a Vec cannot fail");
            String::from_utf8(page).expect("roff is text")
        };
        let top = page(None);
        for word in [".TH streamcap 1", "streamcap\\-check(1)", "streamcap\\-compare(1)"] {
            assert!(top.contains(word), "streamcap(1) lacks {word}:\n{top}");
        }
        let check = page(Some("check"));
        for word in [".TH streamcap-check 1  \"streamcap 0.1", "\\-\\-library", "\\-\\-quick"] {
            assert!(check.contains(word), "streamcap-check(1) lacks {word}:\n{check}");
        }
        let mut nothing = Vec::new();
        let refused = write_man(Some("chekc"), &mut nothing).expect_err("no such command").to_string();
        assert!(refused.contains("'chekc'") && refused.contains("check, run"), "{refused}");
        assert!(nothing.is_empty());
    }
}
