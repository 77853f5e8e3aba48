//! The cache section of the HTML report: the plateau table, a chart of the plateaus (MB/s on a log scale, alone
//! and beside the load) and a chart of the device-cache regions (MB/s by region size, with the media and page
//! cache as levels and the cache's end marked: the cliff). Pure functions from a `CacheSummary`.

use super::charts::num;
use super::svg::{Axis, Chart, Mark, Series, Style, esc};
use crate::report::cache::plateau_rows;
use crate::results::{CacheSummary, PlateauKind};
use crate::units::{Bytes, format_mbps};

const KINDS: [PlateauKind; 4] =
    [PlateauKind::PageCache, PlateauKind::DeviceCache, PlateauKind::Media, PlateauKind::AccessTime];

/// The whole section body: table, the device cache's end in words, both charts.
pub fn cache_section(cache: &CacheSummary) -> String {
    let mut body = plateau_rows(&cache.plateaus).html();
    if let Some(end) = &cache.device_cache_end {
        body.push_str(&format!("<p class=\"words\">{}</p>", esc(&end.words)));
    }
    for flag in cache.plateaus.iter().filter_map(|p| p.implausible.as_ref()) {
        body.push_str(&format!("<p class=\"warn\">cache beneath: {}</p>", esc(flag)));
    }
    body.extend(plateau_chart(cache).map(|c| c.html()));
    body.extend(cliff_chart(cache).map(|c| c.html()));
    body
}

/// Each plateau's MB/s, alone and beside the load, on a log scale (page cache and access time lie decades apart).
pub fn plateau_chart(cache: &CacheSummary) -> Option<Chart> {
    if cache.plateaus.is_empty() {
        return None;
    }
    let at = |kind: PlateauKind| KINDS.iter().position(|k| *k == kind).unwrap_or(0) as f64;
    let points = |loaded: bool| {
        cache
            .plateaus
            .iter()
            .filter(|p| p.under_load == loaded && p.mbps > 0.0)
            .map(|p| Some((at(p.kind), p.mbps)))
            .collect()
    };
    let series = vec![
        Series::new("alone", Style::Points, 0, points(false)),
        Series::new("beside the load", Style::Points, 1, points(true)),
    ];
    let (lo, hi) = cache
        .plateaus
        .iter()
        .map(|p| p.mbps)
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let mut x = Axis::linear("plateau", -0.5, KINDS.len() as f64 - 0.5, num);
    x.ticks = Some(KINDS.iter().enumerate().map(|(i, k)| (i as f64, k.label().to_string())).collect());
    Some(Chart {
        id: "cache-plateaus".into(),
        title: "Plateaus: where reads come from".into(),
        hint: "Each level down is slower: RAM, then the drive's or controller's cache, then the media streaming, then \
               a seek per read. The gap between the dots of a level is what a concurrent load costs it."
            .into(),
        x,
        y: Axis::log("read throughput (MB/s, log scale)", lo / 2.0, hi * 2.0, num),
        series,
        marks: Vec::new(),
    })
}

/// MB/s by device-cache region: flat while a cache serves the reads, then down to the media's level.
pub fn cliff_chart(cache: &CacheSummary) -> Option<Chart> {
    let steps = &cache.device_cache_steps;
    if steps.len() < 2 {
        return None;
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let points = steps.iter().map(|s| Some((mib(s.region_bytes), s.mbps))).collect::<Vec<_>>();
    let level = |kind: PlateauKind| cache.plateaus.iter().find(|p| p.kind == kind && !p.under_load).map(|p| p.mbps);
    let mut marks = Vec::new();
    if let Some(media) = level(PlateauKind::Media) {
        marks.push(Mark::Horizontal(media, format!("sustained media {} MB/s", format_mbps(media))));
    }
    if let Some(end) =
        cache.device_cache_end.as_ref().and_then(|e| Some((e.cached_up_to_bytes?, e.uncached_from_bytes?)))
    {
        let middle = (mib(end.0) * mib(end.1)).sqrt();
        marks.push(Mark::Vertical(middle, format!("cache ends ({}–{})", Bytes(end.0), Bytes(end.1))));
    }
    let values = steps.iter().map(|s| s.mbps).chain(level(PlateauKind::Media));
    let hi = values.fold(0.0f64, f64::max);
    let (first, last) = (mib(steps[0].region_bytes), mib(steps[steps.len() - 1].region_bytes));
    let mut x = Axis::log("region re-read (MiB, log scale)", first / 1.5, last * 1.5, num);
    x.ticks = Some(steps.iter().map(|s| (mib(s.region_bytes), Bytes(s.region_bytes).to_string())).collect());
    Some(Chart {
        id: "cache-cliff".into(),
        title: "Device cache: repeated direct reads by region size".into(),
        hint: "While a cache beneath the OS holds the region, repeated reads stay fast; where the line falls to the \
               media's level, that cache has ended (the cliff)."
            .into(),
        x,
        y: Axis::linear("read throughput (MB/s)", 0.0, super::svg::headroom(hi), num),
        series: vec![
            Series::new("repeated reads", Style::Line, 0, points.clone()),
            // A colour of its own: a legend of two entries in one colour cannot be read (issue 30).
            Series::new("measured regions", Style::Points, 1, points),
        ],
        marks,
    })
}
