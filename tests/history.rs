//! The history database end to end, each test with its own database (never the user's): runs stored as they
//! finish, listed and filtered, a figure followed over time, a run's JSON exported again byte for byte, history
//! ids given to compare; a corrupt or locked database costs no run (JSON written, warning, the run kept in
//! pending/ and added once the database can be written); --no-history and STREAMCAP_NO_HISTORY store nothing.

mod common;

use std::path::Path;

use predicates::prelude::*;

/// streamcap with history on, in `db`.
fn streamcap(db: &Path) -> assert_cmd::Command {
    let mut cmd = common::streamcap();
    cmd.env_remove("STREAMCAP_NO_HISTORY").env("STREAMCAP_HISTORY_DB", db);
    cmd
}

fn quick_run(db: &Path, target: &Path, json: &Path) -> String {
    let out = streamcap(db)
        .args(["run", "--rw", "randread", "--bs", "4k", "--size", "4M", "--runtime", "300ms", "--interval", "100ms"])
        .arg(target)
        .arg("--json")
        .arg(json)
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn runs_are_stored_listed_followed_exported_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data/history.db");
    let target = tempfile::tempdir().unwrap();
    let (j1, j2) = (dir.path().join("1.json"), dir.path().join("2.json"));
    assert!(quick_run(&db, target.path(), &j1).contains(&format!("history: stored as #1 in {}", db.display())));
    assert!(quick_run(&db, target.path(), &j2).contains("history: stored as #2"));

    let list = streamcap(&db).arg("history").assert().success().get_output().stdout.clone();
    let list = String::from_utf8(list).unwrap();
    assert!(list.contains("#1") && list.contains("#2") && list.contains(" run "), "{list}");
    assert!(list.find("#2").unwrap() < list.find("#1").unwrap(), "newest first:\n{list}");
    streamcap(&db).args(["history", "--command", "check"]).assert().success().stdout("no runs match\n");
    streamcap(&db).args(["history", "--host", "no-such-host"]).assert().success().stdout("no runs match\n");
    let target_part = target.path().file_name().unwrap().to_str().unwrap();
    streamcap(&db)
        .args(["history", "--target", target_part, "--limit", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("#2").and(predicate::str::contains("#1").not()));

    // The JSON comes back exactly as --json wrote it.
    let shown = streamcap(&db).args(["history", "show", "#1", "--json"]).assert().success().get_output().stdout.clone();
    assert_eq!(shown, std::fs::read(&j1).unwrap());
    streamcap(&db).args(["history", "show", "2"]).assert().success().stdout(predicate::str::contains("IOPS"));
    streamcap(&db).args(["history", "show", "9"]).assert().code(2).stderr(predicate::str::contains("no run #9"));

    // Figures: their groups listed, one group's figures, then one followed over time.
    let groups = streamcap(&db).args(["history", "trend"]).assert().success().get_output().stdout.clone();
    let groups = String::from_utf8(groups).unwrap();
    let group = groups.lines().nth(1).and_then(|l| l.split_whitespace().next()).unwrap_or_else(|| panic!("{groups}"));
    assert!(groups.lines().count() < 10, "groups, not every figure: {groups}");
    let names = streamcap(&db).args(["history", "trend", group]).assert().success().get_output().stdout.clone();
    let names = String::from_utf8(names).unwrap();
    let name =
        names.lines().map(str::trim).find(|l| l.ends_with("/read/iops (2)")).unwrap_or_else(|| panic!("{names}"));
    let name = name.trim_end_matches(" (2)");
    let trend = streamcap(&db).args(["history", "trend", name]).assert().success().get_output().stdout.clone();
    let trend = String::from_utf8(trend).unwrap();
    assert!(trend.contains("IOPS") && trend.contains("+0.0 %") && trend.contains("#2"), "{trend}");

    // History ids in compare, beside a file.
    streamcap(&db)
        .arg("compare")
        .arg("1")
        .arg(&j2)
        .assert()
        .success()
        .stdout(predicate::str::contains("A = history #1"));
}

#[test]
fn a_corrupt_database_costs_no_run_and_the_run_is_added_later() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let junk = b"this is not a database, and it must stay as it is".repeat(100);
    std::fs::write(&db, &junk).unwrap();
    let target = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let stderr = quick_run(&db, target.path(), &json);
    assert!(stderr.contains("warning: cannot store this run in the history"), "{stderr}");
    assert!(stderr.contains("will be added the next time"), "{stderr}");
    assert!(json.exists(), "the JSON is written anyway");
    assert_eq!(std::fs::read(&db).unwrap(), junk, "the corrupt file is left as it was");
    assert_eq!(common::entries(&dir.path().join("pending")).len(), 1);

    // The user moves the broken file away; the next run stores itself and the pending one.
    std::fs::rename(&db, dir.path().join("broken.db")).unwrap();
    let stderr = quick_run(&db, target.path(), &json);
    assert!(stderr.contains("history: stored as #1") && stderr.contains("added the pending run"), "{stderr}");
    assert!(!dir.path().join("pending").exists());
    let list = streamcap(&db).arg("history").assert().success().get_output().stdout.clone();
    assert_eq!(String::from_utf8(list).unwrap().matches(" run ").count(), 2);
}

#[test]
fn a_locked_database_costs_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let target = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    quick_run(&db, target.path(), &json);
    // Another process holds the write lock for the whole run.
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    std::fs::remove_file(&json).unwrap();
    let stderr = quick_run(&db, target.path(), &json);
    assert!(stderr.contains("warning: cannot store this run in the history") && stderr.contains("locked"), "{stderr}");
    assert!(json.exists());
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let stderr = quick_run(&db, target.path(), &json);
    assert!(stderr.contains("added the pending run"), "{stderr}");
}

#[test]
fn history_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let target = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args = ["run", "--rw", "read", "--bs", "64k", "--size", "2M", "-q"];
    let out =
        streamcap(&db).args(args).arg(target.path()).arg("--json").arg(&json).arg("--no-history").assert().success();
    assert!(!String::from_utf8_lossy(&out.get_output().stderr).contains("history"));
    streamcap(&db).args(args).arg(target.path()).env("STREAMCAP_NO_HISTORY", "1").assert().success();
    assert!(!db.exists(), "nothing stored, nothing created");
    streamcap(&db).arg("history").assert().code(2).stderr(predicate::str::contains("no history at"));
}

/// cache and sweep store themselves like run, streams and check (issue 10: `streamcap history` lists them, with
/// a headline of their plateaus or their cliff).
#[test]
fn cache_and_sweep_are_stored_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let target = tempfile::tempdir().unwrap();
    let cache = ["cache", "--size", "64M", "--runtime", "200ms", "--load", "none"];
    let out = streamcap(&db).args(cache).arg(target.path()).assert().success().get_output().stderr.clone();
    assert!(String::from_utf8_lossy(&out).contains("history: stored as #1"), "{}", String::from_utf8_lossy(&out));
    let sweep = ["sweep", "--sizes", "1M", "--records", "1M", "--io", "direct"];
    let out = streamcap(&db).args(sweep).arg(target.path()).assert().success().get_output().stderr.clone();
    assert!(String::from_utf8_lossy(&out).contains("history: stored as #2"), "{}", String::from_utf8_lossy(&out));

    let list = streamcap(&db).arg("history").assert().success().get_output().stdout.clone();
    let list = String::from_utf8(list).unwrap();
    let line = |id: &str| list.lines().find(|l| l.contains(id)).unwrap_or_else(|| panic!("{id} listed:\n{list}"));
    assert!(line("#1").contains(" cache ") && line("#1").contains("media"), "{list}");
    assert!(line("#2").contains(" sweep ") && line("#2").contains("no cliff between 1 MiB and 1 MiB"), "{list}");
    streamcap(&db)
        .args(["history", "--command", "cache"])
        .assert()
        .success()
        .stdout(predicate::str::contains("#1").and(predicate::str::contains("#2").not()));
    let groups = streamcap(&db).args(["history", "trend"]).assert().success().get_output().stdout.clone();
    let groups = String::from_utf8(groups).unwrap();
    assert!(groups.lines().any(|l| l.starts_with(" cache ") || l.starts_with("cache ")), "{groups}");
    let names = streamcap(&db).args(["history", "trend", "cache"]).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8(names).unwrap().contains("cache/sustained-media/mbps"));
}

/// Regression (issue 30): `-q` still printed "history: stored as #N". Quiet stores the run and says nothing.
#[test]
fn quiet_stores_the_run_without_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let target = tempfile::tempdir().unwrap();
    let out = streamcap(&db)
        .args(["run", "--rw", "read", "--bs", "64k", "--size", "2M", "--runtime", "200ms", "-q"])
        .arg(target.path())
        .assert()
        .success();
    let said = out.get_output();
    assert!(said.stdout.is_empty() && said.stderr.is_empty(), "{:?}", String::from_utf8_lossy(&said.stderr));
    streamcap(&db).arg("history").assert().success().stdout(predicate::str::contains("#1"));
}
