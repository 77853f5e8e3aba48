//! Which dialect a job file is written in: native TOML, a fio job file or a vdbench parameter file.
//!
//! The extension decides when it is telling (`.toml`, `.fio`, `.ini`, `.vdb`, `.parm`); otherwise the first
//! meaningful lines do: `[section]` headers followed by `key=value` lines are fio, lines starting with `sd=`,
//! `wd=`, `rd=`, `fsd=`, `fwd=` or `hd=` are vdbench, and anything else is read as TOML.

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

pub fn detect_dialect(path: &Path, text: &str) -> Dialect {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("toml") => return Dialect::Toml,
        Some("fio" | "ini") => return Dialect::Fio,
        Some("vdb" | "vdbench" | "parm" | "prm") => return Dialect::Vdbench,
        _ => {}
    }
    let meaningful = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';') && !l.starts_with('*'));
    for line in meaningful.take(20) {
        let lower = line.to_ascii_lowercase();
        if ["sd=", "wd=", "rd=", "fsd=", "fwd=", "hd="].iter().any(|p| lower.starts_with(p)) {
            return Dialect::Vdbench;
        }
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
}
