//! Log-log line and scatter charts, and charts of values per category, as
//! SVG files.
//!
//! Most experiment plots are a [`Chart`]: a title, two axis labels with
//! units, a set of named [`Series`] (one legend entry each) and how to
//! label the ticks. Both axes are logarithmic: times, sizes and counts
//! all span orders of magnitude, and a straight line of slope 1 then reads
//! as "proportional". Ticks sit at the data's own x values when there are
//! few (k = 1, 2, 4 …), else at powers of ten (or of two for sizes).
//!
//! A [`CategoryChart`] puts named categories (the key sorts of the sort
//! campaign's keys experiment) on the x axis and a logarithmic y axis:
//! each [`RangeSeries`] is a marker per category at its value with a
//! vertical bar over its range (min – max of the repetitions), side by
//! side within the category, or a reference (a bound) drawn as a
//! horizontal mark across the category.
//!
//! Every series of either kind has its own colour *and* marker shape
//! ([`Marker`]), so that series stay apart in grey print and for readers
//! who do not tell the colours apart. [`draw_all`] draws either kind
//! ([`Draw`]).
//!
//! Drawn with plotters' SVG backend, whose text layout needs no font files.

use std::path::Path;

use emsort_io::format_size;
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::{Error, Result};

/// One named line (or set of points), with the spread of its points when
/// they are medians of repetitions.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// (x, lo, hi): a vertical bar with caps from lo to hi at x (the min
    /// and max of the repetitions behind the point at x); empty: none.
    pub ranges: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A series without bars.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, ranges: Vec::new() }
    }

    /// A series of medians, each with the (min, max) of its repetitions:
    /// `(x, median, min, max)`.
    pub fn spread(
        label: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64, f64, f64)>,
    ) -> Series {
        let (points, ranges) = points.into_iter().map(|(x, y, lo, hi)| ((x, y), (x, lo, hi))).unzip();
        Series { label: label.into(), points, ranges }
    }
}

/// How tick values are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ticks {
    /// Element or call counts: `1e6`, `1234`.
    Count,
    /// Byte sizes: `4`, `64K`, `1M`.
    Bytes,
    /// Small integers (k): `1`, `2`, `30`.
    Plain,
    /// Durations: `10 us`, `2 ms`, `1.5 s`.
    Seconds,
}

impl Ticks {
    fn format(self, v: f64) -> String {
        match self {
            Ticks::Count => format_si(v),
            Ticks::Bytes => format_bytes(v),
            Ticks::Plain => format!("{}", v.round()),
            Ticks::Seconds => format_seconds(v),
        }
    }
}

/// A byte size: exact (`64K`) when a power-of-1024 unit divides it, else
/// rounded to the largest unit it reaches (`400000` → `391K`, `4000000` →
/// `3.8M`).
pub(crate) fn format_bytes(v: f64) -> String {
    let b = v.round().max(0.0) as u64;
    let exact = format_size(b);
    if exact.ends_with(['K', 'M', 'G', 'T', 'P']) || b < 1024 {
        return exact;
    }
    let (x, unit) = [(1u64 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")]
        .into_iter()
        .find(|&(u, _)| b >= u)
        .map(|(u, n)| (b as f64 / u as f64, n))
        .unwrap_or((b as f64, ""));
    if x < 10.0 {
        format!("{x:.1}{unit}")
    } else {
        format!("{x:.0}{unit}")
    }
}

/// A count with an SI prefix and at most three significant digits:
/// `500`, `2k`, `1.5M`, `10G` (small fractions as they are: `0.25`).
fn format_si(v: f64) -> String {
    let (x, unit) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|&(u, _)| v >= u * (1.0 - 1e-9))
        .map(|(u, n)| (v / u, n))
        .unwrap_or((v, ""));
    format!("{}{unit}", three_digits(x))
}

/// `v` with at most three significant digits (for 1 ≤ v < 1000) and no
/// trailing zeros: `12.3`, `2`, `500`.
fn three_digits(v: f64) -> String {
    let text = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A duration in the unit that keeps 1–3 integer digits.
pub(crate) fn format_seconds(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    let text = three_digits(v);
    format!("{text} {unit}")
}

/// Where the legend goes (away from where the lines usually are).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Legend {
    UpperLeft,
    UpperRight,
}

/// A log-log chart (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Ticks,
    pub y_ticks: Ticks,
    pub series: Vec<Series>,
    /// Join each series' points with a line (else a scatter plot).
    pub lines: bool,
    /// Draw the y = x diagonal (counted vs predicted).
    pub diagonal: bool,
    pub legend: Legend,
}

/// Tableau 10: distinct, colour-blind-friendly colours.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The shape of a series' markers: the i-th series of a chart gets
/// `MARKERS[i % MARKERS.len()]` (and the i-th colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Cross,
}

/// The marker shapes in the order series get them.
const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
];

impl Marker {
    /// The marker of the `i`-th series.
    pub fn nth(i: usize) -> Marker {
        MARKERS[i % MARKERS.len()]
    }

    /// The outline of the marker around (0, 0) in pixels, radius `r`: a
    /// polygon the SVG backend fills.
    fn outline(self, r: i32) -> Vec<(i32, i32)> {
        let h = r / 3 + 1;
        match self {
            Marker::Circle => (0..12)
                .map(|k| {
                    let a = k as f64 * std::f64::consts::PI / 6.0;
                    ((r as f64 * a.cos()).round() as i32, (r as f64 * a.sin()).round() as i32)
                })
                .collect(),
            Marker::Square => vec![(-r + 1, -r + 1), (r - 1, -r + 1), (r - 1, r - 1), (-r + 1, r - 1)],
            Marker::TriangleUp => vec![(0, -r - 1), (r, r - 1), (-r, r - 1)],
            Marker::Diamond => vec![(0, -r - 1), (r, 0), (0, r + 1), (-r, 0)],
            Marker::TriangleDown => vec![(0, r + 1), (r, -r + 1), (-r, -r + 1)],
            Marker::Cross => vec![
                (-h, -r),
                (h, -r),
                (h, -h),
                (r, -h),
                (r, h),
                (h, h),
                (h, r),
                (-h, r),
                (-h, h),
                (-r, h),
                (-r, -h),
                (-h, -h),
            ],
        }
    }

    /// The marker at pixel offset `at` of a composed element (a legend
    /// entry, or a point: `EmptyElement::at(p) + marker.element(…)`).
    fn element(self, at: (i32, i32), colour: RGBColor) -> Polygon<(i32, i32)> {
        let pts = self.outline(5).into_iter().map(|(x, y)| (x + at.0, y + at.1)).collect::<Vec<_>>();
        Polygon::new(pts, colour.filled())
    }
}

/// Something [`draw_all`] can draw into an SVG file.
pub(crate) trait Draw {
    /// Draws to `path` when there is enough to draw; returns whether it drew.
    fn draw(&self, path: &Path) -> Result<bool>;
}

impl Draw for Chart {
    fn draw(&self, path: &Path) -> Result<bool> {
        Chart::draw(self, path)
    }
}

/// The padded logarithmic range of a chart's y values `y0 ..= y1`: at
/// least a factor of 4 (a nearly flat series still gets a readable axis),
/// then a margin of 1.6× on either side.
fn log_y_range(y0: f64, y1: f64) -> (f64, f64) {
    let (y0, y1) = if y1 / y0 < 4.0 {
        let mid = (y0 * y1).sqrt();
        (mid / 2.0, mid * 2.0)
    } else {
        (y0, y1)
    };
    (y0 / 1.6, y1 * 1.6)
}

impl Chart {
    /// Distinct x values over all series.
    pub fn distinct_x(&self) -> usize {
        let mut xs: Vec<f64> = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len()
    }

    /// Draws the chart to `path` when the data have at least two distinct x
    /// values; returns whether it drew. Points with a non-positive or
    /// non-finite coordinate cannot go on a log axis and are left out.
    pub fn draw(&self, path: &Path) -> Result<bool> {
        let mut chart = self.clone();
        let ok = |v: f64| v > 0.0 && v.is_finite();
        for s in &mut chart.series {
            s.points.retain(|&(x, y)| ok(x) && ok(y));
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            s.ranges.retain(|&(x, lo, hi)| ok(x) && ok(lo) && ok(hi) && lo <= hi);
        }
        chart.series.retain(|s| !s.points.is_empty());
        if chart.distinct_x() < 2 {
            return Ok(false);
        }
        chart.render(path).map_err(|msg| Error::Plot { path: path.to_path_buf(), msg })?;
        Ok(true)
    }

    fn render(&self, path: &Path) -> std::result::Result<(), String> {
        let ranges = self.series.iter().flat_map(|s| &s.ranges);
        let bars = ranges.clone().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
        let all = self.series.iter().flat_map(|s| s.points.iter().copied()).chain(bars);
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in all {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        let y_label = match ranges.count() {
            0 => self.y_label.clone(),
            _ => format!("{} (bars: min–max of the runs)", self.y_label),
        };
        if self.diagonal {
            // Same range on both axes so that y = x is the diagonal.
            let (lo, hi) = (x0.min(y0), x1.max(y1));
            (x0, x1, y0, y1) = (lo, hi, lo, hi);
        }
        let (x0, x1) = (x0 / 1.25, x1 * 1.25);
        let (y0, y1) = log_y_range(y0, y1);
        let xs = self.x_key_points(x0, x1);
        let ys = log_key_points(y0, y1, 10.0);

        let root = canvas(path)?;
        let e = |e: &dyn std::fmt::Display| e.to_string();
        let mut ctx = plot_area(&root, &self.title)
            .build_cartesian_2d(
                (x0..x1).log_scale().with_key_points(xs),
                (y0..y1).log_scale().with_key_points(ys),
            )
            .map_err(|x| e(&x))?;
        let (xt, yt) = (self.x_ticks, self.y_ticks);
        let (x_format, y_format) = (|v: &f64| xt.format(*v), |v: &f64| yt.format(*v));
        let mut mesh = ctx.configure_mesh();
        mesh.x_label_formatter(&x_format).y_label_formatter(&y_format);
        axes_style(&mut mesh, &self.x_label, &y_label).draw().map_err(|x| e(&x))?;

        if self.diagonal {
            let grey = RGBColor(120, 120, 120);
            ctx.draw_series(LineSeries::new([(x0, x0), (x1, x1)], grey.stroke_width(1)))
                .map_err(|x| e(&x))?
                .label("y = x (counted = predicted)")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], grey));
        }
        for (i, s) in self.series.iter().enumerate() {
            let (c, m) = (COLOURS[i % COLOURS.len()], Marker::nth(i));
            if self.lines {
                ctx.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                    .map_err(|x| e(&x))?;
            }
            // Each bar, and its caps 10 pixels wide.
            ctx.draw_series(s.ranges.iter().flat_map(|&(x, lo, hi)| {
                let cap =
                    |y| EmptyElement::at((x, y)) + PathElement::new([(-5, 0), (5, 0)], c.stroke_width(1));
                [cap(lo), cap(hi)]
            }))
            .map_err(|x| e(&x))?;
            ctx.draw_series(
                s.ranges.iter().map(|&(x, lo, hi)| PathElement::new([(x, lo), (x, hi)], c.stroke_width(1))),
            )
            .map_err(|x| e(&x))?;
            draw_markers(&mut ctx, s.points.iter().copied(), &s.label, c, m)?;
        }
        draw_legend(&mut ctx, self.legend)?;
        root.present().map_err(|x| e(&x))?;
        Ok(())
    }

    /// Ticks at the data's x values when there are at most 12 of them,
    /// else at powers of ten (two for byte sizes, thinned to about ten).
    fn x_key_points(&self, lo: f64, hi: f64) -> Vec<f64> {
        let mut xs: Vec<f64> = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        if xs.len() <= 12 {
            return xs;
        }
        let base = if self.x_ticks == Ticks::Bytes { 2.0 } else { 10.0 };
        log_key_points(lo, hi, base)
    }
}

/// The white 960 × 640 canvas every chart is drawn on, writing `path`.
fn canvas(path: &Path) -> std::result::Result<DrawingArea<SVGBackend<'_>, Shift>, String> {
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| x.to_string())?;
    Ok(root)
}

/// The builder of a chart's plot area on `root`: the title, the margin
/// and the room for the axes' labels.
fn plot_area<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 24)).margin(16).x_label_area_size(56).y_label_area_size(84);
    b
}

/// The axes' descriptions and the fonts and grid lines every chart shares.
fn axes_style<'m, 'a, 'b, X: Ranged, Y: Ranged>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>,
    x_label: &str,
    y_label: &str,
) -> &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'a>> {
    mesh.x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .bold_line_style(BLACK.mix(0.12))
}

/// Draws a series' `points` as markers of shape `m` in colour `c`, and
/// gives it its legend entry: a short line in its colour with its marker.
fn draw_markers<'a, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    points: impl Iterator<Item = (f64, f64)>,
    label: &str,
    c: RGBColor,
    m: Marker,
) -> std::result::Result<(), String> {
    ctx.draw_series(points.map(|p| EmptyElement::at(p) + m.element((0, 0), c)))
        .map_err(|x| x.to_string())?
        .label(label)
        .legend(move |(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new([(-10, 0), (10, 0)], c.stroke_width(2))
                + m.element((0, 0), c)
        });
    Ok(())
}

/// Draws the legend box of a chart's series.
fn draw_legend<'a, X: Ranged, Y: Ranged>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    legend: Legend,
) -> std::result::Result<(), String> {
    ctx.configure_series_labels()
        .position(match legend {
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
        })
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(|x| x.to_string())
}

/// A value of one category and its range ([`CategoryChart`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangePoint {
    /// The category's index in [`CategoryChart::categories`].
    pub category: usize,
    /// The value (a median): the marker.
    pub value: f64,
    /// The range (min, max) the bar spans; `None`: no bar.
    pub range: Option<(f64, f64)>,
}

/// One named set of marks on a [`CategoryChart`].
#[derive(Debug, Clone)]
pub(crate) struct RangeSeries {
    pub label: String,
    pub points: Vec<RangePoint>,
    /// A reference (a bound): a horizontal mark across the category with
    /// the marker at its right end, not a point beside the others.
    pub reference: bool,
}

/// Values per named category on a logarithmic y axis (see the module
/// docs): within a category the measured series stand side by side in
/// their order, each a marker at its value and a bar with caps over its
/// range; the reference series span the category.
#[derive(Debug, Clone)]
pub(crate) struct CategoryChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y_ticks: Ticks,
    /// The x axis' categories, left to right.
    pub categories: Vec<String>,
    pub series: Vec<RangeSeries>,
    pub legend: Legend,
}

impl CategoryChart {
    /// The x position of measured series `j` of `k` in category `i`: the
    /// series side by side over the middle 70 % of the category's slot.
    fn dodge(i: usize, j: usize, k: usize) -> f64 {
        i as f64 - 0.35 + 0.7 * (j as f64 + 0.5) / k.max(1) as f64
    }

    /// The chart with only the points a log axis can show (positive,
    /// finite; a range that is not is dropped) and no empty series.
    fn drawable(&self) -> CategoryChart {
        let ok = |v: f64| v > 0.0 && v.is_finite();
        let mut c = self.clone();
        for s in &mut c.series {
            s.points.retain(|p| ok(p.value) && p.category < self.categories.len());
            for p in &mut s.points {
                p.range = p.range.filter(|&(lo, hi)| ok(lo) && ok(hi) && lo <= hi);
            }
        }
        c.series.retain(|s| !s.points.is_empty());
        c
    }
}

impl Draw for CategoryChart {
    /// Draws when at least one series has a point (one category is enough).
    fn draw(&self, path: &Path) -> Result<bool> {
        let chart = self.drawable();
        if chart.series.is_empty() {
            return Ok(false);
        }
        chart.render(path).map_err(|msg| Error::Plot { path: path.to_path_buf(), msg })?;
        Ok(true)
    }
}

impl CategoryChart {
    fn render(&self, path: &Path) -> std::result::Result<(), String> {
        let (mut y0, mut y1) = (f64::MAX, f64::MIN);
        for p in self.series.iter().flat_map(|s| &s.points) {
            let (lo, hi) = p.range.unwrap_or((p.value, p.value));
            y0 = y0.min(lo.min(p.value));
            y1 = y1.max(hi.max(p.value));
        }
        let (y0, y1) = log_y_range(y0, y1);
        // Headroom for the legend: the marks keep to the lower 60 % of the
        // height, which a value in any category may reach.
        let y1 = y1 * (y1 / y0).powf(2.0 / 3.0);
        let n = self.categories.len();
        let ys = log_key_points(y0, y1, 10.0);

        let root = canvas(path)?;
        let e = |e: &dyn std::fmt::Display| e.to_string();
        let mut ctx = plot_area(&root, &self.title)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (y0..y1).log_scale().with_key_points(ys))
            .map_err(|x| e(&x))?;
        let names = &self.categories;
        let yt = self.y_ticks;
        // At most n + 1 labels over a range n wide: plotters puts them at the
        // whole numbers, the categories' centres (a name only there).
        let name = |v: &f64| match names.get(v.round().max(0.0) as usize) {
            Some(s) if (v - v.round()).abs() < 1e-6 => s.clone(),
            _ => String::new(),
        };
        let y_format = |v: &f64| yt.format(*v);
        let mut mesh = ctx.configure_mesh();
        mesh.disable_x_mesh().x_labels(n + 1).x_label_formatter(&name).y_label_formatter(&y_format);
        axes_style(&mut mesh, &self.x_label, &self.y_label).draw().map_err(|x| e(&x))?;

        let k = self.series.iter().filter(|s| !s.reference).count();
        let mut j = 0;
        for (i, s) in self.series.iter().enumerate() {
            let (c, m) = (COLOURS[i % COLOURS.len()], Marker::nth(i));
            let style = c.stroke_width(2);
            if s.reference {
                ctx.draw_series(s.points.iter().map(|p| {
                    let x = p.category as f64;
                    PathElement::new([(x - 0.45, p.value), (x + 0.45, p.value)], style)
                }))
                .map_err(|x| e(&x))?;
            } else {
                let at = |p: &RangePoint| Self::dodge(p.category, j, k);
                let cap = 0.25 / k.max(1) as f64;
                ctx.draw_series(s.points.iter().filter_map(|p| {
                    let (x, (lo, hi)) = (at(p), p.range?);
                    Some(PathElement::new([(x, lo), (x, hi)], style))
                }))
                .map_err(|x| e(&x))?;
                ctx.draw_series(s.points.iter().filter_map(|p| p.range.map(|r| (at(p), r))).flat_map(
                    |(x, (lo, hi))| {
                        [lo, hi].map(|y| PathElement::new([(x - cap / 2.0, y), (x + cap / 2.0, y)], style))
                    },
                ))
                .map_err(|x| e(&x))?;
            }
            // A reference's marker at the right end of its mark, clear of
            // the measured series' markers and bars.
            let centre = |p: &RangePoint| {
                if s.reference {
                    p.category as f64 + 0.45
                } else {
                    Self::dodge(p.category, j, k)
                }
            };
            draw_markers(&mut ctx, s.points.iter().map(|p| (centre(p), p.value)), &s.label, c, m)?;
            if !s.reference {
                j += 1;
            }
        }
        draw_legend(&mut ctx, self.legend)?;
        root.present().map_err(|x| e(&x))?;
        Ok(())
    }
}

/// Powers of `base` in [lo, hi], thinned to at most about ten; with fewer
/// than four powers of ten, the 2× and 5× multiples as well.
fn log_key_points(lo: f64, hi: f64, base: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut p = base.powf((lo.ln() / base.ln()).ceil());
    while p <= hi * (1.0 + 1e-9) {
        v.push(p);
        p *= base;
    }
    if base == 10.0 && v.len() < 4 {
        let mut m: Vec<f64> = Vec::new();
        let mut d = 10f64.powf(lo.log10().floor());
        while d <= hi {
            m.extend([d, 2.0 * d, 5.0 * d].into_iter().filter(|&x| x >= lo && x <= hi));
            d *= 10.0;
        }
        return m;
    }
    let step = v.len().div_ceil(10).max(1);
    v.into_iter().step_by(step).collect()
}

/// Draws each named chart as `out/<name>.svg` (creating `out`), skipping
/// charts with too little data; returns the files drawn.
pub(crate) fn draw_all<C: Draw>(
    out: &std::path::Path,
    charts: impl IntoIterator<Item = (String, C)>,
) -> crate::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| crate::Error::io("create directory", out, e))?;
    let mut drawn = Vec::new();
    for (name, chart) in charts {
        let path = out.join(format!("{name}.svg"));
        if chart.draw(&path)? {
            drawn.push(path);
        }
    }
    Ok(drawn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>) -> Chart {
        Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_ticks: Ticks::Count,
            y_ticks: Ticks::Seconds,
            series: vec![Series::new("a", points)],
            lines: true,
            diagonal: false,
            legend: Legend::UpperLeft,
        }
    }

    #[test]
    fn count_ticks_use_si_prefixes() {
        let f = |v| Ticks::Count.format(v);
        assert_eq!(
            [f(1.0), f(500.0), f(2000.0), f(1e6), f(1.5e6), f(2.5e7), f(1e10), f(0.25)],
            ["1", "500", "2k", "1M", "1.5M", "25M", "10G", "0.25"]
        );
    }

    /// A series' bars widen the y axis to the runs' range and say so in the
    /// axis' label.
    #[test]
    fn bars_show_the_spread_of_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.svg");
        let mut c = chart(Vec::new());
        c.series = vec![Series::spread("a", [(10.0, 1.0, 0.5, 40.0), (100.0, 2.0, 1.5, 2.5)])];
        assert!(c.draw(&p).unwrap());
        let svg = std::fs::read_to_string(&p).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(texts.iter().any(|t| t.contains("bars: min–max of the runs")), "no note of the bars");
        // The axis reaches the largest run (40 s), not only the medians.
        assert!(texts.contains(&"20 s") || texts.contains(&"50 s"), "axis misses the bar's top: {texts:?}");
    }

    #[test]
    fn skips_charts_with_one_x_value() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.svg");
        assert!(!chart(vec![(10.0, 1.0), (10.0, 2.0)]).draw(&p).unwrap());
        assert!(!p.exists());
        assert!(chart(vec![(10.0, 1.0), (100.0, 2.0)]).draw(&p).unwrap());
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg"));
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(texts.contains(&"t") && texts.contains(&"a"), "title and legend missing");
    }

    /// A category chart draws with one category; points a log axis cannot
    /// show are left out, and a chart left with none is not drawn.
    #[test]
    fn category_charts_draw_what_they_can() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.svg");
        let pt = |category, value, range| RangePoint { category, value, range };
        let mut c = CategoryChart {
            title: "keys".into(),
            x_label: "key sort".into(),
            y_label: "time".into(),
            y_ticks: Ticks::Seconds,
            categories: vec!["-u".into()],
            series: vec![
                RangeSeries {
                    label: "a".into(),
                    points: vec![pt(0, 2.0, Some((1.0, 3.0)))],
                    reference: false,
                },
                RangeSeries { label: "bound".into(), points: vec![pt(0, 0.5, None)], reference: true },
            ],
            legend: Legend::UpperRight,
        };
        assert!(c.draw(&p).unwrap());
        let svg = std::fs::read_to_string(&p).unwrap();
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(["keys", "-u", "a", "bound", "1 s"].iter().all(|t| texts.contains(t)), "{svg}");
        // A NaN median (every run failed), a range below zero, a category
        // out of range: dropped.
        c.series[0].points = vec![pt(0, f64::NAN, None), pt(0, 1.0, Some((-1.0, 2.0))), pt(5, 1.0, None)];
        let d = c.drawable();
        assert_eq!(d.series[0].points, [pt(0, 1.0, None)]);
        c.series[0].points.clear();
        c.series[1].points.clear();
        let q = dir.path().join("d.svg");
        assert!(!c.draw(&q).unwrap() && !q.exists());
        // Each series its own marker shape (and colour) up to six series.
        let shapes: Vec<Vec<(i32, i32)>> = (0..MARKERS.len()).map(|i| Marker::nth(i).outline(5)).collect();
        assert!(shapes.iter().enumerate().all(|(i, a)| shapes[..i].iter().all(|b| a != b)));
        assert_eq!(Marker::nth(MARKERS.len()), Marker::Circle);
    }

    #[test]
    fn tick_formats() {
        assert_eq!(format_seconds(0.0123), "12.3 ms");
        assert_eq!(format_seconds(2.0), "2 s");
        assert_eq!(format_seconds(5e-7), "500 ns");
        assert_eq!(format_seconds(2.5e-5), "25 us");
        assert_eq!(Ticks::Bytes.format(65536.0), "64K");
        assert_eq!(Ticks::Bytes.format(64.0), "64");
        assert_eq!(Ticks::Bytes.format(400000.0), "391K");
        assert_eq!(Ticks::Bytes.format(4000000.0), "3.8M");
        assert_eq!(Ticks::Count.format(1e6), "1M");
        assert_eq!(log_key_points(1.0, 1e6, 10.0).len(), 7);
        assert_eq!(log_key_points(0.011, 0.09, 10.0), vec![0.02, 0.05]);
        assert_eq!(log_key_points(4.0, 64.0 * 1048576.0, 2.0).len(), 9);
    }
}
