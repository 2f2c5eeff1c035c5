//! The vector operations the SIMD sort and merge are written in, once per
//! instruction set: [`Lanes`], implemented by [`Avx512`] (16 keys of 32
//! bits per vector) and [`Avx2`] (8 keys).
//!
//! [`crate::simd_sort`] and [`crate::simd_merge`] are generic over
//! `Lanes`; their entry points are `#[target_feature]` functions that call
//! the generic code, which is `#[inline(always)]` all the way down to the
//! intrinsics, so each instance is compiled for its own instruction set (the
//! way `memchr` writes its vector searches once).
//!
//! Keys are unsigned 32-bit integers. The operations an instruction set
//! lacks are built from others: AVX2 compares signed only (an unsigned
//! compare XORs the sign bit first), and has no compress: a partition step
//! permutes a vector with a table of 256 permutations, one per mask of
//! lanes below the pivot, so that those lanes come first, and stores it at
//! both ends.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

/// A vector of [`Lanes::W`] unsigned 32-bit keys and what the kernels do
/// with it. Every function is `unsafe`: it needs the instruction set of its
/// impl, and the pointers must be valid for the lanes they touch.
pub(crate) trait Lanes: Copy {
    /// Keys per vector.
    const W: usize;

    /// Loads `W` keys from `p`.
    unsafe fn load(p: *const u32) -> Self;
    /// Stores `W` keys at `p`.
    unsafe fn store(p: *mut u32, v: Self);
    /// Loads the first `n` (≤ `W`) keys from `p`; the other lanes hold
    /// `u32::MAX` (which sorts last).
    unsafe fn load_first(p: *const u32, n: usize) -> Self;
    /// Stores the first `n` (≤ `W`) lanes at `p`.
    unsafe fn store_first(p: *mut u32, n: usize, v: Self);
    /// Every lane `x`.
    unsafe fn splat(x: u32) -> Self;
    unsafe fn xor(a: Self, b: Self) -> Self;
    unsafe fn min(a: Self, b: Self) -> Self;
    unsafe fn max(a: Self, b: Self) -> Self;
    /// The lanes in reverse order.
    unsafe fn reverse(v: Self) -> Self;
    /// A bitonic vector sorted (half-cleaners `W/2`, …, 1 lanes apart).
    unsafe fn clean(v: Self) -> Self;
    /// The lanes sorted (a bitonic sorting network).
    unsafe fn sort(v: Self) -> Self;
    /// One partition step: the lanes of `v` below `pivot` (a splat) are
    /// stored from `left` on, the others so that they end at `right_end`;
    /// both stores may write up to `W` lanes (from `left`, and up to
    /// `right_end`), which must be free. Returns how many lanes were not
    /// below the pivot.
    unsafe fn partition(v: Self, pivot: Self, left: *mut u32, right_end: *mut u32) -> usize;
}

/// AVX-512F: 16 keys per vector.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(__m512i);

impl Avx512 {
    /// Compare-exchange of each lane with the lane `partner` holds: the
    /// larger key goes to the lanes of `high`.
    #[inline(always)]
    unsafe fn exchange(v: __m512i, partner: __m512i, high: u16) -> __m512i {
        _mm512_mask_blend_epi32(high, _mm512_min_epu32(v, partner), _mm512_max_epu32(v, partner))
    }

    #[inline(always)]
    fn mask(n: usize) -> u16 {
        ((1u32 << n.min(16)) - 1) as u16
    }
}

impl Lanes for Avx512 {
    const W: usize = 16;

    #[inline(always)]
    unsafe fn load(p: *const u32) -> Self {
        Avx512(_mm512_loadu_si512(p.cast()))
    }
    #[inline(always)]
    unsafe fn store(p: *mut u32, v: Self) {
        _mm512_storeu_si512(p.cast(), v.0)
    }
    #[inline(always)]
    unsafe fn load_first(p: *const u32, n: usize) -> Self {
        Avx512(_mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), Self::mask(n), p.cast()))
    }
    #[inline(always)]
    unsafe fn store_first(p: *mut u32, n: usize, v: Self) {
        _mm512_mask_storeu_epi32(p.cast(), Self::mask(n), v.0)
    }
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Avx512(_mm512_set1_epi32(x as i32))
    }
    #[inline(always)]
    unsafe fn xor(a: Self, b: Self) -> Self {
        Avx512(_mm512_xor_si512(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn min(a: Self, b: Self) -> Self {
        Avx512(_mm512_min_epu32(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self {
        Avx512(_mm512_max_epu32(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn reverse(v: Self) -> Self {
        Avx512(_mm512_permutexvar_epi32(
            _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            v.0,
        ))
    }
    #[inline(always)]
    unsafe fn clean(v: Self) -> Self {
        let v = v.0;
        let v = Self::exchange(v, _mm512_shuffle_i32x4::<0b01_00_11_10>(v, v), 0xFF00);
        let v = Self::exchange(v, _mm512_shuffle_i32x4::<0b10_11_00_01>(v, v), 0xF0F0);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
        Avx512(Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA))
    }
    #[inline(always)]
    unsafe fn sort(v: Self) -> Self {
        let rev8 = _mm512_set_epi32(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
        let v = v.0;
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b00_01_10_11>(v), 0xCCCC);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        let v = Self::exchange(v, _mm512_permutexvar_epi32(rev8, v), 0xF0F0);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA);
        // The halves are split by the reverse: clean's first step is done.
        let v = Self::exchange(v, Self::reverse(Avx512(v)).0, 0xFF00);
        let v = Self::exchange(v, _mm512_shuffle_i32x4::<0b10_11_00_01>(v, v), 0xF0F0);
        let v = Self::exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
        Avx512(Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA))
    }
    #[inline(always)]
    unsafe fn partition(v: Self, pivot: Self, left: *mut u32, right_end: *mut u32) -> usize {
        let ge = _mm512_cmpge_epu32_mask(v.0, pivot.0);
        let c = ge.count_ones() as usize;
        _mm512_storeu_si512(left.cast(), _mm512_maskz_compress_epi32(!ge, v.0));
        _mm512_mask_storeu_epi32(
            right_end.sub(c).cast(),
            Self::mask(c),
            _mm512_maskz_compress_epi32(ge, v.0),
        );
        c
    }
}

/// AVX2: 8 keys per vector.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(__m256i);

/// For each mask of the lanes below the pivot (bit i: lane i), the
/// permutation that puts those lanes first, in order, and the others after
/// them, in order.
const PERMUTATIONS: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let mut k = 0;
        let mut i = 0;
        while i < 8 {
            if m & (1 << i) != 0 {
                t[m][k] = i as u32;
                k += 1;
            }
            i += 1;
        }
        i = 0;
        while i < 8 {
            if m & (1 << i) == 0 {
                t[m][k] = i as u32;
                k += 1;
            }
            i += 1;
        }
        m += 1;
    }
    t
};

impl Avx2 {
    #[inline(always)]
    unsafe fn exchange<const HIGH: i32>(v: __m256i, partner: __m256i) -> __m256i {
        _mm256_blend_epi32::<HIGH>(_mm256_min_epu32(v, partner), _mm256_max_epu32(v, partner))
    }

    /// Lanes `< n` all ones, the others zero (a mask for maskload/store).
    #[inline(always)]
    unsafe fn first(n: usize) -> __m256i {
        let idx = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), idx)
    }
}

impl Lanes for Avx2 {
    const W: usize = 8;

    #[inline(always)]
    unsafe fn load(p: *const u32) -> Self {
        Avx2(_mm256_loadu_si256(p.cast()))
    }
    #[inline(always)]
    unsafe fn store(p: *mut u32, v: Self) {
        _mm256_storeu_si256(p.cast(), v.0)
    }
    #[inline(always)]
    unsafe fn load_first(p: *const u32, n: usize) -> Self {
        let m = Self::first(n);
        let got = _mm256_maskload_epi32(p.cast(), m);
        Avx2(_mm256_blendv_epi8(_mm256_set1_epi32(-1), got, m))
    }
    #[inline(always)]
    unsafe fn store_first(p: *mut u32, n: usize, v: Self) {
        _mm256_maskstore_epi32(p.cast(), Self::first(n), v.0)
    }
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Avx2(_mm256_set1_epi32(x as i32))
    }
    #[inline(always)]
    unsafe fn xor(a: Self, b: Self) -> Self {
        Avx2(_mm256_xor_si256(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn min(a: Self, b: Self) -> Self {
        Avx2(_mm256_min_epu32(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self {
        Avx2(_mm256_max_epu32(a.0, b.0))
    }
    #[inline(always)]
    unsafe fn reverse(v: Self) -> Self {
        Avx2(_mm256_permutevar8x32_epi32(v.0, _mm256_set_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
    }
    #[inline(always)]
    unsafe fn clean(v: Self) -> Self {
        let v = v.0;
        let v = Self::exchange::<0xF0>(v, _mm256_permute2x128_si256::<0x01>(v, v));
        let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b01_00_11_10>(v));
        Avx2(Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v)))
    }
    #[inline(always)]
    unsafe fn sort(v: Self) -> Self {
        let v = v.0;
        let v = Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v));
        let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b00_01_10_11>(v));
        let v = Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v));
        // The halves are split by the reverse: clean's first step is done.
        let v = Self::exchange::<0xF0>(v, Self::reverse(Avx2(v)).0);
        let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b01_00_11_10>(v));
        Avx2(Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v)))
    }
    #[inline(always)]
    unsafe fn partition(v: Self, pivot: Self, left: *mut u32, right_end: *mut u32) -> usize {
        // Unsigned below: signed after flipping the sign bits.
        let sign = _mm256_set1_epi32(i32::MIN);
        let below = _mm256_cmpgt_epi32(_mm256_xor_si256(pivot.0, sign), _mm256_xor_si256(v.0, sign));
        let m = _mm256_movemask_ps(_mm256_castsi256_ps(below)) as usize;
        let perm = _mm256_loadu_si256(PERMUTATIONS[m].as_ptr().cast());
        let p = _mm256_permutevar8x32_epi32(v.0, perm);
        let c = 8 - m.count_ones() as usize;
        // The right end first: where the two stores overlap (the last step
        // of a partition, one vector of room) they write the same lanes.
        _mm256_storeu_si256(right_end.sub(8).cast(), p);
        _mm256_storeu_si256(left.cast(), p);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each operation of each instruction set the CPU has, against plain
    /// code on random lanes.
    #[inline(always)]
    unsafe fn check<V: Lanes>() {
        let mut x = 0x9E37_79B9u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let w = V::W;
        for round in 0..2000 {
            let mut a: Vec<u32> = (0..w).map(|_| next()).collect();
            if round % 3 == 0 {
                a.iter_mut().for_each(|k| *k %= 4);
            }
            let mut out = vec![0u32; 3 * w];
            unsafe {
                let v = V::load(a.as_ptr());
                V::store(out.as_mut_ptr(), V::sort(v));
                let mut want = a.clone();
                want.sort_unstable();
                assert_eq!(out[..w], want[..]);
                V::store(out.as_mut_ptr(), V::reverse(v));
                assert!(out[..w].iter().eq(a.iter().rev()));
                // A bitonic vector: ascending then descending.
                let mut b = want.clone();
                b[w / 2..].reverse();
                V::store(out.as_mut_ptr(), V::clean(V::load(b.as_ptr())));
                assert_eq!(out[..w], want[..]);
                // Partial loads and stores.
                let n = round % (w + 1);
                V::store(out.as_mut_ptr(), V::load_first(a.as_ptr(), n));
                assert!(out[..n] == a[..n] && out[n..w].iter().all(|&k| k == u32::MAX));
                out.fill(7);
                V::store_first(out.as_mut_ptr(), n, v);
                assert!(out[..n] == a[..n] && out[n..w].iter().all(|&k| k == 7));
                // A partition step into the middle of room on both sides.
                let pivot = a[round % w];
                out.fill(0);
                let c = V::partition(v, V::splat(pivot), out.as_mut_ptr(), out.as_mut_ptr().add(3 * w));
                let (lt, ge): (Vec<u32>, Vec<u32>) = a.iter().partition(|&&k| k < pivot);
                assert_eq!(c, ge.len());
                assert_eq!(out[..w - c], lt[..]);
                assert_eq!(out[3 * w - c..], ge[..]);
            }
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn check_avx2() {
        check::<Avx2>()
    }

    #[target_feature(enable = "avx512f,popcnt")]
    unsafe fn check_avx512() {
        check::<Avx512>()
    }

    #[test]
    fn every_operation_against_plain_code() {
        // SAFETY: each only where the CPU has its instruction set.
        if std::arch::is_x86_feature_detected!("avx2") {
            unsafe { check_avx2() };
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            unsafe { check_avx512() };
        }
    }
}
