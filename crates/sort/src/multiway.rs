//! In-memory multiway merging of sorted slices, and splitting a merge into
//! independent parts for several threads.
//!
//! A merge of numbers ([`crate::merge`]) proceeds in *rounds* over the
//! blocks of its runs that are in memory (the read-ahead windows): every
//! item no larger than the smallest window's last key is safe to emit, since
//! no later block can hold a smaller one. [`select`] finds, for a rank q,
//! how many items of each slice belong to the first q of the merged order
//! (multi-sequence selection: a binary search on the key, then items equal
//! to the splitting key taken run by run); [`merge_into`] merges slices with
//! a [`LoserTree`] of packed keys (with [`simd_merge`] at the AVX2 and AVX-512 levels). Splitting a
//! round at ranks q/P, 2q/P, … gives P parts whose outputs are consecutive
//! pieces of the output: each thread merges one part into its own piece,
//! and the parts need no further merging.
//!
//! ```text
//!   run 0  [ a a a | b b b b | c c ]      parts: a = items of ranks 0..q/P,
//!   run 1  [ a a | b b | c c c c c ]             b = the next q/P, …
//!   run 2  [ a a a a | b b | c c ]
//!   output [ a a a a a a a a a | b b b b b b b b | c c c c c c c c ]
//! ```
//!
//! Keys are the normalised unsigned keys of [`crate::key`] widened to `u64`.

use crate::key::{ordered_key, NumKey};
use crate::simd_merge;
use crate::tree::{LoserTree, Packed};

/// A number type whose key packs with its source for the [`LoserTree`].
pub(crate) trait MergeKey: NumKey {
    /// The packed (key, source) type.
    type P: Packed<Key = Self::Key>;
}

/// Writes the [`MergeKey`] impl of each number type `$t`, packed in `$p`.
macro_rules! merge_keys {
    ($($t:ty => $p:ty),*) => {$(
        impl MergeKey for $t {
            type P = $p;
        }
    )*};
}

merge_keys!(u32 => u64, i32 => u64, f32 => u64, u64 => u128, i64 => u128, f64 => u128);

/// The key of `x` in the merge's order, as a `u64`.
#[inline]
pub(crate) fn key64<T: NumKey, const REV: bool>(x: T) -> u64 {
    ordered_key::<T, REV>(x).into()
}

/// How many items of each slice are no larger than `bound`.
pub(crate) fn count_le<T: NumKey, const REV: bool>(slices: &[&[T]], bound: u64, counts: &mut Vec<usize>) {
    counts.clear();
    counts.extend(slices.iter().map(|s| s.partition_point(|&x| key64::<T, REV>(x) <= bound)));
}

/// Multi-sequence selection: `counts[r]` items of each slice such that
/// together they are the first `q` items of the slices' merged order
/// (`q` ≤ the total). Items equal to the splitting key go to the lower
/// slice indexes first, so the positions for increasing q never decrease.
pub(crate) fn select<T: NumKey, const REV: bool>(slices: &[&[T]], q: usize, counts: &mut Vec<usize>) {
    counts.clear();
    let total: usize = slices.iter().map(|s| s.len()).sum();
    debug_assert!(q <= total);
    if q == 0 || q == total {
        counts.extend(slices.iter().map(|s| if q == 0 { 0 } else { s.len() }));
        return;
    }
    let nonempty = || slices.iter().filter(|s| !s.is_empty());
    let mut lo = nonempty().map(|s| key64::<T, REV>(s[0])).min().expect("q > 0");
    let mut hi = nonempty().map(|s| key64::<T, REV>(s[s.len() - 1])).max().expect("q > 0");
    let le =
        |v: u64| -> usize { slices.iter().map(|s| s.partition_point(|&x| key64::<T, REV>(x) <= v)).sum() };
    // The smallest key v with at least q items ≤ v.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if le(mid) >= q {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let v = lo;
    counts.extend(slices.iter().map(|s| s.partition_point(|&x| key64::<T, REV>(x) < v)));
    let mut need = q - counts.iter().sum::<usize>();
    for (c, s) in counts.iter_mut().zip(slices) {
        if need == 0 {
            break;
        }
        let equal = s[*c..].partition_point(|&x| key64::<T, REV>(x) <= v);
        let take = equal.min(need);
        *c += take;
        need -= take;
    }
    debug_assert_eq!(need, 0);
}

/// Merges `slices` (each sorted) into `out`, whose length is their total:
/// with the kernels of [`simd_merge`] at the AVX2 and AVX-512 levels,
/// through a [`LoserTree`] of packed keys at the scalar level.
pub(crate) fn merge_into<T: MergeKey, const REV: bool>(slices: &[&[T]], out: &mut [T]) {
    debug_assert_eq!(out.len(), slices.iter().map(|s| s.len()).sum::<usize>());
    if crate::simd::level() > crate::simd::Level::Scalar {
        return simd_merge::merge_into(slices, out, REV);
    }
    let mut nonempty = slices.iter().filter(|s| !s.is_empty());
    match (nonempty.next(), nonempty.next()) {
        (None, _) => return,
        (Some(s), None) => {
            out.copy_from_slice(s);
            return;
        }
        _ => {}
    }
    let head = |s: &[T], i: usize, src: usize| {
        s.get(i).map_or(T::P::DONE, |&x| T::P::pack(ordered_key::<T, REV>(x), src))
    };
    let heads: Vec<T::P> = slices.iter().enumerate().map(|(r, s)| head(s, 0, r)).collect();
    let mut pos = vec![0usize; slices.len()];
    let mut tree = LoserTree::new(&heads, T::P::DONE, |a, b| a < b);
    for o in out.iter_mut() {
        let w = tree.winner();
        debug_assert!(w != T::P::DONE, "out is as long as the slices");
        let s = w.source();
        let i = pos[s];
        *o = slices[s][i];
        pos[s] = i + 1;
        tree.replace(s, head(slices[s], i + 1, s), |a, b| a < b);
    }
}

/// Merges the first `out.len()` items of the slices' merged order into
/// `out` on all of `pool`'s threads, and sets `counts[r]` to how many came
/// from slice r (the caller advances its slices by them).
pub(crate) fn merge_front<T: MergeKey, const REV: bool>(
    pool: &rayon::ThreadPool,
    slices: &[&[T]],
    out: &mut [T],
    counts: &mut Vec<usize>,
) {
    select::<T, REV>(slices, out.len(), counts);
    let parts: Vec<&[T]> = slices.iter().zip(counts.iter()).map(|(s, &c)| &s[..c]).collect();
    let threads = pool.current_num_threads();
    if threads > 1 {
        pool.install(|| par_merge_into::<T, REV>(&parts, out, threads));
    } else {
        merge_into::<T, REV>(&parts, out);
    }
}

/// Merges `slices` into `out` on the current rayon pool in `parts` parts of
/// about equal size (one part: on this thread).
pub(crate) fn par_merge_into<T: MergeKey, const REV: bool>(slices: &[&[T]], out: &mut [T], parts: usize) {
    let q = out.len();
    if parts <= 1 || q < 4096 {
        merge_into::<T, REV>(slices, out);
        return;
    }
    // Split positions of each part boundary, per slice.
    let mut bounds: Vec<Vec<usize>> = Vec::with_capacity(parts + 1);
    for j in 0..=parts {
        let mut c = Vec::with_capacity(slices.len());
        select::<T, REV>(slices, q * j / parts, &mut c);
        bounds.push(c);
    }
    let mut pieces: Vec<(Vec<&[T]>, &mut [T])> = Vec::with_capacity(parts);
    let mut rest = out;
    for j in 0..parts {
        let part: Vec<&[T]> =
            slices.iter().enumerate().map(|(r, s)| &s[bounds[j][r]..bounds[j + 1][r]]).collect();
        let len = part.iter().map(|s| s.len()).sum();
        let (piece, tail) = rest.split_at_mut(len);
        rest = tail;
        pieces.push((part, piece));
    }
    rayon::scope(|scope| {
        let mut pieces = pieces.into_iter();
        let first = pieces.next();
        for (part, piece) in pieces {
            scope.spawn(move |_| merge_into::<T, REV>(&part, piece));
        }
        if let Some((part, piece)) = first {
            merge_into::<T, REV>(&part, piece);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn selection_takes_the_first_q(runs in prop::collection::vec(prop::collection::vec(0u32..20, 0..40), 1..9),
                                       frac in 0.0f64..=1.0) {
            let runs: Vec<Vec<u32>> = runs.into_iter().map(|r| sorted_all(vec![r], false)).collect();
            let slices: Vec<&[u32]> = runs.iter().map(|r| r.as_slice()).collect();
            let total: usize = slices.iter().map(|s| s.len()).sum();
            let q = (total as f64 * frac) as usize;
            let mut c = Vec::new();
            select::<u32, false>(&slices, q, &mut c);
            prop_assert_eq!(c.iter().sum::<usize>(), q);
            let mut taken: Vec<u32> = slices.iter().zip(&c).flat_map(|(s, &n)| s[..n].to_vec()).collect();
            taken.sort_unstable();
            let all = sorted_all(runs.clone(), false);
            prop_assert_eq!(taken, all[..q].to_vec());
        }

        #[test]
        fn parallel_merge_equals_a_sort(runs in prop::collection::vec(prop::collection::vec(any::<i64>(), 0..3000), 1..12),
                                        parts in 1usize..5, rev: bool) {
            prop_assert_eq!(par_merged(runs.clone(), parts, rev), sorted_all(runs, rev));
        }

        /// i32 goes through the AVX-512 kernel where the CPU has it (its
        /// key flips the sign bit), in both orders.
        #[test]
        fn parallel_merge_of_i32_equals_a_sort(runs in prop::collection::vec(prop::collection::vec(any::<i32>(), 0..3000), 1..12),
                                               parts in 1usize..5, rev: bool) {
            prop_assert_eq!(par_merged(runs.clone(), parts, rev), sorted_all(runs, rev));
        }
    }

    /// `runs`, each sorted (descending when `rev`), merged by
    /// [`par_merge_into`] in `parts` parts.
    fn par_merged<T: MergeKey + Ord + Default>(runs: Vec<Vec<T>>, parts: usize, rev: bool) -> Vec<T> {
        let runs: Vec<Vec<T>> = runs.into_iter().map(|r| sorted_all(vec![r], rev)).collect();
        let slices: Vec<&[T]> = runs.iter().map(|r| r.as_slice()).collect();
        let mut out = vec![T::default(); runs.iter().map(|r| r.len()).sum()];
        if rev {
            par_merge_into::<T, true>(&slices, &mut out, parts);
        } else {
            par_merge_into::<T, false>(&slices, &mut out, parts);
        }
        out
    }

    /// All of `runs` sorted by `slice::sort_unstable` (reversed when `rev`).
    fn sorted_all<T: Ord + Copy>(runs: Vec<Vec<T>>, rev: bool) -> Vec<T> {
        let mut all = runs.concat();
        all.sort_unstable();
        if rev {
            all.reverse();
        }
        all
    }

    #[test]
    fn few_distinct_values_split_evenly() {
        let runs = [vec![7u32; 5000], vec![7u32; 3000], vec![9u32; 2000]];
        let slices: Vec<&[u32]> = runs.iter().map(|r| r.as_slice()).collect();
        let mut out = vec![0u32; 10_000];
        par_merge_into::<u32, false>(&slices, &mut out, 3);
        assert!(out[..8000].iter().all(|&x| x == 7) && out[8000..].iter().all(|&x| x == 9));
        let mut c = Vec::new();
        select::<u32, false>(&slices, 6000, &mut c);
        assert_eq!(c, vec![5000, 1000, 0]);
    }
}
