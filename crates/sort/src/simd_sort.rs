//! Sorting numbers of every format (u32, i32, u64, i64, f32, f64, either
//! order) in place with a SIMD quicksort (Bramas, IJACSA 2017; Intel's
//! x86-simd-sort, which NumPy uses), written once over
//! [`crate::lanes::Lanes`] and compiled for AVX-512 (16 keys of 32 bits or
//! 8 of 64 per vector) and AVX2 (8 or 4, issue 38: most cloud CPUs and
//! laptops have no AVX-512); [`crate::simd::level`] chooses.
//!
//! Run formation of u32 and i32 was bound by the radix sort: `rdst` takes
//! about 9 ns per key on this project's machine, and two of its threads on
//! the machine's two vCPUs slow each other to half speed (two concurrent
//! 16 Mi sorts 0.28–0.36 s each against 0.17 s alone: it streams the data
//! through the cache twice per digit). A quicksort that partitions 16 keys
//! per instruction touches each key once per level, in cache-sized pieces
//! below the top levels, and its two threads barely meet:
//!
//! ```text
//!   pivot = the median of 16 keys spread over the slice
//!   partition: keep the first and last 4 vectors (64 keys each end) in
//!   registers (room to write), then load 4 vectors from whichever end
//!   has less room; each compared with the pivot (a mask), its smaller
//!   keys compressed to the left store, the others to the right store;
//!   the kept vectors last
//!   ≤ 16 vectors (256 keys of 32 bits with AVX-512, 128 with AVX2; 128
//!   and 64 keys of 64 bits): 1–16 vectors (padded with the largest key)
//!   sorted by a bitonic network in registers, as simd_merge merges them
//!   (AVX2 has no compress: see crate::lanes for its partition step)
//! ```
//!
//! The recorded evidence is the sort campaign
//! `bench/results/2026-11-27c-physical`: run formation of 1 GiB u32 in
//! 2.52 s against `rdst`'s 3.59 s. A one-off timing harness (not kept) on
//! 32 Mi random u32, in one run, gave: one thread 0.31–0.37 s (NumPy's AVX-512 sort 0.23–0.26 s, `rdst` 0.41–0.66 s),
//! two threads 0.18–0.24 s (`rdst` 0.31–0.38 s). A first version with one
//! vector per step and no POPCNT instruction (a software popcount) took
//! 0.56–0.60 s on one thread; four vectors per step choose an end a
//! quarter as often (a branch the data decides) and keep more loads in
//! flight; eight were no faster. `perf` of a 1 GiB sort: the partition 45 % of all
//! samples, the networks 13 %.
//!
//! The parts of a partition longer than [`PAR`] keys are sorted on the
//! caller's rayon pool (`join`). A partition whose left part is empty (the
//! pivot was the smallest key) splits off the keys equal to the pivot, so
//! every level makes progress on repeated keys; after `2 log₂ n` levels
//! (an adversarial input) a slice falls back to `slice::sort_unstable`.
//!
//! Items are sorted by their normalised keys ([`crate::key`]: a bijection
//! of the bits, so every level writes the same bytes): the slice is turned
//! into keys in place before (a [`crate::lanes::Codec`], as in
//! [`crate::simd_merge`]; nothing for u32 and u64 ascending) and back
//! after. AVX2's 64-bit keys are signed (it compares no other way), so
//! there the sign bit joins the XOR. At [`Level::Scalar`] the caller keeps
//! its radix sort.

use rayon::prelude::*;

use crate::key::NumKey;
use crate::simd::{level, Level};

/// Parts longer than this are sorted as separate rayon tasks.
const PAR: usize = 1 << 16;

/// Sorts `items` by their normalised key ([`crate::key`]; descending when
/// `rev`), in place, on the current rayon pool, with the kernels of
/// [`level`] (at [`Level::Scalar`], `par_sort_unstable`: callers use their
/// radix sort there instead).
pub(crate) fn sort<T: NumKey>(items: &mut [T], rev: bool) {
    sort_at(level(), items, rev)
}

/// [`sort`] with the kernels of `at` (at most [`crate::simd::detected`]).
pub(crate) fn sort_at<T: NumKey>(at: Level, items: &mut [T], rev: bool) {
    #[cfg(target_arch = "x86_64")]
    if at >= Level::Avx2 {
        use crate::lanes::{Avx2x4, Avx2x8, Avx512x16, Avx512x8};
        assert!(at <= crate::simd::detected(), "the CPU has no {at}");
        let flip = crate::key::bits_flip::<T>(rev);
        // SAFETY: the CPU has the level's instruction set and POPCNT
        // (detected() checked both), and each kernel's keys are as wide
        // as T.
        unsafe {
            match (std::mem::size_of::<T>(), at) {
                (4, Level::Avx512) => x86::run::<Avx512x16, T>(items, flip),
                (4, _) => x86::run::<Avx2x8, T>(items, flip),
                (8, Level::Avx512) => x86::run::<Avx512x8, T>(items, flip),
                (8, _) => x86::run::<Avx2x4, T>(items, flip),
                (w, _) => unreachable!("numbers are 4 or 8 bytes wide, not {w}"),
            }
        }
        return;
    }
    if rev {
        items.par_sort_unstable_by_key(|&x| std::cmp::Reverse(x.key()));
    } else {
        items.par_sort_unstable_by_key(|&x| x.key());
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use rayon::prelude::*;

    use super::PAR;
    use crate::key::NumKey;
    use crate::lanes::{Avx2x4, Avx2x8, Avx512x16, Avx512x8, Codec, Float, Key, Lanes, Xor};

    /// Sorts `items` as the keys of `V` that `flip` and, for floats, the
    /// float transform make of them ([`Codec`]): transformed in place
    /// before, sorted, transformed back (u32 ascending, where the keys are
    /// the items, without either pass).
    ///
    /// # Safety
    /// The CPU has `V`'s instruction set and POPCNT; `V::K` is as wide as
    /// `T`.
    pub(super) unsafe fn run<V: Kernels, T: NumKey>(items: &mut [T], flip: u64) {
        let keys: &mut [V::K] = bytemuck::cast_slice_mut(items);
        let flip = flip ^ V::K::BIAS;
        let depth = 2 * (usize::BITS - keys.len().leading_zeros());
        if T::FLOAT {
            coded(keys, Float(flip), |keys| V::quicksort(keys, depth));
        } else if flip != 0 {
            coded(keys, Xor(flip), |keys| V::quicksort(keys, depth));
        } else {
            V::quicksort(keys, depth);
        }
    }

    /// `sort` between `codec`'s passes over `keys` (on the rayon pool, in
    /// pieces of 64 Ki keys).
    fn coded<K: Key, C: Codec + Sync>(keys: &mut [K], codec: C, sort: impl FnOnce(&mut [K])) {
        keys.par_chunks_mut(PAR).for_each(|c| c.iter_mut().for_each(|k| *k = codec.enc1(*k)));
        sort(keys);
        keys.par_chunks_mut(PAR).for_each(|c| c.iter_mut().for_each(|k| *k = codec.dec1(*k)));
    }

    /// An instruction set's compiled pieces, for the generic [`quicksort`].
    /// Every function needs the instruction set.
    pub(super) trait Kernels: Lanes {
        unsafe fn quicksort(keys: &mut [Self::K], depth: u32);
        /// Puts the keys below `pivot` first; returns their count. `keys`
        /// holds more than [`small`] keys.
        unsafe fn split(keys: &mut [Self::K], pivot: Self::K) -> usize;
        /// Sorts at most `N` vectors of keys ([`sort_vectors`]).
        unsafe fn vectors<const N: usize>(keys: &mut [Self::K]);
    }

    /// Writes the sort compiled for one instruction set: `$qs`, `$part` and
    /// `$vec`, `#[target_feature]` functions, generic over the lanes, that
    /// the generic code is inlined into (enabling `$features`; the
    /// networks, which need no POPCNT, `$networks`), and the [`Kernels`] of
    /// each of its lanes `$v` that call them, partitioning `$u` vectors a
    /// step (64 keys: 4 vectors of AVX-512's 32-bit keys, 8 of the others;
    /// 32 keys for AVX2's 64-bit keys, whose networks sort at most 64);
    /// fewer mispredicted choices of an end, more independent work between
    /// them.
    ///
    /// The partition and the networks are out of line, each compiled for
    /// its instruction set (inlined into every level of the quicksort, they
    /// made it 13 % slower: a larger frame and more spills per call). They
    /// are called directly: a call through a function pointer was inlined
    /// despite `inline(never)`.
    macro_rules! kernels {
        (
            $qs:ident, $part:ident, $vec:ident: $features:literal, networks $networks:literal;
            $($v:ty => $u:expr),*
        ) => {
            /// The quicksort compiled for one instruction set; `depth` levels
            /// of partitions left before it falls back to `sort_unstable`.
            ///
            /// # Safety
            /// The CPU has the instruction set and POPCNT, and `V` needs no
            /// more.
            #[target_feature(enable = $features)]
            unsafe fn $qs<V: Kernels>(keys: &mut [V::K], depth: u32) {
                quicksort::<V>(keys, depth)
            }

            /// [`partition_by`] compiled for one instruction set.
            #[target_feature(enable = $features)]
            #[inline(never)]
            unsafe fn $part<V: Lanes, const U: usize>(keys: &mut [V::K], pivot: V::K) -> usize {
                partition_by::<V, U>(keys, pivot)
            }

            /// [`sort_vectors`] compiled for one instruction set.
            #[target_feature(enable = $networks)]
            #[inline(never)]
            unsafe fn $vec<V: Lanes, const N: usize>(keys: &mut [V::K]) {
                sort_vectors::<V, N>(keys)
            }

            $(
                impl Kernels for $v {
                    #[inline(always)]
                    unsafe fn quicksort(keys: &mut [Self::K], depth: u32) {
                        $qs::<Self>(keys, depth)
                    }
                    #[inline(always)]
                    unsafe fn split(keys: &mut [Self::K], pivot: Self::K) -> usize {
                        $part::<Self, $u>(keys, pivot)
                    }
                    #[inline(always)]
                    unsafe fn vectors<const N: usize>(keys: &mut [Self::K]) {
                        $vec::<Self, N>(keys)
                    }
                }
            )*
        };
    }

    kernels! {
        quicksort_avx512, partition_avx512, vectors_avx512: "avx512f,popcnt", networks "avx512f";
        Avx512x16 => 4, Avx512x8 => 8
    }
    kernels! {
        quicksort_avx2, partition_avx2, vectors_avx2: "avx2,popcnt", networks "avx2";
        Avx2x8 => 8, Avx2x4 => 8
    }

    /// Slices up to this many keys are sorted by a network in registers.
    #[inline(always)]
    fn small<V: Lanes>() -> usize {
        16 * V::W
    }

    /// One level: partition, then the instruction set's quicksort on
    /// both parts.
    #[inline(always)]
    unsafe fn quicksort<V: Kernels>(keys: &mut [V::K], depth: u32) {
        let n = keys.len();
        if n <= small::<V>() {
            return sort_small::<V>(keys);
        }
        if depth == 0 {
            return keys.sort_unstable();
        }
        let pivot = pivot::<V>(keys);
        let mut k = V::split(keys, pivot);
        let mut start = 0;
        if k == 0 {
            // The pivot is the smallest key: the keys equal to it go first
            // and are in place. (If it is the largest key too, all keys
            // are equal.)
            let Some(above) = pivot.next() else {
                return;
            };
            k = V::split(keys, above);
            start = k;
        }
        let (left, right) = keys.split_at_mut(k);
        let left = &mut left[start..];
        if n > PAR {
            // SAFETY (both tasks): the CPU has the instruction set, as this
            // call needs.
            rayon::join(
                || unsafe { V::quicksort(left, depth - 1) },
                || unsafe { V::quicksort(right, depth - 1) },
            );
        } else {
            V::quicksort(left, depth - 1);
            V::quicksort(right, depth - 1);
        }
    }

    /// The median of 16 keys spread evenly over `keys` (at least 16),
    /// sorted by the networks (a call of `sort_unstable` here cost 9 % of
    /// the sort: a partition is a few hundred keys at the bottom levels).
    #[inline(always)]
    unsafe fn pivot<V: Kernels>(keys: &[V::K]) -> V::K {
        let step = keys.len() / 16;
        let mut sample = [V::K::MAX; 16];
        for (i, s) in sample.iter_mut().enumerate() {
            *s = keys[i * step + step / 2];
        }
        sort_small::<V>(&mut sample);
        sample[8]
    }

    /// [`Kernels::split`], `U` vectors a step (why: see `kernels!`).
    #[inline(always)]
    unsafe fn partition_by<V: Lanes, const U: usize>(keys: &mut [V::K], pivot: V::K) -> usize {
        let uw = U * V::W;
        let n = keys.len();
        debug_assert!(n > small::<V>() && small::<V>() >= 2 * uw);
        // Whole steps from here: the first n % UW keys partitioned without
        // a branch (Lomuto's, each key swapped with the first larger one
        // and the count moved by the compare; a branch per key mispredicted
        // half the time and took ~15 % of the partition on Zen 2), their
        // larger keys then swapped to the end of the slice.
        let r = n % uw;
        let mut lo = 0;
        for i in 0..r {
            let x = keys[i];
            keys.swap(i, lo);
            lo += usize::from(x < pivot);
        }
        let hi = n - (r - lo);
        for t in 0..r - lo {
            // Disjoint: r < UW < n - r.
            keys.swap(lo + t, hi + t);
        }
        let p = keys.as_mut_ptr();
        let pv = V::splat(pivot);
        // Keys [lo, hi), a multiple of UW and at least 2 UW long: the first
        // and last U vectors kept in registers leave 2 UW free slots;
        // unread keys are [l, r), the left store writes at ls, the right
        // one ends at rs. Free slots: [ls, l) and [r, rs), 2 UW in all
        // before each load; loading U vectors from the end with less room
        // gives both ends at least UW, so each of the U steps' stores (up
        // to a whole vector at ls, and below rs) overwrites only keys
        // already read; in the last steps, [ls, rs) is one free stretch of
        // at least 2 vectors, or exactly one (both stores then write the
        // same lanes).
        //
        // SAFETY (every load and store): all indices lie in [lo, hi) ⊆
        // [0, n), by the invariant above.
        // (No closures here: a closure is compiled without the entry
        // point's instruction set, and its vector operations would become
        // calls.)
        let (first, last) = (load::<V, U>(p.add(lo)), load::<V, U>(p.add(hi - uw)));
        let (mut ls, mut rs) = (lo, hi);
        let (mut l, mut r) = (lo + uw, hi - uw);
        while l < r {
            let vs = if rs - r < l - ls {
                r -= uw;
                load::<V, U>(p.add(r))
            } else {
                l += uw;
                load::<V, U>(p.add(l - uw))
            };
            put(vs, pv, p, &mut ls, &mut rs);
        }
        put(first, pv, p, &mut ls, &mut rs);
        put(last, pv, p, &mut ls, &mut rs);
        debug_assert_eq!(ls, rs);
        ls
    }

    /// `U` vectors from `at` on.
    #[inline(always)]
    unsafe fn load<V: Lanes, const U: usize>(at: *const V::K) -> [V; U] {
        let mut vs = [V::splat(V::K::MAX); U];
        for (j, v) in vs.iter_mut().enumerate() {
            *v = V::load(at.add(j * V::W));
        }
        vs
    }

    /// Partition steps of the vectors `vs`: smaller keys stored from
    /// `p + ls` on, the others down to `p + rs`; both moved.
    #[inline(always)]
    unsafe fn put<V: Lanes, const U: usize>(
        vs: [V; U],
        pivot: V,
        p: *mut V::K,
        ls: &mut usize,
        rs: &mut usize,
    ) {
        for v in vs {
            let c = V::partition(v, pivot, p.add(*ls), p.add(*rs));
            *ls += V::W - c;
            *rs -= c;
        }
    }

    /// Sorts at most 16 vectors of keys in registers.
    #[inline(always)]
    unsafe fn sort_small<V: Kernels>(keys: &mut [V::K]) {
        match keys.len().div_ceil(V::W) {
            0 => {}
            1 => V::vectors::<1>(keys),
            2 => V::vectors::<2>(keys),
            3 | 4 => V::vectors::<4>(keys),
            5..=8 => V::vectors::<8>(keys),
            _ => V::vectors::<16>(keys),
        }
    }

    /// Sorts at most `N` vectors of keys: loaded into `N` vectors (padded
    /// with the largest key, which sorts last), each sorted, then sorted blocks of
    /// 1, 2, 4 … vectors merged pairwise; the first `keys.len()` stored back.
    #[inline(always)]
    unsafe fn sort_vectors<V: Lanes, const N: usize>(keys: &mut [V::K]) {
        let (n, w) = (keys.len(), V::W);
        debug_assert!(n <= N * w);
        let count = |i: usize| n.saturating_sub(i * w).min(w);
        let mut v = [V::splat(V::K::MAX); N];
        for (i, x) in v.iter_mut().enumerate() {
            // SAFETY: only the keys of the slice are read.
            *x = V::sort(V::load_first(keys.as_ptr().add(i * w), count(i)));
        }
        let mut b = 1;
        while b < N {
            for block in v.chunks_exact_mut(2 * b) {
                merge_blocks(block, b);
            }
            b *= 2;
        }
        for (i, x) in v.iter().enumerate() {
            // SAFETY: only the keys of the slice are written.
            V::store_first(keys.as_mut_ptr().add(i * w), count(i), *x);
        }
    }

    /// Merges two sorted blocks of `b` vectors (`block` = A then B) into
    /// one: A against B reversed gives a low and a high bitonic half
    /// (every key of the low ≤ every key of the high), each sorted by
    /// half-cleaners between vectors `b/2 … 1` apart, then in each vector.
    #[inline(always)]
    unsafe fn merge_blocks<V: Lanes>(block: &mut [V], b: usize) {
        let mut high = [V::splat(V::K::MAX); 8];
        for i in 0..b {
            let (x, y) = (block[i], V::reverse(block[2 * b - 1 - i]));
            block[i] = V::min(x, y);
            high[i] = V::max(x, y);
        }
        block[b..].copy_from_slice(&high[..b]);
        for half in block.chunks_exact_mut(b) {
            let mut d = b / 2;
            while d > 0 {
                for j in 0..b {
                    if j & d == 0 {
                        let (x, y) = (half[j], half[j + d]);
                        half[j] = V::min(x, y);
                        half[j + d] = V::max(x, y);
                    }
                }
                d /= 2;
            }
            for x in half.iter_mut() {
                *x = V::clean(*x);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A seeded xorshift: the same inputs on every run.
    pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Floats that sort at the edges: NaNs of both signs and two payloads,
    /// ±0, ±∞, the smallest subnormals, the extremes.
    pub(crate) fn float_edges() -> Vec<f64> {
        vec![
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7FF0_0000_0000_0001),
            f64::from_bits(0xFFF8_0000_0000_0007),
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            1.0,
            -1.0,
        ]
    }

    /// A number format's test items: from random bits, or few distinct
    /// values; floats with edge values mixed in.
    pub(crate) trait Item: NumKey + std::fmt::Debug {
        fn of(bits: u64) -> Self;
        /// An edge value (floats), or just another item.
        fn edge(i: u64) -> Self {
            Self::of(i)
        }
        /// Whether `a`, `b` are in the order of the format as the scalar
        /// path had it before this key (ints: `Ord`, floats: `f32_key`
        /// / `f64_key`).
        fn in_order(a: Self, b: Self) -> bool;
    }
    /// Writes the [`Item`] impl of each integer type `$t`: the low bits of
    /// `b`, in the order of `Ord`.
    macro_rules! int_items {
        ($($t:ty),*) => {$(
            impl Item for $t {
                fn of(b: u64) -> $t {
                    b as $t
                }
                fn in_order(a: $t, b: $t) -> bool {
                    a <= b
                }
            }
        )*};
    }
    int_items!(u32, i32, u64, i64);
    impl Item for f32 {
        fn of(b: u64) -> f32 {
            f32::from_bits(b as u32)
        }
        fn edge(i: u64) -> f32 {
            let e = float_edges();
            let x = e[i as usize % e.len()];
            // The NaN payloads narrowed keep being NaNs of their sign.
            if x.is_nan() {
                f32::from_bits(((x.to_bits() >> 32) as u32) | 0x7FC0_0000 | (i as u32 & 3))
            } else {
                x as f32
            }
        }
        fn in_order(a: f32, b: f32) -> bool {
            crate::f32_key(a) <= crate::f32_key(b)
        }
    }
    impl Item for f64 {
        fn of(b: u64) -> f64 {
            f64::from_bits(b)
        }
        fn edge(i: u64) -> f64 {
            let e = float_edges();
            e[i as usize % e.len()]
        }
        fn in_order(a: f64, b: f64) -> bool {
            crate::f64_key(a) <= crate::f64_key(b)
        }
    }

    /// `n` items: random bits (`kind` 0), 4 distinct values (1), floats in
    /// [−1e6, 1e6) and edges (2), few values near the top of the key range
    /// (3).
    pub(crate) fn items<T: Item>(next: &mut impl FnMut() -> u64, n: usize, kind: u8) -> Vec<T> {
        (0..n)
            .map(|_| {
                let r = next();
                match kind {
                    0 => T::of(r),
                    1 => T::of(r % 4),
                    2 if r.is_multiple_of(8) => T::edge(r >> 3),
                    2 => T::of(if std::mem::size_of::<T>() == 4 {
                        ((r % 2_000_000) as f32 - 1e6).to_bits() as u64
                    } else {
                        ((r % 2_000_000) as f64 - 1e6).to_bits()
                    }),
                    _ => T::of(u64::MAX - r % 4),
                }
            })
            .collect()
    }

    /// The items' bits, for exact comparison (NaNs included).
    pub(crate) fn bits<T: NumKey>(v: &[T]) -> Vec<u8> {
        bytemuck::cast_slice(v).to_vec()
    }

    /// Sorted by every level this CPU has: the same bytes as a sort by the
    /// key (a bijection), in the format's order, the same multiset.
    pub(crate) fn check<T: Item>(items: Vec<T>, rev: bool) {
        let mut want = items.clone();
        want.sort_unstable_by_key(|x| x.key());
        if rev {
            want.reverse();
        }
        assert!(want.windows(2).all(|w| if rev { T::in_order(w[1], w[0]) } else { T::in_order(w[0], w[1]) }));
        for at in crate::simd::levels() {
            let mut got = items.clone();
            sort_at(at, &mut got, rev);
            assert!(bits(&got) == bits(&want), "{at}: {} items, rev {rev}", want.len());
        }
    }

    /// Every format at sizes around every vector, step and network
    /// boundary, each kind of input, both orders.
    fn every_size<T: Item>(max: usize) {
        let mut next = xorshift(38 + max as u64);
        for n in 0..=max {
            for kind in 0..4 {
                check(items::<T>(&mut next, n, kind), n % 2 == 1);
            }
        }
    }

    #[test]
    fn every_small_size_of_every_format() {
        every_size::<u32>(600);
        every_size::<i32>(300);
        every_size::<f32>(300);
        every_size::<u64>(300);
        every_size::<i64>(300);
        every_size::<f64>(300);
    }

    proptest! {
        #[test]
        fn sorts_like_slice_sort(keys in prop::collection::vec(any::<u32>(), 0..3000), rev: bool) {
            check(keys, rev);
        }

        #[test]
        fn sorts_i64_like_slice_sort(keys in prop::collection::vec(any::<i64>(), 0..3000), rev: bool) {
            check(keys, rev);
        }

        #[test]
        fn few_distinct_keys(keys in prop::collection::vec(0u64..4, 0..3000), top: bool, rev: bool) {
            // Near the top of the range too (the pivot + 1 split).
            check(keys.iter().map(|&k| if top { u64::MAX - k } else { k }).collect(), rev);
            check(keys.iter().map(|&k| if top { u32::MAX - k as u32 } else { k as u32 }).collect(), rev);
        }

        #[test]
        fn floats_in_total_order(bits in prop::collection::vec(any::<u64>(), 0..2000), rev: bool) {
            check(bits.iter().map(|&b| if b % 5 == 0 { f64::edge(b) } else { f64::of(b) }).collect(), rev);
            check(bits.iter().map(|&b| if b % 5 == 0 { f32::edge(b) } else { f32::of(b) }).collect(), rev);
        }
    }

    #[test]
    fn large_inputs_of_every_width() {
        let mut next = xorshift(7);
        check(items::<u32>(&mut next, 3_000_000, 0), false);
        check(items::<i32>(&mut next, 1_000_000, 1), true);
        check(items::<u64>(&mut next, 1_500_000, 0), false);
        check(items::<i64>(&mut next, 1_000_000, 0), true);
        check(items::<f64>(&mut next, 1_000_000, 2), false);
        check(items::<f32>(&mut next, 1_000_000, 2), true);
        check((0..1_000_000u32).collect(), false);
        check((0..1_000_000u64).rev().collect(), false);
        check(vec![u32::MAX; 100_000], false);
        check(vec![0u64; 100_000], true);
        check(vec![i64::MAX; 100_000], false);
        check(vec![f64::NAN; 100_000], false);
        // Organ pipe: ascending, then descending.
        check((0..500_000u32).chain((0..500_000).rev()).collect(), false);
        check((0..300_000i64).chain((0..300_000).rev()).collect(), true);
    }
}
