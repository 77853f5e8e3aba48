//! The validation matrix (issue 24): the verdict of `streamcap check` and `check --quick`, for each format, against
//! the physical bound of real targets — ext4 on one loop device throttled to 40 MiB/s and 150 reads/s, btrfs
//! raid1 and raid10 over four such devices, sshfs over a link shaped to 200 Mbit/s — with the io_uring and the
//! sync engine. A capacity passes within ±10 % of its bound (bound.rs says how each bound is worked out); the
//! repeated checks of one target agree within ±10 %; in every step that counts, the bytes the viewers received
//! equal the bytes the devices (or the link) moved within 5 %. docs/validation.md has the figures.
//!
//! By default (CI) this binary runs the quick subset: `check --quick` on ext4 and on btrfs raid1, both engines,
//! one pool for both. `STREAMCAP_VALIDATE=full` (`scripts/validate`) runs the whole matrix in `full_matrix`:
//! every target, both engines, a raw run each, three quick checks and one default check. `STREAMCAP_BIN` picks
//! the binary (scripts/validate: the release build); `STREAMCAP_VALIDATE_OUT=DIR` writes each test's table
//! to DIR/TEST.md. Root only; skipped loudly without loop devices, blkio throttling, btrfs or sshfs.
//!
//! The checks are bound by the throttle or the link, not the CPU: a check at these counts takes about 2 s of
//! CPU in a minute; yet on a crowded machine streamcap and the loop devices' kernel threads lag and a check
//! falls short of its bound. So the ±10 % judgment fails the test only with `STREAMCAP_VALIDATE_STRICT` (set by
//! `scripts/validate`, for a quiet machine); without it (CI) a capacity fails only above 110 % of its bound,
//! below `BUSY_FLOOR` of it, or where a counted step's bytes differ — the table still says pass or fail by
//! ±10 %. The two quick tests take turns (a quick check of ext4 took 35–45 s with the release build).

#[path = "../common/mod.rs"]
mod common;

mod analyse;
mod bench;
mod bound;
mod check_run;
mod raw;
mod startup;
mod table;

use std::path::PathBuf;

use analyse::{CheckCell, FORMATS, formats_agree, judge};
use bench::{Bench, Layout};
use check_run::{Engine, Profile, run_check};
use raw::{Raw, raw_run};

/// The binary under test: `STREAMCAP_BIN`, or the one cargo built for this test.
pub fn streamcap_bin() -> PathBuf {
    std::env::var_os("STREAMCAP_BIN").map_or_else(common::streamcap_path, PathBuf::from)
}

/// Whether the test can build `layout` here (says why not, loudly, when it cannot).
fn can_build(test: &str, layout: Layout) -> bool {
    if layout == Layout::Sshfs {
        return common::netns::can_use_sshfs(test);
    }
    if !common::can_use_loop_devices(test) || !common::can_throttle(test) {
        return false;
    }
    if layout != Layout::Ext4 && !common::have_btrfs() {
        common::skip(&format!("{test}: btrfs (kernel module or btrfs-progs) is not available"));
        return false;
    }
    true
}

/// What a run of the matrix found.
#[derive(Default)]
struct Report {
    raws: Vec<(&'static str, Raw)>,
    cells: Vec<CheckCell>,
    /// Targets whose bench or checks broke off (a panic), in words: the matrix goes on without them.
    broken: Vec<String>,
}

impl Report {
    fn markdown(&self) -> String {
        let mut out = String::new();
        for broken in &self.broken {
            out += &format!("**{broken}**\n\n");
        }
        if !self.raws.is_empty() {
            out += &table::raw_table(&self.raws);
            out += "\n";
        }
        out += &table::verdict_table(&self.cells);
        out += "\n";
        out += &table::bounds_table(&self.cells);
        let agreement = table::agreement_table(&self.cells);
        if agreement.lines().count() > 2 {
            out += "\n";
            out += &agreement;
        }
        out
    }

    /// Every cell that failed, in words: strictly (`scripts/validate`), each one outside ±10 % of its bound and
    /// not a known shortfall; on a busy machine (CI) only what load cannot explain.
    fn failures(&self, strict: bool) -> Vec<String> {
        let mut failures = Vec::new();
        for c in &self.cells {
            let cell = format!("{} {} {} #{}", c.layout, c.engine.name(), c.profile.name(), c.run);
            for f in &c.formats {
                let low = f.engine_bound.unwrap_or(f.bound_streams);
                let wrong = if strict {
                    !f.pass && f.short.is_none()
                } else {
                    !(f.measured <= 1.1 * f.bound_streams && f.measured >= BUSY_FLOOR * low)
                };
                if wrong {
                    failures
                        .push(format!("{cell} {}: {} against a bound of {:.1}", f.format, f.measured, f.bound_streams));
                }
                for off in &f.bytes.off {
                    failures.push(format!("{cell} {}: {off}", f.format));
                }
            }
        }
        let mut groups: Vec<(&str, Engine, Profile)> =
            self.cells.iter().map(|c| (c.layout, c.engine, c.profile)).collect();
        groups.dedup();
        for (layout, engine, profile) in groups.into_iter().filter(|_| strict) {
            let same: Vec<&CheckCell> =
                self.cells.iter().filter(|c| (c.layout, c.engine, c.profile) == (layout, engine, profile)).collect();
            for (format, _) in FORMATS.iter().filter(|_| same.len() > 1) {
                let (counts, bounds, ok) = formats_agree(&same, format);
                if !ok {
                    failures.push(format!(
                        "{layout} {} {}: {format} checks disagree: {counts:?} against bounds of {bounds:?}",
                        engine.name(),
                        profile.name()
                    ));
                }
            }
        }
        failures
    }
}

/// What to run of the matrix: engines, and per profile how many checks.
struct Plan {
    engines: Vec<Engine>,
    checks: Vec<(Profile, u32)>,
    raw: bool,
}

/// Runs the checks of one target: a raw run per engine (`plan.raw`; over sshfs one, the link's), then per engine
/// and profile its checks.
fn validate(layout: Layout, plan: &Plan, report: &mut Report) {
    let bench = Bench::new(layout);
    let mut link = None;
    for &engine in &plan.engines {
        let wanted = (plan.raw && layout != Layout::Sshfs) || (layout == Layout::Sshfs && link.is_none());
        if wanted {
            let measured = raw_run(&bench, engine);
            eprintln!("{}: raw {} {:.1} MB/s; {}", layout.name(), engine.name(), measured.mbps, measured.bound.words);
            if plan.raw {
                report.raws.push((layout.name(), measured.clone()));
            }
            link = measured.efficiency.is_some().then_some(measured);
        }
        for &(profile, runs) in &plan.checks {
            for n in 1..=runs {
                let name = format!("{}-{}-{}-{n}.json", layout.tag(), engine.name(), profile.name());
                let json = bench.tmp.path().join(&name);
                let run = run_check(&bench, engine, profile, &json);
                keep_result(&json, &name);
                let cell = judge(&bench, &run, engine, profile, n, link.as_ref());
                eprintln!("{}", table::verdict_table(std::slice::from_ref(&cell)));
                report.cells.push(cell);
            }
        }
    }
}

/// Copies a check's result into `STREAMCAP_VALIDATE_OUT`, when set, for a look afterwards.
fn keep_result(json: &std::path::Path, name: &str) {
    if let Some(dir) = std::env::var_os("STREAMCAP_VALIDATE_OUT") {
        let _ = std::fs::copy(json, PathBuf::from(dir).join(name));
    }
}

/// Writes the report's tables into `STREAMCAP_VALIDATE_OUT`/TEST.md, when set; returns the text.
fn write_table(test: &str, report: &Report) -> String {
    let text = report.markdown();
    if let Some(dir) = std::env::var_os("STREAMCAP_VALIDATE_OUT") {
        let path = PathBuf::from(dir).join(format!("{test}.md"));
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
    text
}

/// Prints the report, writes it where asked, and fails with every failing cell.
fn conclude(test: &str, report: &Report) {
    let text = write_table(test, report);
    eprintln!("{text}");
    let strict = std::env::var_os("STREAMCAP_VALIDATE_STRICT").is_some();
    if !strict {
        eprintln!(
            "{test}: judged as on a busy machine (STREAMCAP_VALIDATE_STRICT unset): a capacity fails only above \
             110 % of its bound or below {:.0} % of it, or where a counted step's bytes differ; the table's pass/fail \
             is the ±10 % judgment, which scripts/validate enforces",
            BUSY_FLOOR * 100.0
        );
    }
    let mut failures = report.failures(strict);
    failures.extend(report.broken.iter().cloned());
    assert!(failures.is_empty(), "{test}: {} failing cells:\n{}", failures.len(), failures.join("\n"));
}

/// On a busy machine a check falls short of its bound when streamcap or the loop devices' kernel threads lack
/// CPU (measured here under a load average of 11: 1080p 21 of 40 on ext4); it never exceeds it. Below this share
/// of the bound a check fails even there (the estimate once capped btrfs raid1 at 45 %).
const BUSY_FLOOR: f64 = 0.4;

/// The quick tests run one after the other: beside each other they load the two cores themselves.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn quick_subset(test: &str, layout: Layout) {
    if !can_build(test, layout) {
        return;
    }
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut report = Report::default();
    let plan = Plan { engines: Engine::BOTH.to_vec(), checks: vec![(Profile::Quick, 1)], raw: false };
    validate(layout, &plan, &mut report);
    conclude(test, &report);
}

#[test]
fn quick_subset_ext4() {
    quick_subset("quick_subset_ext4", Layout::Ext4);
}

#[test]
fn quick_subset_btrfs_raid1() {
    quick_subset("quick_subset_btrfs_raid1", Layout::Raid1);
}

/// A comma-separated choice from the environment, or every value.
fn chosen<T: Copy>(var: &str, all: &[T], name: impl Fn(T) -> &'static str) -> Vec<T> {
    match std::env::var(var) {
        Ok(list) if !list.is_empty() => {
            let wanted: Vec<&str> = list.split(',').map(str::trim).collect();
            for w in &wanted {
                assert!(all.iter().any(|&v| name(v) == *w), "{var}: unknown '{w}'");
            }
            all.iter().copied().filter(|&v| wanted.contains(&name(v))).collect()
        }
        _ => all.to_vec(),
    }
}

/// The checks per profile: `STREAMCAP_VALIDATE_CHECKS` ("quick:3,default:1", the default).
fn checks_asked() -> Vec<(Profile, u32)> {
    let text = std::env::var("STREAMCAP_VALIDATE_CHECKS").unwrap_or_else(|_| "quick:3,default:1".into());
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (profile, runs) = part.split_once(':').unwrap_or((part, "1"));
            let profile = match profile.trim() {
                "quick" => Profile::Quick,
                "default" => Profile::Default,
                other => panic!("STREAMCAP_VALIDATE_CHECKS: unknown profile '{other}' (quick, default)"),
            };
            (profile, runs.trim().parse().expect("STREAMCAP_VALIDATE_CHECKS: PROFILE:COUNT"))
        })
        .collect()
}

/// The whole matrix, when `STREAMCAP_VALIDATE=full` asks for it (scripts/validate); about an hour. A part of it:
/// `STREAMCAP_VALIDATE_TARGETS` (ext4, raid1, raid10, sshfs), `STREAMCAP_VALIDATE_ENGINES` (io_uring, sync),
/// `STREAMCAP_VALIDATE_CHECKS` (quick:3,default:1).
#[test]
fn full_matrix() {
    let test = "full_matrix";
    if std::env::var("STREAMCAP_VALIDATE").as_deref() != Ok("full") {
        eprintln!("{test}: not asked for (STREAMCAP_VALIDATE=full, as scripts/validate sets it, runs it)");
        return;
    }
    let plan = Plan {
        engines: chosen("STREAMCAP_VALIDATE_ENGINES", &Engine::BOTH, Engine::name),
        checks: checks_asked(),
        raw: true,
    };
    let mut report = Report::default();
    for layout in chosen("STREAMCAP_VALIDATE_TARGETS", &Layout::ALL, Layout::tag) {
        if can_build(test, layout) {
            // A target that breaks off (its bench undone by the unwinding) is said, and the others still run.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| validate(layout, &plan, &mut report)));
            if let Err(panic) = ran {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                report.broken.push(format!("{}: broke off: {}", layout.name(), why.unwrap_or_default()));
            }
            // The table so far, should a later target take the run down.
            write_table(test, &report);
        }
    }
    conclude(test, &report);
}
