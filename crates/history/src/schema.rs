//! The history database's schema and its migrations. `PRAGMA user_version` holds the number of migrations
//! applied; opening a database applies the missing ones in one transaction each, in order. A database whose
//! version is newer than this streamcap knows is refused (never altered), so an older streamcap cannot damage
//! what a newer one wrote. To change the schema, append a migration; never edit one that has shipped.

use rusqlite::Connection;

use super::HistoryError;

/// Each entry moves the schema one version up (entry 0: from an empty file to version 1).
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, with the result as written, and the figures used for lists, trends and filters.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        host TEXT NOT NULL,
        target TEXT NOT NULL,
        command TEXT NOT NULL,
        status TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        headline TEXT NOT NULL,
        result_json TEXT NOT NULL
    );
    CREATE INDEX runs_by_host ON runs(host, started_at);
    CREATE INDEX runs_by_target ON runs(target, started_at);
    CREATE TABLE figures (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        value REAL NOT NULL,
        unit TEXT NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    CREATE INDEX figures_by_name ON figures(name);",
];

/// Brings the database to the newest version of `migrations`.
pub fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<u32, HistoryError> {
    let current: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let newest = migrations.len() as u32;
    if current > newest {
        return Err(HistoryError::Newer { found: current, known: newest });
    }
    for (n, sql) in migrations.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", n as u32 + 1)?;
        tx.commit()?;
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &[&str] = &["CREATE TABLE a (x INTEGER);", "ALTER TABLE a ADD COLUMN y TEXT;"];

    #[test]
    fn migrations_run_once_in_order_from_any_older_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn, &TWO[..1]).unwrap(), 1);
        conn.execute("INSERT INTO a (x) VALUES (1)", []).unwrap();
        // A newer streamcap adds the second migration: the data stays and the column appears.
        assert_eq!(migrate(&mut conn, TWO).unwrap(), 2);
        assert_eq!(migrate(&mut conn, TWO).unwrap(), 2, "applying again changes nothing");
        let y: Option<String> = conn.query_row("SELECT y FROM a WHERE x = 1", [], |r| r.get(0)).unwrap();
        assert_eq!(y, None);
    }

    #[test]
    fn a_newer_database_is_refused_untouched() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, TWO).unwrap();
        let err = migrate(&mut conn, &TWO[..1]).unwrap_err();
        assert!(err.to_string().contains("newer streamcap"), "{err}");
        let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 2);
    }

    #[test]
    fn the_shipped_schema_applies_to_an_empty_database() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn, MIGRATIONS).unwrap(), MIGRATIONS.len() as u32);
    }
}
