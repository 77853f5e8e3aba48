//! The planner's line at the end of a check (`CheckSummary::planner_hint`, set by `app::check` from the planning
//! model), in every format: printed as it was stored after the verdict in the terminal summary; a "Planner"
//! section in Markdown and HTML, with the member drive the planner inferred when the check measured a pool
//! (`CheckSummary::planner_member`). Reads only `results` types; owns no other part of the check's report.

use std::io::{self, Write};

use super::rows::{Rows, num, text};
use crate::results::{CheckSummary, PlannerMember};
use crate::units::{Bytes, format_mbps, format_rate};

/// Writes the planner's line, if the check has one, after a blank line.
pub(super) fn write_planner_hint(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    match &check.planner_hint {
        Some(hint) => {
            writeln!(out)?;
            writeln!(out, "{hint}")
        }
        None => Ok(()),
    }
}

/// The inferred member and the planner's comparison, as rows of (what, figure), for Markdown and HTML alike.
fn member_rows(m: &PlannerMember) -> Rows {
    let mut rows = Rows::new(&[text(""), num("figure")]);
    for row in [
        vec!["pool".into(), format!("{} × {} as {}", m.members, Bytes(m.capacity_bytes), m.layout)],
        vec![
            "sequential 1 MiB read / write, one drive".into(),
            format!("{} / {} MB/s", format_mbps(m.read_mbps), format_mbps(m.write_mbps)),
        ],
        vec![
            "random 4 KiB reads/s, one drive (QD 32 / QD 1)".into(),
            format!("{} / {}", format_rate(m.random_read_iops), format_rate(m.random_read_iops_qd1)),
        ],
        vec![
            format!("{} streams, planner", m.format),
            format!("{}: {} · {}: {}", m.layout, m.current_streams, m.best_layout, m.best_streams),
        ],
    ] {
        rows.push(row);
    }
    rows
}

/// The Markdown "Planner" section: the line, and the inferred member of a pool.
pub(super) fn write_markdown(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(hint) = &check.planner_hint else { return Ok(()) };
    writeln!(out, "### Planner")?;
    writeln!(out)?;
    writeln!(out, "{hint}")?;
    writeln!(out)?;
    if let Some(member) = &check.planner_member {
        writeln!(out, "One member drive, inferred from the pool's measurement (docs/planning.md):")?;
        writeln!(out)?;
        member_rows(member).markdown(out)?;
    }
    Ok(())
}

/// The HTML "Planner" section's body (empty when the check has no line).
pub fn html_body(check: &CheckSummary) -> String {
    let Some(hint) = &check.planner_hint else { return String::new() };
    let mut body = format!("<p class=\"words\">{}</p>\n", super::html::esc(hint));
    if let Some(member) = &check.planner_member {
        body.push_str("<p>One member drive, inferred from the pool's measurement (docs/planning.md):</p>\n");
        body.push_str(&member_rows(member).html());
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Format;
    use crate::results::RunResult;

    fn check_with_a_pool_hint() -> RunResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/check-v1.json"))
            .expect("the fixture exists");
        let mut result: RunResult = serde_json::from_str(&text).expect("the fixture parses");
        let check = result.check.as_mut().unwrap();
        check.planner_hint =
            Some("planner: these 4 drives as raid10 would serve about 1.3× the <2160p> streams".into());
        check.planner_member = Some(PlannerMember {
            layout: "btrfs-raid1".into(),
            members: 4,
            capacity_bytes: 1 << 30,
            rotational: true,
            read_mbps: 151.0,
            write_mbps: 140.0,
            random_read_iops: 1234.0,
            random_read_iops_qd1: 321.0,
            format: "2160p-remux".into(),
            current_streams: 30,
            best_layout: "raid10".into(),
            best_streams: 40,
        });
        result
    }

    fn render(format: Format, result: &RunResult) -> String {
        let mut out = Vec::new();
        format.renderer().render(result, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn markdown_has_the_planner_section_with_the_inferred_member() {
        let text = render(Format::Markdown, &check_with_a_pool_hint());
        let at = text.find("### Planner").expect("a planner section");
        let section = &text[at..];
        assert!(section.contains("these 4 drives as raid10 would serve about 1.3×"), "{section}");
        assert!(section.contains("| pool") && section.contains("4 × 1 GiB as btrfs-raid1"), "{section}");
        assert!(section.contains("btrfs-raid1: 30 · raid10: 40"), "{section}");
        // No hint, no section.
        let mut plain = check_with_a_pool_hint();
        plain.check.as_mut().unwrap().planner_hint = None;
        assert!(!render(Format::Markdown, &plain).contains("Planner"));
    }

    #[test]
    fn html_has_the_planner_section_escaped() {
        let page = render(Format::Html, &check_with_a_pool_hint());
        let at = page.find("<section id=\"planner\">").expect("a planner section");
        let section = &page[at..at + page[at..].find("</section>").unwrap()];
        assert!(section.contains("about 1.3× the &lt;2160p&gt; streams"), "{section}");
        assert!(section.contains("4 × 1 GiB as btrfs-raid1") && section.contains("raid10: 40"), "{section}");
    }
}
