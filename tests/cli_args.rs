//! The command line as users type it, one fact in one place: every command's `--help` still lists the flags,
//! aliases and value names it listed (pinned in `tests/fixtures/cli-flags.txt`; `UPDATE_SNAPSHOTS=1` rewrites
//! it after an intended change), and every command that takes `--engine` takes the same names, plans the same
//! engine for each and refuses a wrong one with the same words. No devices, no I/O: dry runs in a temp dir.

mod common;

use std::collections::BTreeMap;

use common::{entries, skip, streamcap};

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
    &["completions"],
    &["man"],
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

/// What bash offers after `words` (the last one being completed), with the script `streamcap completions bash`
/// printed loaded into a real bash, as `source <(streamcap completions bash)` loads it.
fn bash_completes(words: &[&str]) -> Vec<String> {
    let script = streamcap().args(["completions", "bash"]).output().unwrap();
    assert!(script.status.success(), "{}", String::from_utf8_lossy(&script.stderr));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamcap.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let line = words.join(" ");
    let program = format!(
        "source {path}\ncomplete -p streamcap >/dev/null || exit 3\nCOMP_WORDS=({line}); COMP_CWORD={cword}; \
         COMP_LINE='{line}'; COMP_POINT={point}\n_streamcap streamcap '{cur}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path = path.display(),
        cword = words.len() - 1,
        point = line.len(),
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let output = std::process::Command::new("bash").args(["--norc", "--noprofile", "-c", &program]).output().unwrap();
    assert!(output.status.success(), "bash: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    if std::process::Command::new("bash").arg("--version").output().is_err() {
        return skip("bash is not installed");
    }
    assert_eq!(bash_completes(&["streamcap", "ch"]), ["check"]);
    let offered = bash_completes(&["streamcap", "co"]);
    assert!(offered.contains(&"compare".to_string()) && offered.contains(&"completions".to_string()), "{offered:?}");
    let offered = bash_completes(&["streamcap", "check", "--li"]);
    assert_eq!(offered, ["--library", "--library-size"]);
    assert_eq!(bash_completes(&["streamcap", "completions", "fi"]), ["fish"]);
}

#[test]
fn every_shell_has_a_script_and_a_wrong_one_is_refused() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = streamcap().args(["completions", shell]).output().unwrap();
        assert!(output.status.success() && output.stdout.len() > 1000, "{shell}");
    }
    let output = streamcap().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("[possible values: bash, zsh, fish, powershell, elvish]"));
}

/// `streamcap man` writes roff that man(1) reads; `man check` one command's page with its flags.
#[test]
fn the_man_pages_render() {
    let page = streamcap().args(["man", "check"]).output().unwrap();
    assert!(page.status.success());
    let roff = String::from_utf8(page.stdout).unwrap();
    assert!(roff.contains(".TH streamcap-check 1") && roff.contains("\\-\\-library"), "{roff}");
    let output = streamcap().args(["man", "nosuch"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("there is no command 'nosuch'"));
    if std::process::Command::new("man").arg("--version").output().is_err() {
        return skip("man is not installed: the roff was checked, not its rendering");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamcap-check.1");
    std::fs::write(&path, roff).unwrap();
    let shown = std::process::Command::new("man")
        .arg("-l")
        .arg(&path)
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success() && text.contains("--library") && text.contains("NAME"), "{text}");
}

/// `--version` says the commit, the build date and the features, as `curl -V` and `rustc -vV` do; `-V` says
/// the first two on one line.
#[test]
fn the_version_names_the_commit_the_build_date_and_the_features() {
    let long = String::from_utf8(streamcap().arg("--version").output().unwrap().stdout).unwrap();
    let field = |name: &str| {
        long.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or_else(|| panic!("no {name}: {long}"))
    };
    let commit = field("commit:");
    // "(dirty)" when the sources it was built from differ from the commit (a figure measured with it says so).
    let hash = commit.strip_suffix(" (dirty)").unwrap_or(commit);
    assert!(hash == "unknown" || (hash.len() == 10 && hash.chars().all(|c| c.is_ascii_hexdigit())), "{long}");
    let date = field("built:");
    let parts: Vec<&str> = date.split('-').collect();
    assert!(parts.len() == 3 && parts[0].len() == 4 && parts.iter().all(|p| p.parse::<u32>().is_ok()), "{long}");
    let features = field("features:");
    assert!(features.contains("+io_uring") && (features.contains("-mpi") || features.contains("+mpi")), "{long}");
    let short = String::from_utf8(streamcap().arg("-V").output().unwrap().stdout).unwrap();
    assert_eq!(short.trim(), format!("streamcap {} ({commit} {date})", env!("CARGO_PKG_VERSION")));
}

/// `--color` reaches clap's own messages (read before clap parses): always colours an error even into a pipe,
/// never leaves it plain; `-v` prints the plan on stderr before a run and `-q -v` is refused.
#[test]
fn color_and_verbose_do_what_they_say() {
    let refusal = |when: &str| {
        let output = streamcap().args(["run", "--bogus", "--color", when]).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        String::from_utf8(output.stderr).unwrap()
    };
    assert!(refusal("always").contains("\u{1b}["), "{:?}", refusal("always"));
    let plain = refusal("never");
    assert!(!plain.contains('\u{1b}') && plain.starts_with("error: "), "{plain:?}");
    let dir = tempfile::tempdir().unwrap();
    let output = streamcap()
        .arg("run")
        .arg(dir.path())
        .args(["--rw", "read", "--bs", "1M", "--size", "4M", "--runtime", "200ms", "-v", "--color", "never"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("phase 1: seq-read 1M qd1") && !stderr.contains('\u{1b}'), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("phase 1:"), "the plan goes to stderr");
    let both = streamcap().arg("run").arg(dir.path()).args(["-q", "-v"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(entries(dir.path()).is_empty());
}
