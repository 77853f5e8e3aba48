//! The output-file rule (issue 25, items 1, 2, 4 and the FIFO of 12): every writing flag of every command, run
//! against a table of hostile paths — /dev/null, a FIFO (with a timeout, so a hang fails), a directory, a
//! symlink in a 1777 directory to a root-owned mode-600 file, a dangling symlink, the command's own input, a new
//! name under /dev — must exit 2 and leave the victim byte-identical; `-` must put the output on stdout. The
//! history database gets its own table. Before the fix, `plan --json` renamed over /dev/null, a FIFO and its own
//! catalogue, `--csv`/`--html` followed symlinks, `--html FIFO` hung, and `--history-db /dev/null` wrote into /dev.

mod common;

use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{is_root, streamcap};

/// The hostile things put where an output goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hostile {
    DevNull,
    Fifo,
    Directory,
    SymlinkToRootFile,
    DanglingSymlink,
    UnderDev,
    OwnInput,
    Stdout,
}

const ALL: [Hostile; 8] = [
    Hostile::DevNull,
    Hostile::Fifo,
    Hostile::Directory,
    Hostile::SymlinkToRootFile,
    Hostile::DanglingSymlink,
    Hostile::UnderDev,
    Hostile::OwnInput,
    Hostile::Stdout,
];

/// What the test prepared: where a target directory, a job file, a result, a catalogue and a kept run are.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let sandbox = Sandbox { dir: tempfile::tempdir().unwrap() };
        let p = sandbox.path();
        std::fs::create_dir(p.join("t")).unwrap();
        std::fs::create_dir(p.join("kept")).unwrap();
        std::fs::write(p.join("job.toml"), "[[phase]]\nrw = \"write\"\nsize = \"8M\"\nbs = \"1M\"\n").unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/result-v1.json");
        std::fs::copy(&fixture, p.join("r.json")).unwrap();
        std::fs::copy(&fixture, p.join("r2.json")).unwrap();
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/drives.toml"), p.join("c.toml")).unwrap();
        streamcap()
            .arg("run")
            .arg(p.join("kept"))
            .args(["--rw", "write", "--size", "8M", "--bs", "1M", "--verify", "crc32c", "--keep", "--quiet"])
            .assert()
            .success();
        let sticky = p.join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        sandbox
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// One writing flag of one command: its arguments given the output path, its input (if it has one), and what
/// its output looks like on stdout.
struct Writer {
    name: &'static str,
    flag: &'static str,
    args: fn(&Path, &Path) -> Vec<OsString>,
    input: Option<&'static str>,
    /// `-` is tested (the others cost a full check, or devices).
    stdout: Option<fn(&[u8]) -> bool>,
}

fn os(parts: &[&str]) -> Vec<OsString> {
    parts.iter().map(OsString::from).collect()
}

fn with(mut args: Vec<OsString>, flag: &str, out: &Path) -> Vec<OsString> {
    args.push(flag.into());
    args.push(out.into());
    args
}

fn at(p: &Path, name: &str) -> String {
    p.join(name).display().to_string()
}

fn is_json(out: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(out).is_ok()
}

fn is_csv(out: &[u8]) -> bool {
    out.starts_with(b"phase,phase_name,")
}

fn is_html(out: &[u8]) -> bool {
    out.starts_with(b"<!DOCTYPE html>")
}

fn run_job(p: &Path) -> Vec<OsString> {
    os(&["run", &at(p, "t"), "--job", &at(p, "job.toml"), "--quiet"])
}

fn streams(p: &Path) -> Vec<OsString> {
    os(&["streams", &at(p, "t"), "--bitrate", "1Mbit", "--count", "2", "--duration", "1s", "--chunk", "64k"])
        .into_iter()
        .chain(os(&["--buffer", "1s", "--prebuffer", "250ms", "--media-length", "4s", "--quiet"]))
        .collect()
}

fn writers() -> Vec<Writer> {
    vec![
        Writer {
            name: "run",
            flag: "--json",
            args: |p, o| with(run_job(p), "--json", o),
            input: Some("job.toml"),
            stdout: Some(is_json),
        },
        Writer {
            name: "run",
            flag: "--csv",
            args: |p, o| with(run_job(p), "--csv", o),
            input: Some("job.toml"),
            stdout: Some(is_csv),
        },
        Writer {
            name: "run",
            flag: "--html",
            args: |p, o| with(run_job(p), "--html", o),
            input: Some("job.toml"),
            stdout: Some(is_html),
        },
        Writer {
            name: "run --verify-only",
            flag: "--json",
            args: |p, o| with(os(&["run", &at(p, "kept"), "--verify-only", "crc32c"]), "--json", o),
            input: None,
            stdout: Some(is_json),
        },
        Writer {
            name: "streams",
            flag: "--json",
            args: |p, o| with(streams(p), "--json", o),
            input: None,
            stdout: Some(is_json),
        },
        Writer {
            name: "streams",
            flag: "--html",
            args: |p, o| with(streams(p), "--html", o),
            input: None,
            stdout: Some(is_html),
        },
        Writer {
            name: "check",
            flag: "--json",
            args: |p, o| with(os(&["check", &at(p, "t"), "--quick", "--no-html"]), "--json", o),
            input: None,
            stdout: None,
        },
        Writer {
            name: "check",
            flag: "--html",
            args: |p, o| with(os(&["check", &at(p, "t"), "--quick"]), "--html", o),
            input: None,
            stdout: None,
        },
        Writer {
            name: "cache",
            flag: "--json",
            args: |p, o| with(os(&["cache", &at(p, "t"), "--size", "64M", "--runtime", "300ms"]), "--json", o),
            input: None,
            stdout: None,
        },
        Writer {
            name: "cache",
            flag: "--html",
            args: |p, o| with(os(&["cache", &at(p, "t"), "--size", "64M", "--runtime", "300ms"]), "--html", o),
            input: None,
            stdout: None,
        },
        Writer {
            name: "sweep",
            flag: "--json",
            args: |p, o| with(os(&["sweep", &at(p, "t"), "--sizes", "1M", "--records", "1M"]), "--json", o),
            input: None,
            stdout: Some(is_json),
        },
        Writer {
            name: "sweep",
            flag: "--html",
            args: |p, o| with(os(&["sweep", &at(p, "t"), "--sizes", "1M", "--records", "1M"]), "--html", o),
            input: None,
            stdout: Some(is_html),
        },
        Writer {
            name: "inspect",
            flag: "--json",
            args: |p, o| with(os(&["inspect", &at(p, "r.json")]), "--json", o),
            input: Some("r.json"),
            stdout: Some(is_json),
        },
        Writer {
            name: "report",
            flag: "--html",
            args: |p, o| with(os(&["report", &at(p, "r.json")]), "--html", o),
            input: Some("r.json"),
            stdout: Some(is_html),
        },
        Writer {
            name: "compare",
            flag: "--html",
            args: |p, o| with(os(&["compare", &at(p, "r.json"), &at(p, "r2.json")]), "--html", o),
            input: Some("r.json"),
            stdout: Some(is_html),
        },
        Writer {
            name: "plan",
            flag: "--json",
            args: |p, o| with(os(&["plan", "--drives", &at(p, "c.toml")]), "--json", o),
            input: Some("c.toml"),
            stdout: Some(is_json),
        },
        Writer {
            name: "trial",
            flag: "--json",
            args: |p, o| {
                let devices = ["/dev/streamcap-outputs-none-a", "/dev/streamcap-outputs-none-b"];
                let args =
                    os(&["trial", devices[0], devices[1], "--layouts", "raid1", "--drives", &at(p, "c.toml"), "--yes"]);
                with(args, "--json", o)
            },
            input: Some("c.toml"),
            stdout: None,
        },
    ]
}

/// What must be as it was after the command.
enum Victim {
    CharDevice(PathBuf),
    Fifo(PathBuf),
    EmptyDir(PathBuf),
    Bytes(PathBuf, Vec<u8>),
    /// A symlink that must stay one, and the file it points to, which must keep its bytes.
    Link(PathBuf, PathBuf, Vec<u8>),
    Absent(PathBuf),
    Nothing,
}

/// Puts `hostile` where an output named `name` goes; returns the path to give and what to check after.
fn prepare(sandbox: &Sandbox, hostile: Hostile, name: &str, input: Option<&str>) -> Option<(PathBuf, Victim)> {
    let p = sandbox.path();
    let here = p.join(name);
    Some(match hostile {
        Hostile::DevNull => (PathBuf::from("/dev/null"), Victim::CharDevice("/dev/null".into())),
        Hostile::Fifo => {
            rustix::fs::mknodat(rustix::fs::CWD, &here, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
            (here.clone(), Victim::Fifo(here))
        }
        Hostile::Directory => {
            std::fs::create_dir(&here).unwrap();
            (here.clone(), Victim::EmptyDir(here))
        }
        Hostile::SymlinkToRootFile => {
            let victim = p.join("sticky").join(format!("{name}.victim"));
            std::fs::write(&victim, b"root's own data\n").unwrap();
            std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
            let link = p.join("sticky").join(name);
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            if is_root() {
                // Another user's link, as in the audit (`nobody`).
                std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            }
            (link.clone(), Victim::Link(link, victim, b"root's own data\n".to_vec()))
        }
        Hostile::DanglingSymlink => {
            let nowhere = p.join(format!("{name}.nowhere"));
            std::os::unix::fs::symlink(&nowhere, &here).unwrap();
            (here, Victim::Absent(nowhere))
        }
        Hostile::UnderDev => {
            let path = PathBuf::from(format!("/dev/streamcap-outputs-{}-{name}", std::process::id()));
            (path.clone(), Victim::Absent(path))
        }
        Hostile::OwnInput => {
            let input = p.join(input?);
            let bytes = std::fs::read(&input).unwrap();
            (input.clone(), Victim::Bytes(input, bytes))
        }
        Hostile::Stdout => (PathBuf::from("-"), Victim::Nothing),
    })
}

/// What is wrong with the victim after the command, if anything.
fn victim_problem(victim: &Victim) -> Option<String> {
    let meta = |p: &Path| std::fs::symlink_metadata(p).ok();
    match victim {
        Victim::CharDevice(p) => (!meta(p).is_some_and(|m| m.file_type().is_char_device()))
            .then(|| format!("{} is no longer a device", p.display())),
        Victim::Fifo(p) => {
            (!meta(p).is_some_and(|m| m.file_type().is_fifo())).then(|| format!("{} is no longer a FIFO", p.display()))
        }
        Victim::EmptyDir(p) => (std::fs::read_dir(p).map_or(true, |mut d| d.next().is_some()))
            .then(|| format!("{} is not an empty directory any more", p.display())),
        Victim::Bytes(p, bytes) => {
            (std::fs::read(p).ok().as_ref() != Some(bytes)).then(|| format!("{} changed", p.display()))
        }
        Victim::Link(link, file, bytes) => {
            if !meta(link).is_some_and(|m| m.file_type().is_symlink()) {
                Some(format!("{} is no longer a symlink", link.display()))
            } else {
                (std::fs::read(file).ok().as_ref() != Some(bytes)).then(|| format!("{} changed", file.display()))
            }
        }
        Victim::Absent(p) => meta(p).map(|_| format!("{} was created", p.display())),
        Victim::Nothing => None,
    }
}

/// Runs `args` in the sandbox (with a timeout: a hang on a FIFO is a failure) and says what went wrong.
fn attempt(
    sandbox: &Sandbox,
    args: &[OsString],
    path: &Path,
    hostile: Hostile,
    check_stdout: Option<fn(&[u8]) -> bool>,
) -> Option<String> {
    let output = streamcap().current_dir(sandbox.path()).args(args).timeout(Duration::from_secs(120)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    match hostile {
        Hostile::Stdout if output.status.code() != Some(0) => {
            Some(format!("exit {:?}: {stderr}", output.status.code()))
        }
        Hostile::Stdout if !check_stdout.is_some_and(|ok| ok(&output.stdout)) => Some(format!(
            "stdout is not the output: {:?}",
            String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(200)])
        )),
        Hostile::Stdout => None,
        _ if output.status.code() != Some(2) => {
            Some(format!("exit {:?} (a hang is killed): {stderr}", output.status.code()))
        }
        // Refused for this path, not for another reason.
        _ if !stderr.contains("error:") || !stderr.contains(&path.display().to_string()) => {
            Some(format!("no error naming {}: {stderr}", path.display()))
        }
        _ => None,
    }
}

#[test]
fn hostile_output_paths_are_refused_by_every_writing_flag_of_every_command() {
    let sandbox = Sandbox::new();
    let (mut tried, mut failures) = (0, Vec::new());
    for writer in writers() {
        for hostile in ALL {
            if hostile == Hostile::Stdout && writer.stdout.is_none() {
                continue;
            }
            let name = format!("{}-{}-{hostile:?}", writer.name.replace(' ', ""), writer.flag.trim_start_matches('-'));
            let Some((path, victim)) = prepare(&sandbox, hostile, &name, writer.input) else { continue };
            tried += 1;
            let args = (writer.args)(sandbox.path(), &path);
            let case = format!("{} {} {hostile:?}", writer.name, writer.flag);
            let problems: Vec<String> =
                [attempt(&sandbox, &args, &path, hostile, writer.stdout), victim_problem(&victim)]
                    .into_iter()
                    .flatten()
                    .collect();
            if !problems.is_empty() {
                failures.push(format!("{case}: {}", problems.join("; ")));
            }
        }
    }
    eprintln!("hostile output paths: {tried} tried, {} failed", failures.len());
    assert!(failures.is_empty(), "{} of {tried} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(common::entries(&sandbox.path().join("t")).is_empty(), "nothing left in the target");
}

#[test]
fn fio_logs_follow_the_output_rule_too() {
    // write_bw_log names its file PREFIX_bw.1.log in the working directory: a symlink, FIFO, directory or /dev
    // name there is refused before the run, as every other output.
    let sandbox = Sandbox::new();
    let mut failures = Vec::new();
    let hostiles =
        [Hostile::Fifo, Hostile::Directory, Hostile::SymlinkToRootFile, Hostile::DanglingSymlink, Hostile::UnderDev];
    for hostile in hostiles {
        let name = format!("lg{hostile:?}_bw.1.log");
        let (path, victim) = prepare(&sandbox, hostile, &name, None).unwrap();
        let prefix = path.to_str().unwrap().trim_end_matches("_bw.1.log").to_string();
        let job = sandbox.path().join(format!("{hostile:?}.fio"));
        std::fs::write(&job, format!("[j]\nrw=write\nbs=1m\nsize=8m\nwrite_bw_log={prefix}\n")).unwrap();
        let args = os(&["run", &at(sandbox.path(), "t"), "--job", job.to_str().unwrap(), "--quiet"]);
        if let Some(problem) = attempt(&sandbox, &args, &path, hostile, None).or_else(|| victim_problem(&victim)) {
            failures.push(format!("write_bw_log {hostile:?}: {problem}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn hostile_history_databases_are_refused_and_nothing_is_written_beside_them() {
    // Broke: `--history-db /dev/null` wrote /dev/pending/….json and /dev/null-journal into /dev.
    let sandbox = Sandbox::new();
    let mut failures = Vec::new();
    let hostiles = [
        Hostile::DevNull,
        Hostile::Fifo,
        Hostile::Directory,
        Hostile::SymlinkToRootFile,
        Hostile::DanglingSymlink,
        Hostile::UnderDev,
    ];
    let beside_dev = ["/dev/pending", "/dev/null-journal"].map(|p| (p, Path::new(p).exists()));
    for hostile in hostiles {
        let (path, victim) = prepare(&sandbox, hostile, &format!("h-{hostile:?}.db"), None).unwrap();
        for command in [run_job(sandbox.path()), os(&["history"])] {
            let mut cmd = streamcap();
            cmd.env_remove("STREAMCAP_NO_HISTORY")
                .current_dir(sandbox.path())
                .args(&command)
                .arg("--history-db")
                .arg(&path);
            let output = cmd.timeout(Duration::from_secs(120)).output().unwrap();
            if output.status.code() != Some(2) {
                failures.push(format!("{} {hostile:?}: exit {:?}", command[0].to_string_lossy(), output.status.code()));
            }
        }
        failures.extend(victim_problem(&victim).map(|p| format!("{hostile:?}: {p}")));
    }
    // The database's side files may not be links either.
    let db = sandbox.path().join("side.db");
    let victim = sandbox.path().join("side-victim");
    std::fs::write(&victim, "keep\n").unwrap();
    std::os::unix::fs::symlink(&victim, sandbox.path().join("side.db-journal")).unwrap();
    let output = streamcap()
        .env_remove("STREAMCAP_NO_HISTORY")
        .args(run_job(sandbox.path()))
        .arg("--history-db")
        .arg(&db)
        .output()
        .unwrap();
    if output.status.code() != Some(2) || std::fs::read_to_string(&victim).unwrap() != "keep\n" || db.exists() {
        failures.push(format!("a symlinked journal: exit {:?}", output.status.code()));
    }
    for (path, existed) in beside_dev {
        if !existed && Path::new(path).exists() {
            failures.push(format!("{path} was created"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn plan_json_never_replaces_dev_null_a_fifo_or_the_catalogue_it_reads() {
    // Broke (issue 25, item 1): `plan --json PATH` renamed its output over whatever was there — as root it
    // replaced /dev/null with a regular file, `--json c.toml` replaced the catalogue being read, a FIFO became
    // a regular file.
    let sandbox = Sandbox::new();
    let catalogue = sandbox.path().join("c.toml");
    let before = std::fs::read(&catalogue).unwrap();
    let fifo = sandbox.path().join("plan.fifo");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
    for out in [Path::new("/dev/null"), catalogue.as_path(), fifo.as_path()] {
        streamcap().arg("plan").arg("--drives").arg(&catalogue).arg("--json").arg(out).assert().code(2);
    }
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(std::fs::read(&catalogue).unwrap(), before);
}

#[test]
fn csv_and_html_never_follow_another_users_symlink_in_a_sticky_directory() {
    // Broke (issue 25, item 2): another user's symlink r.csv → a mode-600 root file in a 1777 directory made a
    // root run overwrite that file.
    let sandbox = Sandbox::new();
    for flag in ["--csv", "--html"] {
        let (link, victim) = prepare(&sandbox, Hostile::SymlinkToRootFile, &format!("r{flag}"), None).unwrap();
        let output = streamcap().args(run_job(sandbox.path())).arg(flag).arg(&link).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("is a symbolic link"), "{flag}");
        assert_eq!(victim_problem(&victim), None, "{flag}");
    }
}

#[test]
fn html_to_a_fifo_is_refused_at_once_instead_of_hanging() {
    // Broke (issue 25, item 12): `--html FIFO` hung at the end of the run and ignored the first SIGTERM.
    let sandbox = Sandbox::new();
    let (fifo, victim) = prepare(&sandbox, Hostile::Fifo, "page.html", None).unwrap();
    let output = streamcap()
        .args(run_job(sandbox.path()))
        .arg("--html")
        .arg(&fifo)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("named pipe (FIFO)"));
    assert_eq!(victim_problem(&victim), None);
}

#[test]
fn json_to_stdout_leaves_stdout_to_the_json_and_the_summary_to_stderr() {
    // Issue 30: `--json -` created a file named `-`.
    let sandbox = Sandbox::new();
    let output =
        streamcap().current_dir(sandbox.path()).args(run_job(sandbox.path())).args(["--json", "-"]).output().unwrap();
    assert!(output.status.success());
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is exactly the JSON");
    assert_eq!(result["status"], "completed");
    assert!(!sandbox.path().join("-").exists());
    // fio's JSON is printed on stdout too: the two cannot share it.
    let both =
        streamcap().args(run_job(sandbox.path())).args(["--json", "-", "--format", "fio-json"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("give --json a file"));
}
