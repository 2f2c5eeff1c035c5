//! In-memory sorting for run formation: a parallel in-place radix sort
//! (`rdst`'s low-memory tuner: MSD "regions sort" on large inputs) over the
//! normalised keys of [`crate::key`]; numbers on a CPU with AVX2 or
//! AVX-512 go to the quicksort of [`crate::simd_sort`] instead.
//!
//! Measured on the 2-core machine of `docs/ARCHITECTURE.md` (32 Mi random
//! u32, the size of one run at M = 256 MiB): `par_sort_unstable` 0.52 s,
//! `rdst` with its default tuner 0.20 s but with a second buffer as large as
//! the input, `rdst` low-memory 0.23 s in place (peak RSS = the data),
//! `voracious_mt_sort` 0.24–0.58 s. The low-memory tuner keeps run
//! formation within M.
//!
//! - Numbers are sorted through a `#[repr(transparent)]` view whose radix
//!   digits are the bytes of the normalised key (complemented when
//!   descending), so every number format shares one code path.
//! - Records and lines are sorted by an index whose radix key is the 8-byte
//!   key prefix; items with equal prefixes are then put in order by their
//!   full keys with a comparison sort, each group on its own (groups are
//!   rare and small for most data, and cannot be skipped: the prefix only
//!   orders items whose first 8 key bytes differ).
//!
//! All sorts run on the caller's rayon pool (`rdst` uses rayon's current
//! pool), so `--parallel` bounds them.

use std::cmp::Ordering;

use rayon::prelude::*;
use rdst::{RadixKey, RadixSort};

use crate::key::NumKey;
use crate::simd_sort;

/// A number viewed as its radix key, ascending (`REV` false) or descending.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct ByKey<T, const REV: bool>(T);

impl<T: NumKey, const REV: bool> RadixKey for ByKey<T, REV> {
    const LEVELS: usize = std::mem::size_of::<T::Key>();

    #[inline]
    fn get_level(&self, level: usize) -> u8 {
        let k: u64 = self.0.key().into();
        let k = if REV { !k } else { k };
        (k >> (8 * level)) as u8
    }
}

/// Sorts numbers in place by their normalised key: with the quicksort of
/// [`crate::simd_sort`] at the AVX2 and AVX-512 levels (1.7× as fast as
/// `rdst` on 32 Mi u32 with two threads here, see there), by radix at the
/// scalar level.
pub(crate) fn sort_numbers<T: NumKey>(items: &mut [T], rev: bool) {
    if crate::simd::level() > crate::simd::Level::Scalar {
        return simd_sort::sort(items, rev);
    }
    // SAFETY: `ByKey` is `repr(transparent)` over `T`.
    unsafe {
        if rev {
            radix_sort_as::<T, ByKey<T, true>>(items);
        } else {
            radix_sort_as::<T, ByKey<T, false>>(items);
        }
    }
}

/// Sorts `items` by radix (the low-memory tuner) as the radix keys `V`.
///
/// # Safety
/// `V` is `repr(transparent)` over `T`: same size, alignment and validity,
/// so the slice reinterprets element for element.
unsafe fn radix_sort_as<T, V: RadixKey + Copy + Send + Sync>(items: &mut [T]) {
    // SAFETY: as the caller promises.
    let view: &mut [V] = unsafe { std::slice::from_raw_parts_mut(items.as_mut_ptr().cast(), items.len()) };
    view.radix_sort_builder().with_low_mem_tuner().sort();
}

/// An index entry: a key prefix first (see [`crate::key::prefix`]), then
/// where the item is.
pub(crate) trait Entry: Copy + Send + Sync {
    /// The 8-byte big-endian key prefix.
    fn prefix(&self) -> u64;
    /// Replaces the prefix (with the key's next 8 bytes).
    fn set_prefix(&mut self, p: u64);
}

/// The entries of records and lines: the prefix is the first field.
macro_rules! prefix_first {
    ($($t:ty),*) => {$(
        impl Entry for $t {
            #[inline]
            fn prefix(&self) -> u64 {
                self.0
            }
            #[inline]
            fn set_prefix(&mut self, p: u64) {
                self.0 = p;
            }
        }
    )*};
}
prefix_first!((u64, u32), (u64, u32, u32));

/// An index entry viewed as its prefix's radix key.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct ByPrefix<E, const REV: bool>(E);

impl<E: Entry, const REV: bool> RadixKey for ByPrefix<E, REV> {
    const LEVELS: usize = 8;

    #[inline]
    fn get_level(&self, level: usize) -> u8 {
        let k = if REV { !self.0.prefix() } else { self.0.prefix() };
        (k >> (8 * level)) as u8
    }
}

/// Sorts an index by prefix (radix), then each group of equal prefixes by
/// `full` (the full-key comparison, ascending); `rev` reverses the order.
pub(crate) fn sort_index<E: Entry>(index: &mut [E], rev: bool, full: impl Fn(&E, &E) -> Ordering + Sync) {
    // SAFETY: `ByPrefix` is `repr(transparent)` over `E`.
    unsafe {
        if rev {
            radix_sort_as::<E, ByPrefix<E, true>>(index);
        } else {
            radix_sort_as::<E, ByPrefix<E, false>>(index);
        }
    }
    let cmp = |a: &E, b: &E| if rev { full(b, a) } else { full(a, b) };
    index
        .par_chunk_by_mut(|a, b| a.prefix() == b.prefix())
        .filter(|group| group.len() > 1)
        .for_each(|group| group.sort_unstable_by(cmp));
}

/// Windows of 8 key bytes [`sort_index_deep`] sorts by before it compares
/// whole items instead (keys with 64 equal leading bytes are rare).
const DEEPEST: usize = 8;

/// Groups smaller than this are sorted by comparison, not radix.
const SMALL_GROUP: usize = 2048;

/// Sorts an index by keys longer than the prefix, most significant bytes
/// first (a multikey MSD radix sort): by the prefix (window 0 of the key,
/// already in the entries), then each group of equal prefixes by the key's
/// next 8 bytes, which `window(e, w, scratch)` returns (`None` when e's key
/// has no byte in window w), and so on. A group whose keys all end is put
/// in order by `tie` (its keys are equal: the caller sorts it by the rest
/// of its order, and may mark entries, e.g. repeats); one still tied after
/// [`DEEPEST`] windows by `full` (the whole comparison).
///
/// The keys must be prefix-free (no key a proper prefix of another), as
/// the normalised keys of [`crate::keys`] are: then the keys of a group
/// either all have bytes in the next window or all have ended, which the
/// group's first item tells. Each window costs `window` once per item of a
/// group whose keys go on (once per group whose keys ended), and no memory
/// beyond the index.
///
/// Where a window costs much (a collating locale's key is a `strxfrm` of
/// the whole text, however little of it the window takes), `whole(group,
/// scratch)` may take a group wholly, before any window of it past the
/// prefix is computed: it sorts the group itself (computing each item's
/// key once, into the scratch) and returns true; false leaves the group to
/// the windows.
pub(crate) fn sort_index_deep<E: Entry, S: Default>(
    index: &mut [E],
    window: impl Fn(&E, usize, &mut S) -> Option<u64> + Sync,
    whole: impl Fn(&mut [E], &mut S) -> bool + Sync,
    tie: impl Fn(&mut [E]) + Sync,
    full: impl Fn(&mut [E]) + Sync,
    item: impl Fn(&E) -> *const u8 + Sync,
) {
    /// Entries ahead whose items are fetched into the cache while the
    /// window of the current one is computed: a group's items lie all over
    /// the chunk, and each would otherwise cost a cache miss.
    const AHEAD: usize = 8;
    #[allow(clippy::too_many_arguments)]
    fn refine<E: Entry, S>(
        group: &mut [E],
        depth: usize,
        s: &mut S,
        window: &(impl Fn(&E, usize, &mut S) -> Option<u64> + Sync),
        whole: &(impl Fn(&mut [E], &mut S) -> bool + Sync),
        tie: &(impl Fn(&mut [E]) + Sync),
        full: &(impl Fn(&mut [E]) + Sync),
        item: &(impl Fn(&E) -> *const u8 + Sync),
    ) {
        if whole(group, s) {
            return;
        }
        if depth == DEEPEST {
            full(group);
            return;
        }
        // The keys of a group all end together (they are prefix-free): one
        // item tells, and a group of equal keys goes to `tie` without the
        // window of every item computed (for `-k3,3n` on a CSV, half the
        // lines are in such groups, and each window costs a cache miss).
        if window(&group[0], depth, s).is_none() {
            tie(group);
            return;
        }
        let mut more = false;
        for i in 0..group.len() {
            if let Some(ahead) = group.get(i + AHEAD) {
                prefetch(item(ahead));
            }
            let e = &mut group[i];
            let w = window(e, depth, s);
            more |= w.is_some();
            e.set_prefix(w.unwrap_or(0));
        }
        if !more {
            tie(group);
            return;
        }
        sort_by_prefix(group);
        for g in group.chunk_by_mut(|a, b| a.prefix() == b.prefix()).filter(|g| g.len() > 1) {
            refine(g, depth + 1, s, window, whole, tie, full, item);
        }
    }
    sort_by_prefix(index);
    index
        .par_chunk_by_mut(|a, b| a.prefix() == b.prefix())
        .filter(|group| group.len() > 1)
        .for_each_init(S::default, |s, group| refine(group, 1, s, &window, &whole, &tie, &full, &item));
}

/// Asks the CPU to bring the cache line at `p` in (a hint: no effect on
/// what the program computes, and no fault whatever `p` is).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing the program sees.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Sorts entries by prefix: radix for large slices, comparison for small.
fn sort_by_prefix<E: Entry>(index: &mut [E]) {
    if index.len() < SMALL_GROUP {
        index.sort_unstable_by_key(|e| e.prefix());
    } else {
        // SAFETY: `ByPrefix` is `repr(transparent)` over `E`.
        unsafe { radix_sort_as::<E, ByPrefix<E, false>>(index) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `sort_numbers` against `slice::sort_unstable` (reversed for `rev`).
    fn like_slice_sort<T: NumKey + Ord + std::fmt::Debug>(
        mut v: Vec<T>,
        rev: bool,
    ) -> Result<(), TestCaseError> {
        let mut want = v.clone();
        want.sort_unstable();
        if rev {
            want.reverse();
        }
        sort_numbers(&mut v, rev);
        prop_assert_eq!(v, want);
        Ok(())
    }

    proptest! {
        #[test]
        fn numbers_sort_like_slice_sort(v in prop::collection::vec(any::<i64>(), 0..3000), rev: bool) {
            like_slice_sort(v, rev)?;
        }

        /// Numbers take the SIMD quicksort where the CPU has AVX2.
        #[test]
        fn i32_sort_like_slice_sort(v in prop::collection::vec(any::<i32>(), 0..3000), rev: bool) {
            like_slice_sort(v, rev)?;
        }

        #[test]
        fn floats_sort_in_total_order(v in prop::collection::vec(any::<f32>(), 0..3000), rev: bool) {
            let mut got = v.clone();
            sort_numbers(&mut got, rev);
            let mut want = v;
            want.sort_unstable_by_key(|a| crate::f32_key(*a));
            if rev {
                want.reverse();
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&got), bits(&want));
        }

        #[test]
        fn index_sorts_by_full_key(keys in prop::collection::vec(prop::collection::vec(0u8..3, 0..12), 0..2000),
                                   rev: bool) {
            let mut index: Vec<(u64, u32)> =
                keys.iter().enumerate().map(|(i, k)| (crate::key::prefix(k), i as u32)).collect();
            sort_index(&mut index, rev, |a, b| keys[a.1 as usize].cmp(&keys[b.1 as usize]));
            let got: Vec<&Vec<u8>> = index.iter().map(|e| &keys[e.1 as usize]).collect();
            let mut want: Vec<&Vec<u8>> = keys.iter().collect();
            want.sort();
            if rev {
                want.reverse();
            }
            prop_assert_eq!(got, want);
        }
    }

    proptest! {
        #[test]
        fn deep_sort_orders_long_keys(words in prop::collection::vec(prop::collection::vec(0u8..3, 0..40), 0..3000),
                                      whole_below in prop::sample::select(vec![0usize, 3, 50])) {
            // Prefix-free keys: each word's bytes + 1, then a 0 terminator.
            let keys: Vec<Vec<u8>> = words.iter().map(|w| w.iter().map(|b| b + 1).chain([0]).collect()).collect();
            let mut index: Vec<(u64, u32, u32)> =
                keys.iter().enumerate().map(|(i, k)| (crate::key::prefix(k), i as u32, 0)).collect();
            let window = |e: &(u64, u32, u32), w: usize, _: &mut ()| {
                let k = &keys[e.1 as usize];
                (k.len() > 8 * w).then(|| crate::key::prefix(&k[8 * w..]))
            };
            let tie = |g: &mut [(u64, u32, u32)]| {
                assert!(g.iter().all(|e| keys[e.1 as usize] == keys[g[0].1 as usize]));
                g.sort_unstable_by_key(|e| e.1);
            };
            let full = |g: &mut [(u64, u32, u32)]| {
                g.sort_unstable_by(|a, b| keys[a.1 as usize].cmp(&keys[b.1 as usize]).then(a.1.cmp(&b.1)))
            };
            // Groups below `whole_below` items sorted whole (0: none).
            let whole = |g: &mut [(u64, u32, u32)], _: &mut ()| {
                g.len() < whole_below && {
                    full(g);
                    true
                }
            };
            sort_index_deep(&mut index, window, whole, tie, full, |e| keys[e.1 as usize].as_ptr());
            let got: Vec<u32> = index.iter().map(|e| e.1).collect();
            let mut want: Vec<u32> = (0..keys.len() as u32).collect();
            want.sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]).then(a.cmp(&b)));
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn large_inputs_take_the_parallel_path() {
        let mut v: Vec<u32> = (0..3_000_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut want = v.clone();
        want.sort_unstable();
        sort_numbers(&mut v, false);
        assert_eq!(v, want);
    }
}
