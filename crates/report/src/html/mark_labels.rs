//! Where the label of a vertical mark (a phase boundary, an answer, a bound) goes: in rows at the top of the
//! plot, each label in the first row where it overlaps neither another label nor a data point (issue 30: phase
//! labels written over each other into a jumble, and a bound's label drawn over the points it explains). Pure
//! geometry in the chart's pixels; the browser test measures the real boxes.

/// The first row's baseline below the plot's top, and the distance between rows.
pub const FIRST_ROW: f64 = 12.0;
pub const ROW: f64 = 13.0;
/// Label text is 11 px: its box reaches this far above its baseline and below it.
const ASCENT: f64 = 11.0;
const DESCENT: f64 = 3.0;
/// A point is drawn as a circle of this radius.
const POINT: f64 = 4.0;
/// Space kept between two labels of a row.
const GAP: f64 = 6.0;

/// The rows of labels, each holding the horizontal spans taken in it, and the points labels must not cover.
pub struct LabelRows {
    top: f64,
    rows: Vec<Vec<(f64, f64)>>,
    points: Vec<(f64, f64)>,
}

impl LabelRows {
    /// Rows from the plot's top edge `top`, around the drawn `points` (pixel centres).
    pub fn new(top: f64, points: Vec<(f64, f64)>) -> LabelRows {
        LabelRows { top, rows: Vec::new(), points }
    }

    /// The baseline of row `row`.
    pub fn baseline(&self, row: usize) -> f64 {
        self.top + FIRST_ROW + ROW * row as f64
    }

    /// The first row where `(start, end)` overlaps no label (with a small gap) and covers no point, which it
    /// then takes.
    pub fn place(&mut self, (start, end): (f64, f64)) -> usize {
        let row = (0..)
            .find(|&row| {
                let labels_clear = self
                    .rows
                    .get(row)
                    .is_none_or(|taken| taken.iter().all(|(a, b)| end + GAP <= *a || start >= b + GAP));
                labels_clear && !self.covers_a_point(row, (start, end))
            })
            .unwrap_or(self.rows.len());
        if row >= self.rows.len() {
            self.rows.resize(row + 1, Vec::new());
        }
        self.rows[row].push((start, end));
        row
    }

    fn covers_a_point(&self, row: usize, (start, end): (f64, f64)) -> bool {
        let baseline = self.baseline(row);
        let (top, bottom) = (baseline - ASCENT, baseline + DESCENT);
        self.points.iter().any(|&(x, y)| x + POINT > start && x - POINT < end && y + POINT > top && y - POINT < bottom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_labels_take_the_first_row_where_they_overlap_nothing() {
        let mut rows = LabelRows::new(0.0, Vec::new());
        assert_eq!(rows.place((100.0, 200.0)), 0);
        assert_eq!(rows.place((150.0, 250.0)), 1, "overlaps the first");
        assert_eq!(rows.place((210.0, 300.0)), 0, "fits beside the first");
        assert_eq!(rows.place((140.0, 160.0)), 2, "under both");
        assert_eq!(rows.place((20.0, 60.0)), 0, "left of everything");
    }

    #[test]
    fn a_label_moves_below_a_point_it_would_cover() {
        // A point at the top of the plot, under where the first row's label would go: the label takes row 1;
        // one clear of the point keeps row 0. Rows run 12, 25, 38 px below the top.
        let mut rows = LabelRows::new(22.0, vec![(150.0, 30.0)]);
        assert_eq!(rows.place((100.0, 200.0)), 1);
        assert_eq!(rows.place((300.0, 400.0)), 0);
        // A point low in the plot covers no row near the top.
        let mut low = LabelRows::new(22.0, vec![(150.0, 200.0)]);
        assert_eq!(low.place((100.0, 200.0)), 0);
    }
}
