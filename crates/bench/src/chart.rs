//! Log-log line and scatter charts as SVG files.
//!
//! Every experiment plot is a [`Chart`]: a title, two axis labels with
//! units, a set of named [`Series`] (one legend entry each) and how to
//! label the ticks. Both axes are logarithmic: times, sizes and counts
//! all span orders of magnitude, and a straight line of slope 1 then reads
//! as "proportional". Ticks sit at the data's own x values when there are
//! few (k = 1, 2, 4 …), else at powers of ten (or of two for sizes).
//!
//! Drawn with plotters' SVG backend, whose text layout needs no font files.

use std::path::Path;

use emsort_io::format_size;
use plotters::prelude::*;

use crate::streams::format_count;
use crate::{Error, Result};

/// One named line (or set of points).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
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
            Ticks::Count => {
                let r = v.round();
                if (v - r).abs() < 1e-6 * v.max(1.0) && r >= 1.0 {
                    format_count(r as u64)
                } else {
                    format!("{v:.3}")
                }
            }
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
    let text = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let text =
        if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
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
        for s in &mut chart.series {
            s.points.retain(|&(x, y)| x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite());
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        chart.series.retain(|s| !s.points.is_empty());
        if chart.distinct_x() < 2 {
            return Ok(false);
        }
        chart.render(path).map_err(|msg| Error::Plot { path: path.to_path_buf(), msg })?;
        Ok(true)
    }

    fn render(&self, path: &Path) -> std::result::Result<(), String> {
        let all = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in all() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if self.diagonal {
            // Same range on both axes so that y = x is the diagonal.
            let (lo, hi) = (x0.min(y0), x1.max(y1));
            (x0, x1, y0, y1) = (lo, hi, lo, hi);
        }
        if y1 / y0 < 4.0 {
            // A nearly flat series still gets a readable y axis.
            let mid = (y0 * y1).sqrt();
            (y0, y1) = (mid / 2.0, mid * 2.0);
        }
        let (x0, x1) = (x0 / 1.25, x1 * 1.25);
        let (y0, y1) = (y0 / 1.6, y1 * 1.6);
        let xs = self.x_key_points(x0, x1);
        let ys = log_key_points(y0, y1, 10.0);

        let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| e.to_string();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(
                (x0..x1).log_scale().with_key_points(xs),
                (y0..y1).log_scale().with_key_points(ys),
            )
            .map_err(|x| e(&x))?;
        let (xt, yt) = (self.x_ticks, self.y_ticks);
        ctx.configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| xt.format(*v))
            .y_label_formatter(&|v| yt.format(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(|x| e(&x))?;

        if self.diagonal {
            let grey = RGBColor(120, 120, 120);
            ctx.draw_series(LineSeries::new([(x0, x0), (x1, x1)], grey.stroke_width(1)))
                .map_err(|x| e(&x))?
                .label("y = x (counted = predicted)")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], grey));
        }
        for (i, s) in self.series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            if self.lines {
                ctx.draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                    .map_err(|x| e(&x))?;
            }
            ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(|x| e(&x))?
                .label(s.label.as_str())
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new([(-10, 0), (10, 0)], c.stroke_width(2))
                        + Circle::new((0, 0), 4, c.filled())
                });
        }
        ctx.configure_series_labels()
            .position(match self.legend {
                Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
                Legend::UpperRight => SeriesLabelPosition::UpperRight,
            })
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(|x| e(&x))?;
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
pub(crate) fn draw_all(
    out: &std::path::Path,
    charts: impl IntoIterator<Item = (String, Chart)>,
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
            series: vec![Series { label: "a".into(), points }],
            lines: true,
            diagonal: false,
            legend: Legend::UpperLeft,
        }
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
        assert_eq!(Ticks::Count.format(1e6), "1e6");
        assert_eq!(log_key_points(1.0, 1e6, 10.0).len(), 7);
        assert_eq!(log_key_points(0.011, 0.09, 10.0), vec![0.02, 0.05]);
        assert_eq!(log_key_points(4.0, 64.0 * 1048576.0, 2.0).len(), 9);
    }
}
