//! Which dialect a job file is written in: native TOML, a fio job file or a vdbench parameter file.
//!
//! Only `.toml`, `.fio` and `.vdb`/`.vdbench` decide by their extension; every other name (`parmfile`, `.txt`,
//! `.cfg`, `.ini`, `.parm`, no extension) is judged by its first meaningful lines, because vdbench files come
//! under any name: a line that starts with a vdbench record (`sd=`, `wd=`, `rd=`, `fsd=`, `fwd=`, `hd=`, `rg=`)
//! or one of vdbench's general parameters (`messagescan=`, `compratio=`, `dedupratio=`, `data_errors=`,
//! `include=` …) is vdbench; `[section]` headers followed by `key=value` lines are fio; anything else is TOML.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Toml,
    Fio,
    Vdbench,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Toml => "streamcap TOML job",
            Dialect::Fio => "fio job file",
            Dialect::Vdbench => "vdbench parameter file",
        }
    }
}

/// Keywords that start a vdbench line: its records and its general parameters (vdbench 5.04's `Vdb_scan`).
const VDBENCH_STARTS: &[&str] = &[
    "sd",
    "wd",
    "rd",
    "fsd",
    "fwd",
    "hd",
    "rg",
    "include",
    "messagescan",
    "compratio",
    "dedupratio",
    "dedupunit",
    "dedupsets",
    "deduphotsets",
    "dedupflipflop",
    "data_errors",
    "dataerrors",
    "validate",
    "journal",
    "debug",
    "concatenatesds",
    "concatenate",
    "create_anchors",
    "fwd_thread_adjust",
    "histogram",
    "report",
    "formatsds",
    "formatxfersize",
    "formatthreads",
    "startcmd",
    "start_cmd",
    "endcmd",
    "end_cmd",
    "showlba",
    "port",
    "monitor",
    "timeout",
    "loop",
    "pattern",
    "patterns",
    "abort_failed_skew",
];

/// Whether a line looks like vdbench's: `keyword=value` with a vdbench keyword first and no blank before the
/// `=` (vdbench ends a line at its first blank).
fn vdbench_line(line: &str) -> bool {
    let Some((key, _)) = line.split_once('=') else { return false };
    let key = key.to_ascii_lowercase();
    VDBENCH_STARTS.contains(&key.as_str())
}

pub fn detect_dialect(path: &Path, text: &str) -> Dialect {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("toml") => return Dialect::Toml,
        Some("fio") => return Dialect::Fio,
        Some("vdb" | "vdbench") => return Dialect::Vdbench,
        _ => {}
    }
    // vdbench comments start with '*', '#' or '/'; fio's with '#' or ';'.
    let meaningful = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with(['#', ';', '*', '/']));
    // Inside a section (fio's [global], a TOML table), `timeout=` or `debug=` are fio's or TOML's keys.
    let mut in_section = false;
    for line in meaningful.take(20) {
        if !in_section && vdbench_line(line) {
            return Dialect::Vdbench;
        }
        in_section |= line.starts_with('[');
        if line.starts_with('[') && !line.starts_with("[[") {
            let name = line.trim_matches(|c| c == '[' || c == ']');
            // TOML tables that streamcap uses are [global]; fio also uses [global]. Look further for fio's
            // bare `key=value` (no quotes around text values) to tell them apart.
            if name != "global" {
                return Dialect::Fio;
            }
        }
        if let Some((key, value)) = line.split_once('=') {
            let value = value.trim();
            let toml_like = value.starts_with('"')
                || value.starts_with('\'')
                || value.parse::<f64>().is_ok()
                || value == "true"
                || value == "false";
            if !key.contains(' ') && !toml_like {
                return Dialect::Fio;
            }
        } else if !line.starts_with('[') {
            // A bare word on its own line (fio's `thread`, `time_based`) is not TOML.
            return Dialect::Fio;
        }
    }
    Dialect::Toml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_extension_and_by_content() {
        assert_eq!(detect_dialect(Path::new("a.toml"), ""), Dialect::Toml);
        assert_eq!(detect_dialect(Path::new("a.fio"), ""), Dialect::Fio);
        let fio = "[global]\nioengine=libaio\ndirect=1\n[job1]\nrw=randread\n";
        assert_eq!(detect_dialect(Path::new("job"), fio), Dialect::Fio);
        let vdb = "* comment\nsd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1\n";
        assert_eq!(detect_dialect(Path::new("parmfile"), vdb), Dialect::Vdbench);
        let toml = "# mine\n[global]\nsize = \"1G\"\n[[phase]]\nrw = \"read\"\n";
        assert_eq!(detect_dialect(Path::new("job"), toml), Dialect::Toml);
    }

    #[test]
    fn vdbench_files_are_found_by_content_whatever_their_name() {
        // Regression (issue 13): parmfile, .txt, .cfg and .ini vdbench files were read as fio files.
        let vdb = "/ a vdbench comment\nmessagescan=no\nhd=default,vdbench=/opt/vdbench,shell=ssh\nsd=sd1,lun=/x\n";
        for name in ["parmfile", "test.txt", "raw.cfg", "fs.ini", "job.parm", "noext"] {
            assert_eq!(detect_dialect(Path::new(name), vdb), Dialect::Vdbench, "{name}");
        }
        assert_eq!(detect_dialect(Path::new("w.ini"), "compratio=2\nfsd=fsd1,anchor=/a\n"), Dialect::Vdbench);
        let fio = "; fio\n[global]\nrw=randread\n[job]\nsize=1g\n";
        assert_eq!(detect_dialect(Path::new("job.ini"), fio), Dialect::Fio);
        assert_eq!(detect_dialect(Path::new("job.txt"), fio), Dialect::Fio);
        // fio's own keys that vdbench also has stay fio's inside a section.
        assert_eq!(detect_dialect(Path::new("x.cfg"), "[j]\nsize=1g\n"), Dialect::Fio);
        assert_eq!(detect_dialect(Path::new("x.cfg"), "[global]\ntimeout=60\n[j]\n"), Dialect::Fio);
    }
}
