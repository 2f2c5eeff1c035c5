//! Statistics of repeated runs: minimum, median and maximum.
//!
//! A point is run `reps` times; the summary reports [`Stats`] of the run
//! times. The median of an even number of values is the mean of the two
//! middle ones.
//!
//! ```
//! use emsort_bench::stats::{median, Stats};
//! assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
//! assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
//! let s = Stats::of(&[0.3, 0.1, 0.2]).unwrap();
//! assert_eq!((s.min, s.median, s.max, s.count), (0.1, 0.2, 0.3, 3));
//! ```

/// Minimum, median and maximum of a set of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The smallest value.
    pub min: f64,
    /// The median (mean of the two middle values for an even count).
    pub median: f64,
    /// The largest value.
    pub max: f64,
    /// How many values.
    pub count: usize,
}

impl Stats {
    /// The statistics of `xs`, or `None` when `xs` is empty or holds a NaN.
    pub fn of(xs: &[f64]) -> Option<Stats> {
        if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Stats { min: v[0], median, max: v[n - 1], count: n })
    }
}

/// The median of `xs` (mean of the two middle values for an even count), or
/// `None` when `xs` is empty or holds a NaN.
pub fn median(xs: &[f64]) -> Option<f64> {
    Stats::of(xs).map(|s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[5.0]), Some(5.0));
        assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&[1.0, 2.0]), Some(1.5));
        assert_eq!(median(&[10.0, 1.0, 3.0, 7.0]), Some(5.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn min_max_count() {
        let s = Stats::of(&[2.0, 8.0, 4.0, 6.0]).unwrap();
        assert_eq!(s, Stats { min: 2.0, median: 5.0, max: 8.0, count: 4 });
    }
}
