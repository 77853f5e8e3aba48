//! A small SVG chart writer for the HTML report: line, stacked-area and point series on linear or log axes, with
//! tick labels, axis titles that carry the unit, shaded bands (ramps), vertical marks (phase boundaries, answers,
//! bounds) and horizontal marks (targets). It knows nothing about results: callers hand it numbers. Colours are
//! CSS classes (`s0`…`s7`, `band`, `mark`) so that the page's light, dark and print styles apply; the SVG carries
//! no style of its own and no script. Text width is estimated (no font metrics), so margins are generous.

use std::fmt::Write as _;

use super::mark_labels::LabelRows;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 280.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 46.0;

/// One axis: its title (with the unit), its range, and how ticks are labelled.
pub struct Axis {
    pub title: String,
    pub min: f64,
    pub max: f64,
    /// Logarithmic (base 10); `min` must then be above zero.
    pub log: bool,
    /// Fixed ticks (position, label) instead of computed ones.
    pub ticks: Option<Vec<(f64, String)>>,
    /// Labels computed ticks.
    pub format: fn(f64) -> String,
}

impl Axis {
    /// A linear axis; an empty range (every value the same) is widened so that it still has a scale.
    pub fn linear(title: &str, min: f64, max: f64, format: fn(f64) -> String) -> Axis {
        let max = if max > min { max } else { min + min.abs().max(1.0) };
        Axis { title: title.into(), min, max, log: false, ticks: None, format }
    }

    pub fn log(title: &str, min: f64, max: f64, format: fn(f64) -> String) -> Axis {
        let min = min.max(f64::MIN_POSITIVE);
        let max = if max > min { max } else { min * 10.0 };
        Axis { title: title.into(), min, max, log: true, ticks: None, format }
    }

    /// Position 0–1 along the axis.
    fn fraction(&self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.min.log10(), self.max.log10(), v.max(self.min).log10())
        } else {
            (self.min, self.max, v)
        };
        if hi > lo { ((v - lo) / (hi - lo)).clamp(0.0, 1.0) } else { 0.5 }
    }

    fn tick_values(&self) -> Vec<(f64, String)> {
        if let Some(ticks) = &self.ticks {
            return ticks.clone();
        }
        let mut values = if self.log { log_ticks(self.min, self.max) } else { nice_ticks(self.min, self.max) };
        // An axis needs three ticks to be read (issue 30: one tick on a latency chart, one or two on the sweep's
        // log axes): short of that, its two ends and the middle.
        if values.len() < 3 && self.max > self.min {
            let mid = if self.log { (self.min * self.max).sqrt() } else { (self.min + self.max) / 2.0 };
            values = vec![self.min, mid, self.max];
        }
        values.into_iter().map(|v| (v, (self.format)(v))).collect()
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A line; a `None` point breaks it (a new phase starts a new segment).
    Line,
    /// A filled band between this series and the one below it (values already stacked by the caller).
    Stacked,
    /// Separate points.
    Points,
}

pub struct Series {
    pub name: String,
    pub style: Style,
    /// (x, y) points; `None` breaks a line.
    pub points: Vec<Option<(f64, f64)>>,
    /// Colour index (CSS class `s{n}`); several series may share one (a run in a comparison).
    pub colour: usize,
    /// Dashed (a second figure of the same colour, e.g. p99 beside p50).
    pub dashed: bool,
}

impl Series {
    pub fn new(name: &str, style: Style, colour: usize, points: Vec<Option<(f64, f64)>>) -> Series {
        Series { name: name.into(), style, points, colour, dashed: false }
    }

    fn is_empty(&self) -> bool {
        self.points.iter().all(Option::is_none)
    }
}

/// A marked stretch or point of the x axis, or a level of the y axis.
pub enum Mark {
    /// Shaded from x to x (a ramp, excluded from the figures).
    Band(f64, f64, String),
    /// A vertical line at x (a phase boundary, an answer, a bound).
    Vertical(f64, String),
    /// A horizontal line at y (a target).
    Horizontal(f64, String),
}

pub struct Chart {
    /// Stable id for the page and its tests ("timeline-mbps").
    pub id: String,
    pub title: String,
    /// One line: what to look at.
    pub hint: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
}

impl Chart {
    /// Series that have at least one point: the ones drawn.
    pub fn drawn(&self) -> impl Iterator<Item = &Series> {
        self.series.iter().filter(|s| !s.is_empty())
    }

    /// The chart as a `<figure>`: title, hint, the SVG and a legend.
    pub fn html(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<figure class=\"chart\" id=\"{}\"><figcaption><b>{}</b> <span class=\"hint\">{}</span></figcaption>",
            esc(&self.id),
            esc(&self.title),
            esc(&self.hint)
        );
        out.push_str(&self.svg());
        out.push_str("<ul class=\"legend\">");
        for s in self.drawn() {
            let dash = if s.dashed { " dashed" } else { "" };
            let _ = write!(out, "<li><span class=\"swatch s{}{dash}\"></span>{}</li>", s.colour % 8, esc(&s.name));
        }
        out.push_str("</ul></figure>\n");
        out
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + self.x.fraction(x) * (WIDTH - LEFT - RIGHT)
    }

    fn py(&self, y: f64) -> f64 {
        HEIGHT - BOTTOM - self.y.fraction(y) * (HEIGHT - TOP - BOTTOM)
    }

    fn svg(&self) -> String {
        let drawn = self.drawn().count();
        let mut out = format!(
            "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\" data-series=\"{drawn}\">",
            esc(&self.title)
        );
        self.write_marks(&mut out, true);
        self.write_axes(&mut out);
        let mut below: Option<&Series> = None;
        for s in self.drawn() {
            self.write_series(&mut out, s, below.filter(|_| s.style == Style::Stacked));
            below = Some(s);
        }
        self.write_marks(&mut out, false);
        out.push_str("</svg>");
        out
    }

    fn write_axes(&self, out: &mut String) {
        let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
        for (v, label) in self.y.tick_values() {
            let y = self.py(v);
            let _ = write!(out, "<line class=\"grid\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>");
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                esc(&label)
            );
        }
        for (v, label) in self.x.tick_values() {
            let x = self.px(v);
            let _ = write!(out, "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>");
            let _ = write!(
                out,
                "<text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 15.0,
                esc(&label)
            );
        }
        let _ =
            write!(out, "<rect class=\"frame\" x=\"{x0}\" y=\"{y0}\" width=\"{}\" height=\"{}\"/>", x1 - x0, y1 - y0);
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            HEIGHT - 8.0,
            esc(&self.x.title)
        );
        let _ = write!(
            out,
            "<text class=\"axis\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            (y0 + y1) / 2.0,
            esc(&self.y.title)
        );
    }

    fn write_series(&self, out: &mut String, s: &Series, below: Option<&Series>) {
        let class = format!("series s{}{}", s.colour % 8, if s.dashed { " dashed" } else { "" });
        let name = esc(&s.name);
        match s.style {
            Style::Line => {
                let _ = write!(
                    out,
                    "<path class=\"{class} line\" data-name=\"{name}\" d=\"{}\"/>",
                    self.line_path(&s.points)
                );
            }
            Style::Stacked => {
                let _ = write!(
                    out,
                    "<path class=\"{class} area\" data-name=\"{name}\" d=\"{}\"/>",
                    self.area_path(s, below)
                );
            }
            Style::Points => {
                let _ = write!(out, "<g class=\"{class} points\" data-name=\"{name}\">");
                for &(x, y) in s.points.iter().flatten() {
                    let _ = write!(out, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"/>", self.px(x), self.py(y));
                }
                out.push_str("</g>");
            }
        }
    }

    fn line_path(&self, points: &[Option<(f64, f64)>]) -> String {
        let mut d = String::new();
        let mut pen_down = false;
        for p in points {
            match p {
                Some((x, y)) => {
                    let _ = write!(d, "{}{:.1},{:.1}", if pen_down { "L" } else { "M" }, self.px(*x), self.py(*y));
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        d
    }

    /// The band between this series and the one below (or the x axis), one closed shape per unbroken run.
    fn area_path(&self, s: &Series, below: Option<&Series>) -> String {
        let mut d = String::new();
        let floor = |i: usize, x: f64| below.and_then(|b| b.points.get(i).copied().flatten()).map_or((x, 0.0), |p| p);
        let mut run: Vec<usize> = Vec::new();
        let flush = |run: &mut Vec<usize>, d: &mut String| {
            for (k, &i) in run.iter().enumerate() {
                let (x, y) = s.points[i].expect("runs hold points");
                let _ = write!(d, "{}{:.1},{:.1}", if k == 0 { "M" } else { "L" }, self.px(x), self.py(y));
            }
            for &i in run.iter().rev() {
                let (x, _) = s.points[i].expect("runs hold points");
                let (_, y) = floor(i, x);
                let _ = write!(d, "L{:.1},{:.1}", self.px(x), self.py(y.max(self.y.min)));
            }
            if !run.is_empty() {
                d.push('Z');
            }
            run.clear();
        };
        for (i, p) in s.points.iter().enumerate() {
            match p {
                Some(_) => run.push(i),
                None => flush(&mut run, &mut d),
            }
        }
        flush(&mut run, &mut d);
        d
    }

    /// Bands first (under the data), lines and labels after (over it).
    fn write_marks(&self, out: &mut String, bands: bool) {
        let (y0, y1) = (TOP, HEIGHT - BOTTOM);
        let mut rows = LabelRows::new(y0, self.point_pixels());
        for mark in &self.marks {
            match (mark, bands) {
                (Mark::Band(a, b, label), true) => {
                    let (xa, xb) = (self.px(*a), self.px(*b));
                    let _ = write!(
                        out,
                        "<rect class=\"band\" x=\"{xa:.1}\" y=\"{y0}\" width=\"{:.1}\" height=\"{}\"><title>{}</title></rect>",
                        (xb - xa).max(1.0),
                        y1 - y0,
                        esc(label)
                    );
                }
                (Mark::Vertical(x, label), false) => {
                    let x = self.px(*x);
                    let _ = write!(out, "<line class=\"mark\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>");
                    // Past the middle, a label goes left of its line so that it stays inside the chart.
                    let (lx, anchor) =
                        if x > (LEFT + WIDTH - RIGHT) / 2.0 { (x - 3.0, "end") } else { (x + 3.0, "start") };
                    // Each label takes the first row where it overlaps no other (issue 30: phase labels of an
                    // over-time chart written over each other into a jumble).
                    let width = label_width(label);
                    let span = if anchor == "end" { (lx - width, lx) } else { (lx, lx + width) };
                    let row = rows.place(span);
                    let y = rows.baseline(row);
                    let _ = write!(
                        out,
                        "<text class=\"marklabel\" x=\"{lx:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{}</text>",
                        esc(label)
                    );
                }
                (Mark::Horizontal(y, label), false) => {
                    let y = self.py(*y);
                    let _ = write!(
                        out,
                        "<line class=\"mark\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>",
                        WIDTH - RIGHT
                    );
                    // At the left end: vertical marks label the top right, where answers and bounds usually are.
                    let _ = write!(
                        out,
                        "<text class=\"marklabel\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        LEFT + 4.0,
                        y - 4.0,
                        esc(label)
                    );
                }
                _ => {}
            }
        }
    }
}

impl Chart {
    /// The drawn points (series drawn as points), in pixels: what a mark's label must not cover.
    fn point_pixels(&self) -> Vec<(f64, f64)> {
        let points = self.drawn().filter(|s| s.style == Style::Points).flat_map(|s| s.points.iter().flatten());
        points.map(|&(x, y)| (self.px(x), self.py(y))).collect()
    }
}

/// Width of a mark label in the chart's units: 11 px text at about 0.6 em a character (no font is measured
/// when the page is written; the browser test measures the real boxes).
fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * 6.6
}

/// Escapes text for HTML and SVG (element content and attribute values).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Ticks at 1, 2 or 5 × 10^k, about five of them, covering [min, max].
pub fn nice_ticks(min: f64, max: f64) -> Vec<f64> {
    if max.partial_cmp(&min) != Some(std::cmp::Ordering::Greater) || !min.is_finite() || !max.is_finite() {
        return vec![min];
    }
    let rough = (max - min) / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= rough).unwrap_or(10.0 * magnitude);
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Powers of ten within [min, max].
pub fn decades(min: f64, max: f64) -> Vec<f64> {
    if min.is_nan() || max.is_nan() || min <= 0.0 || max < min {
        return Vec::new();
    }
    let (lo, hi) = (min.log10().ceil() as i32, (max.log10() + 1e-9).floor() as i32);
    (lo..=hi).map(|k| 10f64.powi(k)).collect()
}

/// Ticks of a log axis: the decades, or 1-2-5 within each decade when there are fewer than three, or every
/// 1…9 × 10^k when even those are too few (a range inside one decade).
pub fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    let decades = decades(min / 10.0, max * 10.0);
    let within = |steps: &[f64]| -> Vec<f64> {
        decades
            .iter()
            .flat_map(|d| steps.iter().map(move |s| d * s))
            .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
            .collect()
    };
    let mut ticks = within(&[1.0]);
    if ticks.len() < 3 {
        ticks = within(&[1.0, 2.0, 5.0]);
    }
    if ticks.len() < 3 {
        ticks = within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    ticks
}

/// The upper end of a linear axis: the largest value with 10 % room, never zero.
pub fn headroom(max: f64) -> f64 {
    if max > 0.0 { max * 1.1 } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> Chart {
        Chart {
            id: "t".into(),
            title: "T <&>".into(),
            hint: "look".into(),
            x: Axis::linear("time (s)", 0.0, 10.0, |v| format!("{v}")),
            y: Axis::linear("MB/s", 0.0, 100.0, |v| format!("{v}")),
            series,
            marks: vec![Mark::Vertical(5.0, "phase 2".into()), Mark::Band(0.0, 1.0, "ramp".into())],
        }
    }

    #[test]
    fn ticks_are_round_numbers_inside_the_range() {
        assert_eq!(nice_ticks(0.0, 100.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_ticks(0.0, 7.0), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(decades(0.5, 2000.0), [1.0, 10.0, 100.0, 1000.0]);
        assert!(decades(0.0, 10.0).is_empty());
    }

    #[test]
    fn a_chart_counts_and_draws_only_series_with_points() {
        let line =
            Series::new("read", Style::Line, 0, vec![Some((0.0, 10.0)), None, Some((6.0, 50.0)), Some((9.0, 60.0))]);
        let empty = Series::new("write", Style::Line, 1, vec![None]);
        let svg = chart(vec![line, empty]).svg();
        assert!(svg.contains("data-series=\"1\""));
        assert_eq!(svg.matches("class=\"series").count(), 1);
        // The break starts a new segment: two moves.
        let d = svg.split("d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(d.matches('M').count(), 2);
        assert!(svg.contains("T &lt;&amp;&gt;"));
        assert!(svg.contains("class=\"band\"") && svg.contains(">phase 2<"));
    }

    #[test]
    fn stacked_areas_close_on_the_series_below() {
        let a = Series::new("sda", Style::Stacked, 0, vec![Some((0.0, 10.0)), Some((10.0, 10.0))]);
        let b = Series::new("sdb", Style::Stacked, 1, vec![Some((0.0, 30.0)), Some((10.0, 30.0))]);
        let c = chart(vec![a, b]);
        let svg = c.svg();
        let second = svg.split("data-name=\"sdb\" d=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
        // The top edge at 30, the bottom edge back along the first series at 10.
        assert!(second.contains(&format!("{:.1}", c.py(30.0))) && second.contains(&format!("{:.1}", c.py(10.0))));
        assert!(second.ends_with('Z'));
    }

    /// Regression (issue 30): one tick on the latency-over-time chart, one or two on the sweep's log axes.
    #[test]
    fn every_axis_has_at_least_three_ticks() {
        let label = |v: f64| format!("{v}");
        let ranges = [(0.0, 0.0), (5.0, 5.0), (0.0, 1e-3), (3.2, 4.1), (0.0, 7.0), (1.0, 2.0), (0.0, 1e9), (-3.0, 2.0)];
        for (min, max) in ranges {
            let ticks = Axis::linear("x", min, max, label).tick_values();
            assert!(ticks.len() >= 3, "linear {min}..{max}: {ticks:?}");
        }
        let logs = [(150.0, 400.0), (1.0, 10.0), (4096.0, 65536.0), (1e3, 1e9), (2.0, 2.0), (1e-3, 5e-3)];
        for (min, max) in logs {
            let ticks = Axis::log("x", min, max, label).tick_values();
            assert!(ticks.len() >= 3, "log {min}..{max}: {ticks:?}");
            assert!(ticks.iter().all(|(v, _)| *v >= min * 0.999), "log {min}..{max}: {ticks:?}");
        }
        assert_eq!(log_ticks(1.0, 1000.0), [1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(1.0, 20.0), [1.0, 2.0, 5.0, 10.0, 20.0]);
    }

    #[test]
    fn log_axes_place_decades_evenly() {
        let axis = Axis::log("latency", 1.0, 100.0, |v| format!("{v}"));
        assert!((axis.fraction(10.0) - 0.5).abs() < 1e-9);
        assert_eq!(axis.fraction(0.001), 0.0);
    }
}
