//! The local history of runs: every result is also kept in a SQLite database (rusqlite, SQLite built in), with
//! its JSON exactly as written and its figures, so runs can be listed, filtered, followed over time, exported
//! again and compared. Layer 4: reads `results`, knows nothing of the command line; the app decides where the
//! database is and what to do when it cannot be written (the run itself never depends on it).
//!
//! Safety: a database is only ever opened and migrated forward, never recreated or truncated; a file that is not
//! a database, or one written by a newer streamcap, is an error and stays as it was. Writers wait up to
//! `BUSY_TIMEOUT` for a lock held by another process, then give up with an error. Its place follows the
//! output-file rule (`crate::outfile::database`): a regular file or nothing, not in /dev, never through a symbolic
//! link, nor its journal, WAL or shared-memory file (SQLite opens them all with O_NOFOLLOW).

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::outfile;
pub(crate) use ::results;
pub(crate) use ::units;

mod figures;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use thiserror::Error;

use crate::results::RunResult;
pub use figures::{Figure, command, figures, headline, slug};

/// How long a write waits for another process's lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Error)]
pub enum HistoryError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Place(#[from] crate::outfile::OutFileError),
    #[error(
        "the history database is version {found}, newer than this streamcap knows ({known}); use a newer streamcap"
    )]
    Newer { found: u32, known: u32 },
    #[error("no run #{0} in the history")]
    NoSuchRun(i64),
    #[error("cannot encode the result: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Which runs to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Host name, exactly.
    pub host: Option<String>,
    /// Part of the target path.
    pub target: Option<String>,
    /// "run", "streams", "check", "inspect".
    pub command: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<u32>,
}

/// One run as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub host: String,
    pub target: String,
    pub command: String,
    pub status: String,
    pub headline: String,
}

/// The default place: `$XDG_DATA_HOME/streamcap/history.db`, else `$HOME/.local/share/streamcap/history.db`.
pub fn default_path(xdg_data_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let base = match xdg_data_home.filter(|p| p.is_absolute()) {
        Some(dir) => dir.to_path_buf(),
        None => home?.join(".local/share"),
    };
    Some(base.join("streamcap/history.db"))
}

/// An open history database.
pub struct History {
    conn: Connection,
}

impl History {
    /// Opens (creating it and its directory if needed) and migrates the database at `path`, once its place
    /// passes the output-file rule.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        crate::outfile::create_parent_dirs(&format!("--history-db {}", path.display()), path)?;
        // The canonical directory and the name: no symbolic link in it, so NOFOLLOW refuses one swapped in later.
        let path = crate::outfile::database(path)?;
        let mut conn = Connection::open_with_flags(&path, OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        schema::migrate(&mut conn, schema::MIGRATIONS)?;
        Ok(History { conn })
    }

    /// Stores a result with its figures; returns its id.
    pub fn store(&mut self, result: &RunResult) -> Result<i64, HistoryError> {
        // The same text `--json` writes, so that `history show ID --json` gives the file back.
        let mut json = serde_json::to_string_pretty(result)?;
        json.push('\n');
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (started_at, host, target, command, status, tool_version, headline, result_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                result.started_at,
                result.host.hostname,
                result.target.path,
                command(result),
                serde_json::to_value(result.status)?.as_str().unwrap_or("unknown"),
                result.tool.version,
                headline(result),
                json
            ],
        )?;
        let id = tx.last_insert_rowid();
        for f in figures(result) {
            tx.execute(
                "INSERT INTO figures (run_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
                params![id, f.name, f.value, f.unit],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Runs matching `filter`, newest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Entry>, HistoryError> {
        let sql = "SELECT id, started_at, host, target, command, status, headline FROM runs
                   WHERE (?1 IS NULL OR host = ?1) AND (?2 IS NULL OR instr(target, ?2) > 0) AND (?3 IS NULL OR command = ?3)
                   ORDER BY started_at DESC, id DESC LIMIT ?4";
        let mut stmt = self.conn.prepare(sql)?;
        let limit = filter.limit.map_or(-1, i64::from);
        let rows = stmt.query_map(params![filter.host, filter.target, filter.command, limit], entry)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The JSON of run `id`, as it was written.
    pub fn json(&self, id: i64) -> Result<String, HistoryError> {
        let found = self.conn.query_row("SELECT result_json FROM runs WHERE id = ?1", [id], |r| r.get(0)).optional()?;
        found.ok_or(HistoryError::NoSuchRun(id))
    }

    /// One figure of the runs matching `filter`, oldest first, with its unit.
    pub fn trend(&self, name: &str, filter: &Filter) -> Result<Vec<(Entry, f64, String)>, HistoryError> {
        let sql = "SELECT r.id, r.started_at, r.host, r.target, r.command, r.status, r.headline, f.value, f.unit
                   FROM runs r JOIN figures f ON f.run_id = r.id
                   WHERE f.name = ?1 AND (?2 IS NULL OR r.host = ?2) AND (?3 IS NULL OR instr(r.target, ?3) > 0)
                     AND (?4 IS NULL OR r.command = ?4)
                   ORDER BY r.started_at, r.id";
        let mut stmt = self.conn.prepare(sql)?;
        let rows = stmt.query_map(params![name, filter.host, filter.target, filter.command], |r| {
            Ok((entry(r)?, r.get(7)?, r.get(8)?))
        })?;
        let mut all: Vec<(Entry, f64, String)> = rows.collect::<Result<_, _>>()?;
        if let Some(limit) = filter.limit {
            let skip = all.len().saturating_sub(limit as usize);
            all.drain(..skip);
        }
        Ok(all)
    }

    /// The figure names of the runs matching `filter`, with how many runs have each.
    pub fn figure_names(&self, filter: &Filter) -> Result<Vec<(String, u32)>, HistoryError> {
        let sql = "SELECT f.name, count(*) FROM figures f JOIN runs r ON f.run_id = r.id
                   WHERE (?1 IS NULL OR r.host = ?1) AND (?2 IS NULL OR instr(r.target, ?2) > 0) AND (?3 IS NULL OR r.command = ?3)
                   GROUP BY f.name ORDER BY f.name";
        let mut stmt = self.conn.prepare(sql)?;
        let rows =
            stmt.query_map(params![filter.host, filter.target, filter.command], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

fn entry(r: &rusqlite::Row) -> rusqlite::Result<Entry> {
    Ok(Entry {
        id: r.get(0)?,
        started_at: r.get(1)?,
        host: r.get(2)?,
        target: r.get(3)?,
        command: r.get(4)?,
        status: r.get(5)?,
        headline: r.get(6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> RunResult {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name);
        crate::results::read_result(&path).unwrap()
    }

    #[test]
    fn stored_runs_list_filter_trend_and_export_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/history.db");
        let mut h = History::open(&path).unwrap();
        let run = fixture("result-v1.json");
        let a = h.store(&run).unwrap();
        let mut faster = run.clone();
        faster.started_at = "2026-11-23T05:00:00Z".into();
        faster.phases[1].read.as_mut().unwrap().iops *= 2.0;
        let b = h.store(&faster).unwrap();
        let c = h.store(&fixture("check-v1.json")).unwrap();
        assert_eq!(h.list(&Filter::default()).unwrap().iter().map(|e| e.id).collect::<Vec<_>>(), [c, b, a]);
        let runs = Filter { command: Some("run".into()), ..Filter::default() };
        assert_eq!(h.list(&runs).unwrap().len(), 2);
        let mediabox = Filter { host: Some("mediabox".into()), target: Some("media".into()), ..Filter::default() };
        assert_eq!(h.list(&mediabox).unwrap().len(), 2);
        let trend = h.trend("random-4k-reads/read/iops", &Filter::default()).unwrap();
        assert_eq!(trend.len(), 2);
        assert_eq!(trend[1].1, 2.0 * trend[0].1);
        assert_eq!(trend[0].2, "IOPS");
        // The JSON comes back as `--json` writes it (tests/history.rs compares with a real file).
        assert_eq!(h.json(a).unwrap(), serde_json::to_string_pretty(&run).unwrap() + "\n");
        assert!(matches!(h.json(99), Err(HistoryError::NoSuchRun(99))));
        assert!(
            h.figure_names(&Filter::default())
                .unwrap()
                .iter()
                .any(|(n, count)| n == "check/1080p/streams" && *count == 1)
        );
        drop(h);
        // Opened again: nothing lost, nothing migrated twice.
        assert_eq!(History::open(&path).unwrap().list(&Filter::default()).unwrap().len(), 3);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_an_error_and_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        let junk = vec![b'x'; 4096];
        std::fs::write(&path, &junk).unwrap();
        assert!(History::open(&path).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), junk);
    }

    #[test]
    fn the_default_path_follows_xdg_then_home() {
        let p = default_path(Some(Path::new("/x/data")), Some(Path::new("/home/u")));
        assert_eq!(p.unwrap(), Path::new("/x/data/streamcap/history.db"));
        // A relative XDG_DATA_HOME is invalid by the spec and ignored.
        let p = default_path(Some(Path::new("rel")), Some(Path::new("/home/u")));
        assert_eq!(p.unwrap(), Path::new("/home/u/.local/share/streamcap/history.db"));
        assert_eq!(default_path(None, None), None);
    }
}
