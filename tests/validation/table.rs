//! The matrix as Markdown: the raw runs with their bounds, one row per format of every check (measured, range,
//! bound, ratio, pass, device ÷ viewer bytes), and whether the checks of one target agree. The same text is
//! printed by the tests and written into docs/validation.md by `scripts/validate --write-doc`.

use std::fmt::Write;

use crate::analyse::{CheckCell, FORMATS, formats_agree};
use crate::check_run::{Engine, Profile};
use crate::raw::Raw;

fn yes(ok: bool) -> &'static str {
    if ok { "pass" } else { "**fail**" }
}

/// A cell's judgment: pass, fail, or short of the bound for a known reason (docs/validation.md, "Findings").
fn judged(f: &crate::analyse::FormatCell) -> &'static str {
    match (f.pass, f.short) {
        (true, _) => "pass",
        (false, Some(_)) => "short (known)",
        (false, None) => "**fail**",
    }
}

fn figure(x: f64) -> String {
    if x.is_finite() { format!("{x:.0}") } else { "—".into() }
}

/// The raw runs: what the devices or the link took, against the bound worked out from the limits.
pub fn raw_table(raws: &[(&str, Raw)]) -> String {
    let mut out = String::from(
        "| target | engine | raw read MB/s | bound MB/s | ratio | binds | arithmetic |\n|---|---|---|---|---|---|---|\n",
    );
    for (layout, raw) in raws {
        let bound = raw.bound.bytes_per_s / 1e6;
        let engine = if raw.efficiency.is_some() { "dd" } else { raw.engine.name() };
        let _ = writeln!(
            out,
            "| {layout} | {engine} | {:.1} | {bound:.1} | {:.2} | {} | {} |",
            raw.mbps,
            raw.mbps / bound,
            raw.bound.binding,
            raw.bound.words
        );
    }
    out
}

/// One row per format of every check.
pub fn verdict_table(cells: &[CheckCell]) -> String {
    let mut out = String::from(
        "| target | engine | profile | run | format | measured | range | plan for | bound | steps' bounds | ratio | \
         pass | device ÷ viewer bytes | limited by | bound set by | time |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in cells {
        for f in &c.formats {
            let steps = f.step_bounds.map_or("—".into(), |(lo, hi)| format!("{lo:.1}–{hi:.1}"));
            let bound = match f.engine_bound {
                Some(engine) => format!("{engine:.1}–{:.1}", f.bound_streams),
                None => format!("{:.1}", f.bound_streams),
            };
            let b = &f.bytes;
            let mut bytes = if b.counted == 0 {
                "no step counted".to_string()
            } else {
                format!(
                    "{:.3}–{:.3} over {} steps{}",
                    b.low,
                    b.high,
                    b.counted,
                    if b.estimated { " (est.)" } else { "" }
                )
            };
            if let Some((lo, hi)) = b.throttle {
                let _ = write!(bytes, " (throttle: {lo:.3}–{hi:.3})");
            }
            if !b.off.is_empty() {
                bytes = format!("**{bytes}; {} off by > 5 %**", b.off.len());
            }
            if b.cache_served > 0 {
                let _ = write!(bytes, "; {} cache-served", b.cache_served);
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {}–{} | {} | {bound} | {steps} | {:.2} | {} | {bytes} | {} | {} | {:.0} s |",
                c.layout,
                c.engine.name(),
                c.profile.name(),
                c.run,
                f.format,
                figure(f.measured),
                figure(f.low),
                figure(f.high),
                figure(f.plan_for),
                f.measured / f.bound_streams,
                judged(f),
                f.limited_by,
                f.bound_set_by,
                c.elapsed_s
            );
        }
    }
    out
}

/// Whether the repeated checks of each target, engine and profile agree, format by format.
pub fn agreement_table(cells: &[CheckCell]) -> String {
    let mut out = String::from(
        "| target | engine | profile | format | capacities | their bounds | agree |\n|---|---|---|---|---|---|---|\n",
    );
    let mut groups: Vec<(&str, Engine, Profile)> = Vec::new();
    for c in cells {
        if !groups.contains(&(c.layout, c.engine, c.profile)) {
            groups.push((c.layout, c.engine, c.profile));
        }
    }
    for (layout, engine, profile) in groups {
        let same: Vec<&CheckCell> =
            cells.iter().filter(|c| (c.layout, c.engine, c.profile) == (layout, engine, profile)).collect();
        if same.len() < 2 {
            continue;
        }
        for (format, _) in FORMATS {
            let (counts, bounds, ok) = formats_agree(&same, format);
            let counts: Vec<String> = counts.iter().map(|c| figure(*c)).collect();
            let bounds: Vec<String> = bounds.iter().map(|b| format!("{b:.1}")).collect();
            let _ = writeln!(
                out,
                "| {layout} | {} | {} | {format} | {} | {} | {} |",
                engine.name(),
                profile.name(),
                counts.join(", "),
                bounds.join(", "),
                yes(ok)
            );
        }
    }
    out
}

/// The arithmetic of every bound, once per target, engine, profile and format (its first check's).
pub fn bounds_table(cells: &[CheckCell]) -> String {
    let mut out =
        String::from("| target | engine | profile | format | bound | the arithmetic |\n|---|---|---|---|---|---|\n");
    for c in cells.iter().filter(|c| c.run == 1) {
        for f in &c.formats {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.1} | {} |",
                c.layout,
                c.engine.name(),
                c.profile.name(),
                f.format,
                f.bound_streams,
                f.bound_words
            );
        }
    }
    out
}
