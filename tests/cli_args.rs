//! The command line as users type it, one fact in one place: every command's `--help` still lists the flags,
//! aliases and value names it listed (pinned in `tests/fixtures/cli-flags.txt`; `UPDATE_SNAPSHOTS=1` rewrites
//! it after an intended change), and every command that takes `--engine` takes the same names, plans the same
//! engine for each and refuses a wrong one with the same words. No devices, no I/O: dry runs in a temp dir.

mod common;

use std::collections::BTreeMap;

use common::{entries, streamcap};

/// Every command and subcommand whose flags are pinned, as typed after `streamcap`.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["check"],
    &["run"],
    &["report"],
    &["compare"],
    &["history"],
    &["history", "show"],
    &["history", "trend"],
    &["streams"],
    &["plan"],
    &["inspect"],
    &["cache"],
    &["sweep"],
    &["trial"],
];

/// The option lines of a `--help` text: each flag with its short form and value name (`-q, --quiet`,
/// `--json <FILE>`), and any visible alias, sorted. The help words are left out: they may be
/// reworded, the flags may not silently go or change.
fn flags_of(help: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        // Options begin at column 2 (`-q, --quiet`) or 6 (`--json`); deeper lines are wrapped help words.
        if (indent == 2 || indent == 6)
            && (trimmed.starts_with("--") || (trimmed.starts_with('-') && trimmed.get(2..4) == Some(", ")))
        {
            // The flag column ends where two spaces begin the help words.
            let column = trimmed.split("  ").next().unwrap_or(trimmed).trim_end();
            flags.push(column.to_string());
        }
        for marker in ["[aliases: ", "[alias: "] {
            if let Some(start) = line.find(marker) {
                let rest = &line[start + marker.len()..];
                let aliases = rest.split(']').next().unwrap_or_default();
                flags.push(format!("  alias {aliases}"));
            }
        }
    }
    // Sorted: a flag may move to another heading or place in the list; it may not go.
    flags.sort();
    flags
}

fn help_of(command: &[&str]) -> String {
    let output = streamcap().args(command).arg("--help").output().unwrap();
    assert!(output.status.success(), "streamcap {command:?} --help: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn render(table: &BTreeMap<String, Vec<String>>) -> String {
    let mut text = String::new();
    for (command, flags) in table {
        text.push_str(&format!("[{command}]\n"));
        for flag in flags {
            text.push_str(&format!("{flag}\n"));
        }
    }
    text
}

#[test]
fn every_command_still_lists_its_flags() {
    let table: BTreeMap<String, Vec<String>> = COMMANDS
        .iter()
        .map(|command| (format!("streamcap {}", command.join(" ")).trim_end().to_string(), flags_of(&help_of(command))))
        .collect();
    for (command, flags) in &table {
        assert!(flags.iter().any(|f| f.contains("--help")), "{command}: no flags read from its help: {flags:?}");
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli-flags.txt");
    let now = render(&table);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let pinned = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_SNAPSHOTS=1 to create it", path.display()));
    if now != pinned {
        let gone: Vec<&str> = pinned.lines().filter(|l| !now.lines().any(|n| n == *l)).collect();
        let new: Vec<&str> = now.lines().filter(|l| !pinned.lines().any(|p| p == *l)).collect();
        panic!("the command line changed: gone {gone:#?}, new {new:#?} (UPDATE_SNAPSHOTS=1 if intended)");
    }
}

/// The engine names every command takes, and the engine the plan then names.
const ENGINES: &[(&str, &str)] = &[
    ("io_uring", "io_uring"),
    ("uring", "io_uring"),
    ("iouring", "io_uring"),
    ("sync", "sync"),
    ("psync", "sync"),
    ("null", "null"),
];

/// Regression: `streams --engine psync` was refused while `run` and `check` took it (two parsers, two lists).
#[test]
fn every_command_takes_every_engine_name() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    let commands: [&[&str]; 3] = [
        &["run", target, "--rw", "read", "--size", "16M", "--dry-run"],
        &["check", target, "--quick", "--dry-run"],
        &["streams", target, "--bitrate", "1080p", "--count", "2", "--dry-run"],
    ];
    let mut refusals = Vec::new();
    for command in commands {
        for (name, engine) in ENGINES {
            let output = streamcap().args(command).args(["--engine", name]).output().unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            if *engine == "io_uring" && stderr.contains("io_uring is not available") {
                // Refused by the plan, not by the parser: the name was taken.
                continue;
            }
            assert!(output.status.success(), "{command:?} --engine {name}: {stderr}");
            assert!(
                stdout.contains(&format!("engine {engine}")),
                "{command:?} --engine {name} plans {engine}:\n{stdout}"
            );
        }
        let output = streamcap().args(command).args(["--engine", "warp"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{command:?} --engine warp");
        let stderr = String::from_utf8_lossy(&output.stderr);
        refusals.push(stderr.lines().next().unwrap_or_default().to_string());
    }
    assert!(refusals[0].contains("'warp' is not a valid engine"), "{}", refusals[0]);
    assert!(refusals.iter().all(|r| *r == refusals[0]), "the same words everywhere: {refusals:#?}");
    assert!(entries(dir.path()).is_empty(), "dry runs create nothing");
}
