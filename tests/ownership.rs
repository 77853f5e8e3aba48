//! Own files only, exclusive use, stale work (issue 9): streamcap writes only files it created, through handles
//! on directories it owns; two runs never share a file-set tree; what a killed run left is removed by the next
//! command (media included) before it measures free space; SIGHUP stops a run like SIGTERM. The tests wait for
//! observable progress (a file appearing), never for a time.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{entries, is_root, streamcap_path};
use rustix::process::{Pid, Signal, kill_process};

fn spawn(args: &[&str], dir: &Path) -> Child {
    Command::new(streamcap_path())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start streamcap")
}

/// Polls `condition` until it holds; panics (killing the child) if the child ends first or never gets there.
fn wait_for(child: &mut Child, what: &str, condition: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(120);
    while !condition() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            panic!("streamcap ended ({status}) before {what}: {stderr}");
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("streamcap never reached: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: Signal) {
    kill_process(Pid::from_raw(child.id() as i32).expect("a child has a pid"), sig).expect("send the signal");
}

/// Waits for the child and returns its exit code (-1 for a signal) and stderr.
fn finish(child: Child) -> (i32, String) {
    let output = child.wait_with_output().expect("wait for streamcap");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).to_string())
}

/// The first file matching `pred` in any work directory under `target/.streamcap` (other entries there, such as
/// a file-set tree's lock file, are passed over).
fn work_file(target: &Path, pred: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let base = target.join(".streamcap");
    for dir in std::fs::read_dir(&base).ok()?.flatten() {
        let Ok(files) = std::fs::read_dir(dir.path()) else { continue };
        for file in files.flatten() {
            if pred(&file.file_name().to_string_lossy()) {
                return Some(file.path());
            }
        }
    }
    None
}

/// A two-phase job whose first phase writes the data set slowly enough to swap a file under it.
fn two_phase_job(dir: &Path) -> PathBuf {
    let job = dir.join("two.toml");
    std::fs::write(
        &job,
        "[global]\nsize = \"16M\"\nbs = \"1M\"\n\
         [[phase]]\nrw = \"write\"\nrate = \"4M\"\n\
         [[phase]]\nrw = \"randwrite\"\nio-size = \"16M\"\n",
    )
    .unwrap();
    job
}

fn swap_between_phases(swap: impl Fn(&Path, &Path)) {
    let target = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let job = two_phase_job(elsewhere.path());
    let mut child = spawn(&["run", ".", "--job", job.to_str().unwrap(), "--quiet"], target.path());
    let data = |n: &str| n == "data.0";
    wait_for(&mut child, "the data file exists", || work_file(target.path(), data).is_some());
    let data = work_file(target.path(), data).expect("found above");
    swap(&data, &victim);
    let (code, stderr) = finish(child);
    assert!(std::fs::read(&victim).unwrap() == b"precious", "the victim was overwritten: {stderr}");
    assert_ne!(code, 0, "phase 2 must not run on a swapped file: {stderr}");
    assert!(entries(target.path()).is_empty(), "left behind: {:?}", entries(target.path()));
}

#[test]
fn a_symlink_swapped_in_between_phases_is_not_followed() {
    // Broke: phase 2 reopened data.0 by path and followed a symlink put there during phase 1, overwriting the
    // symlink's target (exit 0).
    swap_between_phases(|data, victim| {
        let link = data.with_file_name("link");
        std::os::unix::fs::symlink(victim, &link).unwrap();
        std::fs::rename(&link, data).unwrap();
    });
}

#[test]
fn a_hard_link_swapped_in_between_phases_is_refused() {
    // The same swap with a hard link to a file elsewhere on the filesystem: no symlink to refuse, but it is not
    // the file streamcap created (device and inode differ).
    swap_between_phases(|data, victim| {
        // Both temporary directories are on the same filesystem (/tmp), so the victim can be hard-linked.
        let link = data.with_file_name("link");
        std::fs::hard_link(victim, &link).unwrap();
        std::fs::rename(&link, data).unwrap();
    });
}

fn as_nobody(script: &str) -> bool {
    Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c", script])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_streamcap_directory_of_another_user_in_a_sticky_directory_is_refused() {
    // Broke: in a world-writable sticky directory (mode 1777), another local user could pre-create a non-empty
    // `.streamcap`, swap `run-X` for a directory of theirs, and make a root-run streamcap overwrite root's files.
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        common::skip("a_streamcap_directory_of_another_user_in_a_sticky_directory_is_refused: needs root and setpriv");
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let base = shared.path().join(".streamcap");
    let script = format!("mkdir {0} && chmod 777 {0} && echo theirs > {0}/planted", base.display());
    assert!(as_nobody(&script), "nobody could not prepare {}", base.display());
    let output: Output = Command::new(streamcap_path())
        .args(["run", ".", "--rw", "write", "--size", "8M", "--quiet"])
        .current_dir(shared.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is owned by another user"), "{stderr}");
    assert_eq!(entries(&base), ["planted"], "streamcap wrote into another user's directory");
    // The same directory made by this user but left writable by everyone is refused too.
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::create_dir(&base).unwrap();
    std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let output = Command::new(streamcap_path())
        .args(["run", ".", "--rw", "write", "--size", "8M", "--quiet"])
        .current_dir(shared.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("writable by other users"));
    assert!(entries(&base).is_empty());
}

fn fileset_job(dir: &Path, anchor: &Path, runtime: &str) -> PathBuf {
    let job = dir.join(format!("tree-{runtime}.toml"));
    let text = format!(
        "[[phase]]\nruntime = \"{runtime}\"\n[phase.fileset]\nformat = \"yes\"\nrate = \"50\"\n\
         [[phase.fileset.tree]]\nname = \"shared\"\nanchor = \"{}\"\ndepth = 1\nwidth = 2\nfiles = 20\nsize = \"4k\"\n\
         [[phase.fileset.workload]]\noperation = \"read\"\nxfersize = \"4k\"\nthreads = 1\n",
        anchor.display()
    );
    std::fs::write(&job, text).unwrap();
    job
}

#[test]
fn two_file_set_runs_never_share_a_tree() {
    // Broke: a second file-set run on the same anchor reformatted the first's live tree, and the first then
    // reported a false "not made by streamcap" error.
    let anchor = tempfile::tempdir().unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let long = fileset_job(jobs.path(), anchor.path(), "6s");
    let short = fileset_job(jobs.path(), anchor.path(), "1s");
    let mut first = spawn(&["run", ".", "--job", long.to_str().unwrap(), "--quiet"], jobs.path());
    let tree = anchor.path().join(".streamcap/fileset-shared");
    wait_for(&mut first, "the first run formatted its tree", || tree.join(".streamcap-fileset").exists());
    let second = spawn(&["run", ".", "--job", short.to_str().unwrap(), "--quiet"], jobs.path());
    let (code, stderr) = finish(second);
    assert_eq!(code, 2, "{stderr}");
    let holder = format!("pid {}", first.id());
    assert!(stderr.contains("in use by another streamcap run") && stderr.contains(&holder), "{stderr}");
    // With --wait the next run waits for the first to finish, then runs.
    let waiting = spawn(&["run", ".", "--job", short.to_str().unwrap(), "--quiet", "--wait"], jobs.path());
    let (code, stderr) = finish(first);
    assert_eq!(code, 0, "the first run was disturbed: {stderr}");
    let (code, stderr) = finish(waiting);
    assert_eq!(code, 0, "{stderr}");
    assert!(entries(anchor.path()).is_empty(), "left behind: {:?}", entries(anchor.path()));
}

/// Starts `args` in `target`, waits until a file matching `pred` is in its work directory, and kills it.
fn kill_when(args: &[&str], target: &Path, what: &str, pred: impl Fn(&str) -> bool + Copy) {
    let mut child = spawn(args, target);
    wait_for(&mut child, what, || work_file(target, pred).is_some());
    signal(&child, Signal::KILL);
    let (code, _) = finish(child);
    assert_eq!(code, -1, "killed by SIGKILL");
    assert!(work_file(target, pred).is_some(), "the killed run left its files");
}

/// The next command removes every leftover and says so.
fn next_run_cleans(target: &Path) {
    let output = Command::new(streamcap_path())
        .args(["run", ".", "--rw", "read", "--size", "8M", "--runtime", "1s"])
        .current_dir(target)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("earlier run(s) (killed, crashed, or whose clean-up failed) left") && stderr.contains("freed"),
        "{stderr}"
    );
    assert!(entries(target).is_empty(), "left behind: {:?}", entries(target));
}

#[test]
fn media_of_a_killed_streams_run_is_removed_by_the_next_command() {
    // Broke: after SIGKILL of `streams`, the next run removed the marker but not the media (hundreds of MB),
    // which then stayed forever, unrecognisable.
    let target = tempfile::tempdir().unwrap();
    let args =
        ["streams", ".", "--bitrate", "40Mbit", "--count", "2", "--duration", "60s", "--media-length", "10s", "-q"];
    kill_when(&args, target.path(), "the test media is written", |n| n.starts_with("media-"));
    next_run_cleans(target.path());
}

#[test]
fn data_of_a_killed_check_is_removed_by_the_next_command() {
    let target = tempfile::tempdir().unwrap();
    kill_when(&["check", ".", "--quick", "--quiet"], target.path(), "check writes its data", |n| {
        n.starts_with("data.")
    });
    next_run_cleans(target.path());
}

#[test]
fn leftovers_are_removed_before_the_free_space_check() {
    // Broke: a killed run's leftovers made the next run's free-space check fail before its clean-up (which came
    // later) would have freed the space.
    if !is_root() {
        common::skip("leftovers_are_removed_before_the_free_space_check: needs root to mount a small tmpfs");
        return;
    }
    let point = tempfile::tempdir().unwrap();
    let _mount = common::Mount::new("tmpfs", point.path(), &["-t", "tmpfs", "-o", "size=200m"]);
    kill_when(
        &["run", ".", "--rw", "write", "--size", "120M", "--bs", "1M", "--rate", "20M", "--quiet"],
        point.path(),
        "the data file is being written",
        |n| n == "data.0",
    );
    // 120 MiB left plus 64 MiB of data and the 64 MiB reserve would not fit in 200 MiB.
    let output = Command::new(streamcap_path())
        .args(["run", ".", "--rw", "write", "--size", "64M", "--bs", "1M"])
        .current_dir(point.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("earlier run(s) (killed, crashed, or whose clean-up failed) left"), "{stderr}");
    assert!(entries(point.path()).is_empty());
}

#[test]
fn sighup_stops_a_run_like_sigterm() {
    // Broke: SIGHUP (a closed terminal or SSH session) killed the run outright, leaving its data files.
    let target = tempfile::tempdir().unwrap();
    let mut child = spawn(&["run", ".", "--rw", "write", "--size", "64M", "--bs", "1M", "--rate", "8M"], target.path());
    wait_for(&mut child, "the data file exists", || work_file(target.path(), |n| n == "data.0").is_some());
    signal(&child, Signal::HUP);
    let (code, stderr) = finish(child);
    assert_eq!(code, 130, "{stderr}");
    assert!(entries(target.path()).is_empty(), "left behind: {:?}", entries(target.path()));
}
