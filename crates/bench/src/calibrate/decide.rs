//! The decisions of a stable calibration (issue 38): which of two
//! alternatives is faster, from paired rounds, and whether a value other
//! than the thesis' one has earned its place.
//!
//! One run per point on a shared machine moved `max_block` and
//! `mmap_max_request` from calibration to calibration, and the adaptive
//! reader with them (0.73×, 1.15× and 1.57× the best fixed reader's time
//! on the mixed trace in three calibrate-then-replay runs). So each step
//! runs its candidates in rounds, every candidate once per round in a
//! Williams order ([`round_order`](crate::grid::round_order)), and
//! compares two candidates by their **paired ratios**: in each round, the
//! time of one over the time of the other, so that a drift of the machine
//! between rounds touches both alike.
//!
//! [`Paired::verdict`] says one is faster only when the whole **spread**
//! of the ratios lies on one side of 1 (the range; from 10 rounds on the
//! range without the ⌊n/10⌋ most extreme ratios at each end, so that one
//! round disturbed by a neighbour's job does not veto a real difference)
//! and the median ratio is beyond the margin. Under pure noise, all of n
//! ratios on one side happens with probability 2^−n per side (1/32 at the
//! 5 rounds a step runs at least); stopping early cannot raise it, as the
//! first n ratios of a longer sequence must already be on that side.
//!
//! [`against_default`] and [`crossover`] then keep a measured value only
//! when it differs from the thesis' value and the verdicts that separate
//! the two say so; otherwise the thesis' value, marked
//! [`Origin::Inconclusive`].
//!
//! ```
//! use emsort_bench::calibrate::decide::{Paired, Verdict};
//! // Candidate a against b, 5 rounds: a faster in every one, by ~20 %.
//! let p = Paired::new(&[0.80, 0.82, 0.79, 0.85, 0.81], &[1.0, 1.0, 0.98, 1.02, 1.0]);
//! assert_eq!(p.verdict(0.05), Verdict::Faster);
//! // Faster in four rounds of five: the spread crosses 1.
//! let q = Paired::new(&[0.80, 0.82, 1.10, 0.85, 0.81], &[1.0; 5]);
//! assert_eq!(q.verdict(0.05), Verdict::Unclear);
//! ```

use emsort_io::reader::calibration::Origin;

use crate::stats::median;

/// Fewer paired rounds than this give no verdict.
pub const MIN_PAIRED: usize = 3;

/// What the paired rounds say of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `a` is faster: the spread of `a/b` below 1, the median below 1 − margin.
    Faster,
    /// `a` is slower: the spread above 1, the median above 1 + margin.
    Slower,
    /// Neither is faster by more than the margin: the spread within 1 ± margin.
    Same,
    /// The spread does not allow a verdict.
    Unclear,
}

impl Verdict {
    /// Whether the rounds decided (anything but [`Verdict::Unclear`]).
    pub fn is_clear(self) -> bool {
        self != Verdict::Unclear
    }

    /// How the decision texts write it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "the same",
            Verdict::Unclear => "unclear",
        }
    }
}

/// The paired ratios of two candidates' times, round by round.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    ratios: Vec<f64>,
}

impl Paired {
    /// `a[i] / b[i]` for the rounds both ran (the shorter length); rounds
    /// with a time that is not positive are left out.
    pub fn new(a: &[f64], b: &[f64]) -> Paired {
        let ratios = a.iter().zip(b).filter(|(x, y)| **x > 0.0 && **y > 0.0).map(|(x, y)| x / y).collect();
        Paired { ratios }
    }

    /// The ratios, in round order.
    pub fn ratios(&self) -> &[f64] {
        &self.ratios
    }

    /// The median ratio (NaN without rounds).
    pub fn median(&self) -> f64 {
        median(&self.ratios).unwrap_or(f64::NAN)
    }

    /// The spread: the smallest and largest ratio, without the ⌊n/10⌋
    /// most extreme at each end (the whole range below 10 rounds).
    pub fn spread(&self) -> (f64, f64) {
        let mut v = self.ratios.clone();
        if v.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        v.sort_by(f64::total_cmp);
        let trim = v.len() / 10;
        (v[trim], v[v.len() - 1 - trim])
    }

    /// The verdict on `a` against `b` with `margin` (a share: 0.05 asks
    /// for a median 5 % apart; 0 for the direction alone, which never
    /// says [`Verdict::Same`]).
    pub fn verdict(&self, margin: f64) -> Verdict {
        if self.ratios.len() < MIN_PAIRED {
            return Verdict::Unclear;
        }
        let (lo, hi) = self.spread();
        let m = self.median();
        if hi < 1.0 && m < 1.0 - margin {
            Verdict::Faster
        } else if lo > 1.0 && m > 1.0 + margin {
            Verdict::Slower
        } else if margin > 0.0 && lo >= 1.0 - margin && hi <= 1.0 + margin {
            Verdict::Same
        } else {
            Verdict::Unclear
        }
    }

    /// `0.93× (0.88–0.97, 7 rounds)`.
    pub fn describe(&self) -> String {
        let (lo, hi) = self.spread();
        format!("{:.2}× ({:.2}–{:.2}, {} rounds)", self.median(), lo, hi, self.ratios.len())
    }
}

/// What a step decided: the candidate kept, where the value comes from,
/// whether more rounds could change it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The candidate kept (an index into the step's candidates).
    pub index: usize,
    /// [`Origin::Measured`], or [`Origin::Inconclusive`] when the thesis'
    /// value was kept because the rounds could not separate it from the
    /// measured one.
    pub origin: Origin,
    /// Whether the verdicts this decision rests on are clear, so that
    /// further rounds are not needed.
    pub settled: bool,
    /// The comparison behind it, in words (`256K against 4M: 0.93× …`).
    pub why: String,
}

/// A choice among candidates one of which (`default`) is the thesis'
/// value: `best` is the candidate the step's rule picks from the medians
/// (the fastest, the smallest on the plateau …), and `times[i]` candidate
/// i's time in each round. `best` is kept when it is the default, or when
/// it is faster than the default ([`Verdict::Faster`] with `margin`); the
/// default is kept, measured, when `best` is clearly slower, and marked
/// inconclusive otherwise. Settled: when `best` is the default, once the
/// runner-up (the next fastest median) has a clear verdict against it;
/// else once `best`'s verdict against the default is clear.
pub fn against_default(
    times: &[&[f64]],
    default: usize,
    best: usize,
    margin: f64,
    label: &dyn Fn(usize) -> String,
) -> Decision {
    let med = |i: usize| median(times[i]).unwrap_or(f64::INFINITY);
    if best == default {
        let runner_up = (0..times.len()).filter(|&i| i != default).min_by(|&a, &b| med(a).total_cmp(&med(b)));
        return match runner_up {
            None => Decision {
                index: default,
                origin: Origin::Measured,
                settled: true,
                why: "the only candidate".into(),
            },
            Some(r) => {
                let p = Paired::new(times[r], times[default]);
                let v = p.verdict(margin);
                Decision {
                    index: default,
                    origin: Origin::Measured,
                    settled: v.is_clear(),
                    why: format!("the next best, {}, {} ({})", label(r), v.name(), p.describe()),
                }
            }
        };
    }
    let p = Paired::new(times[best], times[default]);
    let v = p.verdict(margin);
    let against = format!("{} against {}: {} ({})", label(best), label(default), v.name(), p.describe());
    match v {
        Verdict::Faster => Decision { index: best, origin: Origin::Measured, settled: true, why: against },
        Verdict::Slower => Decision { index: default, origin: Origin::Measured, settled: true, why: against },
        Verdict::Same | Verdict::Unclear => Decision {
            index: default,
            origin: Origin::Inconclusive,
            settled: v.is_clear(),
            why: format!("{against}: not faster by more than the spread"),
        },
    }
}

/// A size threshold between two techniques, A and B: `sizes` ascending,
/// `verdicts[i]` A's verdict against B at `sizes[i]`, `uses_a(t, s)`
/// whether a request of size `s` goes to A under threshold `t`. The
/// measured threshold `measured` is kept when it is the thesis' `default`
/// or when, at every size measured on which the two thresholds disagree,
/// the technique `measured` gives that size is clearly the faster one;
/// otherwise the default, marked inconclusive (also when no size measured
/// lies between them: nothing tells them apart). Settled: once those
/// verdicts are clear (when `measured` is the default: the verdicts at
/// the sizes on both sides of it).
pub fn crossover(
    sizes: &[usize],
    verdicts: &[Verdict],
    measured: usize,
    default: usize,
    uses_a: &dyn Fn(usize, usize) -> bool,
) -> (usize, Origin, bool) {
    if measured == default {
        // The sizes next to the threshold: the last one on each side.
        let a_side = sizes.iter().rposition(|&s| uses_a(default, s));
        let b_side = sizes.iter().position(|&s| !uses_a(default, s));
        let settled = [a_side, b_side].into_iter().flatten().all(|i| verdicts[i].is_clear());
        return (default, Origin::Measured, settled);
    }
    let between: Vec<usize> =
        (0..sizes.len()).filter(|&i| uses_a(measured, sizes[i]) != uses_a(default, sizes[i])).collect();
    if between.is_empty() {
        return (default, Origin::Inconclusive, true);
    }
    let wanted = |i: usize| if uses_a(measured, sizes[i]) { Verdict::Faster } else { Verdict::Slower };
    if between.iter().all(|&i| verdicts[i] == wanted(i)) {
        (measured, Origin::Measured, true)
    } else {
        let settled = between.iter().all(|&i| verdicts[i].is_clear());
        (default, Origin::Inconclusive, settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(i: usize) -> String {
        format!("c{i}")
    }

    #[test]
    fn verdicts_need_the_whole_spread_on_one_side() {
        let ones = [1.0; 12];
        let p = |a: &[f64]| Paired::new(a, &ones[..a.len()]);
        assert_eq!(p(&[0.8, 0.85, 0.9]).verdict(0.05), Verdict::Faster);
        assert_eq!(p(&[1.2, 1.15, 1.3, 1.1, 1.25]).verdict(0.05), Verdict::Slower);
        // Two rounds are never enough.
        assert_eq!(p(&[0.5, 0.5]).verdict(0.05), Verdict::Unclear);
        // All below 1 but by less than the margin: the same, not faster.
        assert_eq!(p(&[0.98, 0.97, 0.99, 0.98, 0.96]).verdict(0.05), Verdict::Same);
        // With no margin the direction alone decides.
        assert_eq!(p(&[0.98, 0.97, 0.99, 0.98, 0.96]).verdict(0.0), Verdict::Faster);
        assert_eq!(p(&[0.98, 0.97, 1.01, 0.98, 0.96]).verdict(0.0), Verdict::Unclear);
        // One round the other way: the range crosses 1.
        assert_eq!(p(&[0.7, 0.7, 1.05, 0.7, 0.7]).verdict(0.05), Verdict::Unclear);
        // From 10 rounds on, the most extreme tenth at each end is left out.
        let mut ten = vec![0.7; 9];
        ten.push(1.4);
        assert_eq!(p(&ten).spread(), (0.7, 0.7));
        assert_eq!(p(&ten).verdict(0.05), Verdict::Faster);
        ten[0] = 1.3;
        assert_eq!(p(&ten).verdict(0.05), Verdict::Unclear);
        // Paired: a drift that slows both alike does not hide a gain.
        let a = [0.9, 1.8, 0.45, 2.7, 0.9];
        let b = [1.0, 2.0, 0.5, 3.0, 1.0];
        assert_eq!(Paired::new(&a, &b).verdict(0.05), Verdict::Faster);
        assert!((Paired::new(&a, &b).median() - 0.9).abs() < 1e-12);
        // Unpaired medians would overlap: a's slowest is slower than b's fastest.
        assert!(a.iter().cloned().fold(0.0, f64::max) > b.iter().cloned().fold(9.0, f64::min));
    }

    #[test]
    fn a_value_is_kept_only_when_it_beats_the_default_beyond_the_spread() {
        let d = [1.0, 1.1, 0.9, 1.0, 1.05];
        // Candidate 1 faster by 20 % in every round: kept, measured.
        let fast = [0.8, 0.88, 0.72, 0.8, 0.84];
        let k = against_default(&[&d, &fast], 0, 1, 0.05, &label);
        assert_eq!((k.index, k.origin, k.settled), (1, Origin::Measured, true), "{}", k.why);
        // Faster by 20 % at the median but slower in one round: the default, inconclusive.
        let noisy = [0.8, 0.88, 0.99, 0.8, 0.84];
        let k = against_default(&[&d, &noisy], 0, 1, 0.05, &label);
        assert_eq!((k.index, k.origin, k.settled), (0, Origin::Inconclusive, false), "{}", k.why);
        assert!(k.why.contains("c1 against c0: unclear"), "{}", k.why);
        // As fast, within the margin (a plateau): the default, and that is settled.
        let flat = [0.99, 1.09, 0.89, 0.98, 1.04];
        let k = against_default(&[&d, &flat], 0, 1, 0.05, &label);
        assert_eq!((k.index, k.origin, k.settled), (0, Origin::Inconclusive, true), "{}", k.why);
        // The step's pick clearly slower than the default (e.g. the smallest
        // on a plateau that is not one): the default, measured.
        let slow = [1.2, 1.3, 1.1, 1.2, 1.25];
        let k = against_default(&[&d, &slow], 0, 1, 0.05, &label);
        assert_eq!((k.index, k.origin), (0, Origin::Measured));
        // The default is the pick: measured; settled once the runner-up is clearly apart.
        let k = against_default(&[&slow, &d, &noisy], 1, 1, 0.05, &label);
        assert_eq!((k.index, k.origin), (1, Origin::Measured));
        assert!(!k.settled && k.why.contains("c2"), "runner-up is c2 (median 0.84): {}", k.why);
        let k = against_default(&[&slow, &d], 1, 1, 0.05, &label);
        assert!(k.settled, "{}", k.why);
    }

    #[test]
    fn a_crossover_moves_only_where_the_sizes_between_say_so() {
        // mmap (A) for requests ≤ t; the thesis: t = 32K.
        let le = |t: usize, s: usize| s <= t;
        let sizes = [4 << 10, 32 << 10, 256 << 10];
        let d = 32 << 10;
        use Verdict::*;
        // Measured 4K: pread must be clearly faster at 32K.
        assert_eq!(
            crossover(&sizes, &[Faster, Slower, Slower], 4 << 10, d, &le),
            (4 << 10, Origin::Measured, true)
        );
        assert_eq!(
            crossover(&sizes, &[Faster, Unclear, Slower], 4 << 10, d, &le),
            (d, Origin::Inconclusive, false)
        );
        assert_eq!(
            crossover(&sizes, &[Faster, Same, Slower], 4 << 10, d, &le),
            (d, Origin::Inconclusive, true)
        );
        // Off (0): pread clearly faster at 4K and 32K.
        assert_eq!(crossover(&sizes, &[Slower, Slower, Faster], 0, d, &le), (0, Origin::Measured, true));
        assert_eq!(crossover(&sizes, &[Slower, Faster, Faster], 0, d, &le), (d, Origin::Inconclusive, true));
        // Measured 256K: mmap clearly faster at 256K.
        assert_eq!(crossover(&sizes, &[Faster, Faster, Faster], 256 << 10, d, &le).1, Origin::Measured);
        // The default: settled once 32K and 256K are clear.
        assert_eq!(crossover(&sizes, &[Unclear, Faster, Slower], d, d, &le), (d, Origin::Measured, true));
        assert_eq!(crossover(&sizes, &[Faster, Faster, Unclear], d, d, &le), (d, Origin::Measured, false));
        // uring (A) for requests ≥ t; the thesis: 8M. Measured 16M with no
        // size measured in [8M, 16M): nothing tells them apart.
        let ge = |t: usize, s: usize| s >= t;
        let us = [1 << 20, 4 << 20, 16 << 20];
        assert_eq!(crossover(&us, &[Slower, Slower, Faster], 16 << 20, 8 << 20, &ge).1, Origin::Inconclusive);
        // Measured 4M: uring clearly faster at 4M.
        assert_eq!(crossover(&us, &[Slower, Faster, Faster], 4 << 20, 8 << 20, &ge).1, Origin::Measured);
        // Off (never): pread clearly faster at 16M.
        assert_eq!(
            crossover(&us, &[Slower, Slower, Slower], usize::MAX, 8 << 20, &ge),
            (usize::MAX, Origin::Measured, true)
        );
    }
}
