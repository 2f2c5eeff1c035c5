//! Parameter grids: how the campaigns expand their lists of parameter
//! values into points, and in what order they run them.
//!
//! A campaign's parameter file (or built-in plan) gives lists of values,
//! and its points are their cartesian product, sometimes filtered (a block
//! larger than its file is left out), sometimes the union of several
//! products. The pieces every campaign had written out as its own nested
//! loops:
//!
//! - [`product`]: every combination of the indices of N lists, in the
//!   order of N nested loops (the last list varies fastest). The streams
//!   sweeps, the sort and SRM grids and the readers' experiments expand
//!   their points with it, so their run order is the nested loops' order.
//! - [`merge_repeats`]: points listed more than once (by two rows of a
//!   parameter file, or a collapsed parameter such as `plain` SRM's D) kept
//!   once with the largest repetitions, in the order of their keys (streams,
//!   sort, SRM).
//! - [`rounds`]: repeated runs interleaved, repetition r running every
//!   point asked to run at least r times, so that a drift of the machine
//!   touches every point alike (sort, SRM).
//! - [`round_order`]: the order of k alternatives compared round by round,
//!   a Williams design (trace replay's readers, calibration's paired
//!   rounds).
//!
//! ```
//! use emsort_bench::grid::{merge_repeats, product};
//!
//! let (ops, ks) = (["write", "read"], [1, 2, 4]);
//! let points: Vec<(&str, u32, u32)> =
//!     product([ops.len(), ks.len()]).map(|[o, k]| (ops[o], ks[k], 1)).collect();
//! assert_eq!(points[..4], [("write", 1, 1), ("write", 2, 1), ("write", 4, 1), ("read", 1, 1)]);
//!
//! // A second row asks for ("read", 4) again, three times: it runs once, three times.
//! let all = points.into_iter().chain([("read", 4, 3)]);
//! let merged = merge_repeats(all, |p| (p.0, p.1), |p| &mut p.2);
//! assert_eq!(merged.len(), 6);
//! assert_eq!(merged[0], ("read", 1, 1));
//! assert!(merged.contains(&("read", 4, 3)));
//! ```

use std::collections::BTreeMap;

/// Every combination of one index into each of `N` lists of the lengths
/// `lens`, in the order of `N` nested loops: the first list's index varies
/// slowest, the last one's fastest. Nothing when a list is empty; one empty
/// combination when `N` is 0.
///
/// ```
/// use emsort_bench::grid::product;
/// let v: Vec<[usize; 2]> = product([2, 3]).collect();
/// assert_eq!(v, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
/// assert_eq!(product([2, 0, 3]).count(), 0);
/// ```
pub fn product<const N: usize>(lens: [usize; N]) -> Product<N> {
    let next = if lens.contains(&0) { None } else { Some([0; N]) };
    Product { lens, next }
}

/// The iterator of [`product`].
#[derive(Debug, Clone)]
pub struct Product<const N: usize> {
    lens: [usize; N],
    next: Option<[usize; N]>,
}

impl<const N: usize> Iterator for Product<N> {
    type Item = [usize; N];

    fn next(&mut self) -> Option<[usize; N]> {
        let current = self.next?;
        // An odometer: the last digit turns first, carrying leftwards.
        let mut following = current;
        let mut digit = N;
        self.next = loop {
            if digit == 0 {
                break None;
            }
            digit -= 1;
            following[digit] += 1;
            if following[digit] < self.lens[digit] {
                break Some(following);
            }
            following[digit] = 0;
        };
        Some(current)
    }
}

/// `points` with those of equal `key` merged into the first of them, which
/// keeps the largest `reps` of any; sorted by key (the campaigns' run
/// order).
pub fn merge_repeats<P, K: Ord>(
    points: impl IntoIterator<Item = P>,
    key: impl Fn(&P) -> K,
    reps: impl Fn(&mut P) -> &mut u32,
) -> Vec<P> {
    let mut by_key: BTreeMap<K, P> = BTreeMap::new();
    for mut p in points {
        let n = *reps(&mut p);
        by_key
            .entry(key(&p))
            .and_modify(|q| {
                let kept = reps(q);
                *kept = (*kept).max(n);
            })
            .or_insert(p);
    }
    by_key.into_values().collect()
}

/// The rounds of repeated runs: for r = 1 … the most `reps` of any point
/// (1 when there is none), r and the points with at least r `reps`, in
/// their order.
///
/// ```
/// use emsort_bench::grid::rounds;
/// let reps = [2, 1, 3];
/// let r: Vec<(u32, Vec<&u32>)> = rounds(&reps, |&n| n);
/// assert_eq!(r, [(1, vec![&2, &1, &3]), (2, vec![&2, &3]), (3, vec![&3])]);
/// ```
pub fn rounds<P>(points: &[P], reps: impl Fn(&P) -> u32) -> Vec<(u32, Vec<&P>)> {
    let most = points.iter().map(&reps).max().unwrap_or(1);
    (1..=most).map(|r| (r, points.iter().filter(|p| reps(p) >= r).collect())).collect()
}

/// The order of the `k` readers in round `round` (0-based): a Williams
/// design, so that over `k` rounds (`2k` for odd `k`) every reader runs
/// right after every other one equally often, and in every position. A
/// run can leave the machine in a state that favours or hurts the next
/// one (the page cache it filled, memory the host has to give back), and a
/// fixed order would charge that to the same reader every round.
pub fn round_order(k: usize, round: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    // The first row: 0, 1, k−1, 2, k−2, …; row r adds r (mod k); for odd
    // k the rows k … 2k−1 are the first k reversed.
    let first: Vec<usize> =
        (0..k).map(|j| if j % 2 == 1 { j.div_ceil(2) } else { (k - j / 2) % k }).collect();
    let r = round % if k.is_multiple_of(2) { k } else { 2 * k };
    let mut row: Vec<usize> = first.iter().map(|&x| (x + r) % k).collect();
    if r >= k {
        row.reverse();
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_is_the_order_of_nested_loops() {
        let lens = [3, 1, 4, 2];
        let mut nested = Vec::new();
        for a in 0..lens[0] {
            for b in 0..lens[1] {
                for c in 0..lens[2] {
                    for d in 0..lens[3] {
                        nested.push([a, b, c, d]);
                    }
                }
            }
        }
        assert_eq!(product(lens).collect::<Vec<_>>(), nested);
        assert_eq!(product([5]).collect::<Vec<_>>(), [[0], [1], [2], [3], [4]]);
        assert_eq!(product([]).collect::<Vec<[usize; 0]>>(), vec![[0usize; 0]]);
        assert_eq!(product([0]).count(), 0);
        assert_eq!(product([3, 4, 0]).count(), 0);
    }

    #[test]
    fn repeats_keep_the_first_point_and_the_most_reps() {
        // (key, what, reps)
        let points = [(2, 'a', 1), (1, 'b', 2), (2, 'c', 5), (1, 'd', 1)];
        let merged = merge_repeats(points, |p| p.0, |p| &mut p.2);
        assert_eq!(merged, [(1, 'b', 2), (2, 'a', 5)]);
        assert!(merge_repeats(Vec::<(u8, u32)>::new(), |p| p.0, |p| &mut p.1).is_empty());
    }

    #[test]
    fn rounds_run_each_point_its_reps() {
        let none: [u32; 0] = [];
        assert_eq!(rounds(&none, |&n| n), [(1, vec![])]);
        let reps = [1, 3, 1, 2];
        let r = rounds(&reps, |&n| n);
        assert_eq!(r.iter().map(|(_, ps)| ps.len()).sum::<usize>(), 7);
        assert_eq!(r[2], (3, vec![&3]));
    }
}
