//! The top of a check's page, one screen before anything else (as AJA and Blackmagic give it): a ✓ or ✗ per
//! format with its streams, their range and the count to plan for, what limited each, and the caveats that
//! change how to read them (a cache beneath the OS, a capacity beyond the sequential ceiling, a check cut
//! short, flagged figures). Everything else — tables, charts, facts — follows below. Reads the check summary
//! only; the words are the terminal summary's (`report::check::verdict_cells`).

use crate::results::{CheckSummary, FormatVerdict, RunResult};

use super::esc;

/// The "at a glance" block of a check, HTML.
pub fn glance(result: &RunResult, check: &CheckSummary) -> String {
    let mut html = String::from("<ul class=\"grid\">");
    for v in &check.verdict {
        html.push_str(&cell(v));
    }
    html.push_str("</ul>");
    let caveats = caveats(result, check);
    if !caveats.is_empty() {
        html.push_str("<ul class=\"caveats\">");
        for c in caveats {
            html.push_str(&format!("<li>{c}</li>"));
        }
        html.push_str("</ul>");
    }
    html
}

/// One format: ✓ when it sustained streams, ✗ when it sustained none or was not measured.
fn cell(v: &FormatVerdict) -> String {
    let [label, bitrate, streams, range, plan_for, limited_by, ceiling] = crate::report::check::verdict_cells(v);
    let passed = v.capacity.measured() && v.streams > 0;
    let (class, mark) = if passed { ("pass", "✓") } else { ("fail", "✗") };
    let count = if v.capacity.measured() { format!("{streams} streams") } else { streams };
    let mut details = Vec::new();
    if range != "—" {
        details.push(format!("range {}", esc(&range)));
    }
    if plan_for != "—" {
        details.push(format!("plan for {}", esc(&plan_for)));
    }
    if limited_by != "—" {
        details.push(format!("limited by {}", esc(&limited_by)));
    }
    if ceiling != "—" {
        details.push(format!("sequential ceiling {}", esc(&ceiling)));
    }
    format!(
        "<li class=\"{class}\"><span class=\"mark\">{mark}</span> <b>{}</b> <span class=\"hint\">{}</span> \
         <span class=\"count\">{}</span><br><span class=\"detail\">{}</span></li>",
        esc(&label),
        esc(&bitrate),
        esc(&count),
        details.join(" · ")
    )
}

/// What changes how the grid reads, HTML (escaped here).
fn caveats(result: &RunResult, check: &CheckSummary) -> Vec<String> {
    let mut out = Vec::new();
    if check.partial {
        out.push("the check stopped before the end: the formats above are what it measured".to_string());
    }
    if let Some(flag) = check.cache.as_ref().and_then(|c| c.implausible.as_ref()) {
        out.push(format!("a cache beneath the OS served the device's figures: {}", esc(flag)));
    }
    for v in check.verdict.iter().filter(|v| v.beyond_ceiling) {
        out.push(format!(
            "{}: {} streams is beyond the {} the sequential reads would carry: a cache served some viewers",
            esc(&v.label),
            v.streams,
            v.bandwidth_ceiling
        ));
    }
    for v in check.verdict.iter().filter(|v| !v.capacity.measured()) {
        if let Some(why) = &v.capacity.not_measured {
            out.push(format!("{}: not measured: {}", esc(&v.label), esc(why)));
        }
    }
    if result.phases.iter().any(|p| p.cache_affected || p.devices.iter().any(|d| d.implausible.is_some())) {
        out.push("some figures are flagged: see Notices and cache flags below".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> RunResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/check-v2.json");
        crate::results::read_result(&path).unwrap()
    }

    #[test]
    fn the_grid_has_a_mark_count_range_and_limit_per_format() {
        let result = check();
        let html = glance(&result, result.check.as_ref().unwrap());
        assert_eq!(html.matches("<li class=\"pass\"><span class=\"mark\">✓</span>").count(), 3, "{html}");
        assert!(html.contains("<b>1080p H.264</b>") && html.contains("1003 streams"), "{html}");
        assert!(html.contains("range 967–1246 (3 runs)") && html.contains("plan for 802"), "{html}");
        assert!(html.contains("limited by start-up time"), "{html}");
    }

    #[test]
    fn a_format_not_measured_is_a_cross_with_why_and_a_cache_beneath_is_a_caveat() {
        let mut result = check();
        let check = result.check.as_mut().unwrap();
        check.verdict[2].capacity.edges.clear();
        check.verdict[2].capacity.not_measured = Some("the check was interrupted".into());
        check.verdict[2].streams = 0;
        if let Some(cache) = check.cache.as_mut() {
            cache.implausible = Some("vda says it is rotational, yet <fast>".into());
        }
        let html = glance(&result, result.check.as_ref().unwrap());
        assert!(html.contains("<li class=\"fail\"><span class=\"mark\">✗</span> <b>2160p remux</b>"), "{html}");
        assert!(html.contains("not measured: the check was interrupted"), "{html}");
        assert!(html.contains("a cache beneath the OS served") && html.contains("&lt;fast&gt;"), "{html}");
    }

    /// Regression (issue 30): a 14,000-pixel page with the verdict below the fold, the 1080p charts twice and a
    /// step table for 1080p only. The glance comes first, each format's charts once, every format's steps.
    #[test]
    fn the_check_page_opens_on_the_glance_with_each_chart_once() {
        let page = crate::render_to_string(&crate::Html, &check());
        let first = page.find("<section id=").map(|i| &page[i..i + 30]).unwrap_or_default();
        assert!(first.starts_with("<section id=\"glance\""), "{first}");
        for format in ["1080p", "2160p-hevc", "2160p-remux"] {
            for chart in ["stalls", "startup"] {
                assert_eq!(page.matches(&format!("id=\"capacity-{chart}-{format}\"")).count(), 1, "{chart} {format}");
            }
        }
        assert!(!page.contains("id=\"capacity-stalls-streams\""), "the check's streams search drawn a second time");
        for label in ["1080p H.264", "2160p HEVC", "2160p remux"] {
            assert!(page.contains(&format!("<h3>{label}</h3>")), "no step table for {label}");
        }
        let at = |id: &str| page.find(&format!("<section id=\"{id}\"")).unwrap_or_else(|| panic!("no {id}"));
        assert!(at("notices") < at("devices") && at("notices") < at("latency"), "the flags come before the charts");
    }
}
