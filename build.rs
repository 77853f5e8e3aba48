//! Build script: the commit and the build date `streamcap --version` prints (STREAMCAP_COMMIT,
//! STREAMCAP_BUILD_DATE). It reads git and the clock and writes nothing but those two variables; outside a git
//! checkout (a crate tarball) the commit is "unknown". The commit says "(dirty)" when the sources the binary is
//! built from (`SOURCES`) differ from it, so a figure measured with the binary names what was measured
//! (`scripts/validate --write-doc` stamps it). SOURCE_DATE_EPOCH, when set, is the build date, so a reproducible
//! build stays reproducible.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        let output = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
        Some(String::from_utf8_lossy(&output.stdout).trim().to_string()).filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=10", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Tracked files changed against the commit (untracked ones are not in any build); `git status` prints
    // nothing, and so `git` gives None, for a clean tree.
    let status = [&["status", "--porcelain", "--untracked-files=no", "--"][..], &SOURCES[..]].concat();
    let dirty = commit != "unknown" && git(&status).is_some();
    println!("cargo:rustc-env=STREAMCAP_COMMIT={commit}{}", if dirty { " (dirty)" } else { "" });
    // An edit of the sources may make a clean tree dirty or a dirty one clean: look again.
    for path in SOURCES {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rustc-env=STREAMCAP_BUILD_DATE={}", build_date());
    // A new commit (HEAD moves, or the branch it names does) builds a new version string.
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])) {
        println!("cargo:rerun-if-changed={branch}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
}

/// What the binary is built from: a change elsewhere (tests, docs, scripts) does not make it another binary, and
/// watching it would rebuild the binary for every edit of a test.
const SOURCES: [&str; 5] = ["src", "crates", "build.rs", "Cargo.toml", "Cargo.lock"];

/// The UTC date (YYYY-MM-DD) of SOURCE_DATE_EPOCH, or of now.
fn build_date() -> String {
    let seconds =
        std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
        });
    // Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted).
    let z = seconds.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
