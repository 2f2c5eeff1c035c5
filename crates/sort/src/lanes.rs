//! The vector operations the SIMD sort and merge are written in, once per
//! instruction set and key width: [`Lanes`], implemented by [`Avx512x16`]
//! (16 keys of 32 bits per vector), [`Avx512x8`] (8 keys of 64 bits),
//! [`Avx2x8`] (8 keys of 32 bits) and [`Avx2x4`] (4 keys of 64 bits); the
//! keys themselves are a [`Key`]; a [`Codec`] turns items into keys and back
//! as they are loaded and stored.
//!
//! [`crate::simd_sort`] and [`crate::simd_merge`] are generic over
//! `Lanes`; their entry points are `#[target_feature]` functions that call
//! the generic code, which is `#[inline(always)]` all the way down to the
//! intrinsics, so each instance is compiled for its own instruction set (the
//! way `memchr` writes its vector searches once).
//!
//! The operations an instruction set lacks are built from others:
//!
//! - AVX2 has no compress: a partition step permutes a vector with a table
//!   of permutations, one per mask of lanes below the pivot, so that those
//!   lanes come first, and stores it at both ends.
//! - AVX2 compares signed only. Its 32-bit unsigned min and max exist, and
//!   its partition XORs the sign bit before the compare; for 64 bits there
//!   is no min or max at all, so [`Avx2x4`]'s keys are *signed* (`i64`):
//!   each compare-exchange is one signed compare and a blend, and the
//!   callers XOR the sign bit into the keys as they make them from items
//!   ([`Key::BIAS`] … [`Level`](crate::simd::Level)-wise, see
//!   `simd_sort.rs`), which costs nothing where they transform the items
//!   anyway.

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2x4, Avx2x8, Avx512x16, Avx512x8};

/// A key the kernels sort: unsigned 32 or 64 bits, or signed 64 bits (the
/// keys of [`Avx2x4`], which has only a signed compare), in memory as
/// themselves.
pub(crate) trait Key: bytemuck::Pod + Ord + Send + Sync + std::fmt::Debug {
    /// The largest key: pads vectors, sorts last.
    const MAX: Self;
    /// Bits per key.
    const BITS: u32;
    /// What a key's unsigned bits (the normalised key of `crate::key`) are
    /// XORed with to make this key: the sign bit for a signed key, so that
    /// signed order is the unsigned order of the bits.
    const BIAS: u64;
    /// The key of these bits (the low [`Key::BITS`] of `x`).
    fn from_u64(x: u64) -> Self;
    /// The key's bits, zero-extended.
    fn to_u64(self) -> u64;
    /// The next larger key, if any.
    fn next(self) -> Option<Self>;
}

/// Writes the [`Key`] impl of each integer type `$t`, whose keys are its
/// bits XORed with `$bias` ([`Key::BIAS`]).
macro_rules! int_keys {
    ($($t:ty: $bias:expr),*) => {$(
        impl Key for $t {
            const MAX: $t = <$t>::MAX;
            const BITS: u32 = <$t>::BITS;
            const BIAS: u64 = $bias;
            #[inline(always)]
            fn from_u64(x: u64) -> $t {
                x as $t
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn next(self) -> Option<$t> {
                self.checked_add(1)
            }
        }
    )*};
}

int_keys!(u32: 0, u64: 0, i64: 1 << 63);

/// A vector of [`Lanes::W`] keys and what the kernels do with it. Every
/// function is `unsafe`: it needs the instruction set of its impl, and the
/// pointers must be valid for the lanes they touch.
pub(crate) trait Lanes: Copy {
    /// The keys.
    type K: Key;
    /// Keys per vector.
    const W: usize;

    /// Loads `W` keys from `p`.
    unsafe fn load(p: *const Self::K) -> Self;
    /// Stores `W` keys at `p`.
    unsafe fn store(p: *mut Self::K, v: Self);
    /// Loads the first `n` (≤ `W`) keys from `p`; the other lanes hold
    /// [`Key::MAX`] (which sorts last).
    unsafe fn load_first(p: *const Self::K, n: usize) -> Self;
    /// Stores the first `n` (≤ `W`) lanes at `p`.
    unsafe fn store_first(p: *mut Self::K, n: usize, v: Self);
    /// Every lane `x`.
    unsafe fn splat(x: Self::K) -> Self;
    /// Lane-wise XOR.
    unsafe fn xor(a: Self, b: Self) -> Self;
    /// Lane-wise AND.
    unsafe fn and(a: Self, b: Self) -> Self;
    /// Lane-wise wrapping sum.
    unsafe fn add(a: Self, b: Self) -> Self;
    /// Lane-wise wrapping difference.
    unsafe fn sub(a: Self, b: Self) -> Self;
    /// Each lane all ones where its top bit is set, else zero.
    unsafe fn sign(v: Self) -> Self;
    /// Lane-wise minimum.
    unsafe fn min(a: Self, b: Self) -> Self;
    /// Lane-wise maximum.
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
    unsafe fn partition(v: Self, pivot: Self, left: *mut Self::K, right_end: *mut Self::K) -> usize;
}

/// How the items a merge reads become its keys, and its keys the items it
/// writes: a bijection of the bits whose key order is the items' order,
/// applied in registers as vectors are loaded and stored (and to single
/// keys in the tails). The sort transforms its slice in place instead,
/// with `crate::key::NumKey`'s scalar functions, which compute the same.
pub(crate) trait Codec: Copy {
    /// The key of each lane's item.
    unsafe fn enc<V: Lanes>(self, v: V) -> V;
    /// The item of each lane's key.
    unsafe fn dec<V: Lanes>(self, v: V) -> V;
    /// The key of one item.
    fn enc1<K: Key>(self, x: K) -> K;
    /// The item of one key.
    fn dec1<K: Key>(self, k: K) -> K;
}

/// Integers: the key is the item XOR a constant (the sign bit for signed
/// formats, all bits for descending order, [`Key::BIAS`]); 0 is the
/// identity, for the merge's inner levels, which read and write keys.
#[derive(Clone, Copy)]
pub(crate) struct Xor(pub u64);

impl Codec for Xor {
    #[inline(always)]
    unsafe fn enc<V: Lanes>(self, v: V) -> V {
        V::xor(v, splat::<V>(self.0))
    }
    #[inline(always)]
    unsafe fn dec<V: Lanes>(self, v: V) -> V {
        self.enc(v)
    }
    #[inline(always)]
    fn enc1<K: Key>(self, x: K) -> K {
        K::from_u64(x.to_u64() ^ self.0)
    }
    #[inline(always)]
    fn dec1<K: Key>(self, k: K) -> K {
        self.enc1(k)
    }
}

/// IEEE floats of the keys' width: `crate::key`'s float key (negative
/// numbers' bits complemented, positive numbers' sign bit set — the total
/// order — then rotated down by the mantissa's all-ones so that NaNs of
/// either sign come after +∞), then XORed with the constant (descending
/// order, [`Key::BIAS`]).
///
/// ```text
///   enc: z = x ^ (sign(x) & !TOP);  k = ((z ^ TOP) − C) ^ flip
///   dec: z = ((k ^ flip) + C) ^ TOP; x = z ^ (sign(z) & !TOP)
/// ```
#[derive(Clone, Copy)]
pub(crate) struct Float(pub u64);

/// Every lane the key of these bits (a function, not a closure: a closure
/// is compiled without the caller's instruction set).
#[inline(always)]
unsafe fn splat<V: Lanes>(x: u64) -> V {
    V::splat(V::K::from_u64(x))
}

/// The sign bit and the mantissa's all-ones of the float of `K`'s width.
#[inline(always)]
fn float_consts<K: Key>() -> (u64, u64) {
    if K::BITS == 32 {
        (1 << 31, (1 << 23) - 1)
    } else {
        (1 << 63, (1 << 52) - 1)
    }
}

impl Codec for Float {
    #[inline(always)]
    unsafe fn enc<V: Lanes>(self, v: V) -> V {
        let (top, c) = float_consts::<V::K>();
        let z = V::xor(v, V::and(V::sign(v), splat::<V>(!top)));
        V::xor(V::sub(V::xor(z, splat::<V>(top)), splat::<V>(c)), splat::<V>(self.0))
    }
    #[inline(always)]
    unsafe fn dec<V: Lanes>(self, v: V) -> V {
        let (top, c) = float_consts::<V::K>();
        let z = V::xor(V::add(V::xor(v, splat::<V>(self.0)), splat::<V>(c)), splat::<V>(top));
        V::xor(z, V::and(V::sign(z), splat::<V>(!top)))
    }
    #[inline(always)]
    fn enc1<K: Key>(self, x: K) -> K {
        let (top, c) = float_consts::<K>();
        let x = x.to_u64();
        let z = if x & top != 0 { !x } else { x | top };
        K::from_u64(z.wrapping_sub(c) ^ self.0)
    }
    #[inline(always)]
    fn dec1<K: Key>(self, k: K) -> K {
        let (top, c) = float_consts::<K>();
        let y = (k.to_u64() ^ self.0).wrapping_add(c) & (top | (top - 1));
        K::from_u64(if y & top != 0 { y ^ top } else { !y })
    }
}

/// The impls of the x86-64 instruction sets.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Lanes;

    /// Writes the operations of an `impl Lanes` that are one intrinsic
    /// each, `#[inline(always)]`, from entries `name(parameters): intrinsic`
    /// whose parameters say the shape: `load(p)` and `store(p, v)` of a
    /// whole vector at `p`, `splat(x)` of a key (`as` the type the
    /// intrinsic takes, if given), a unary operation `(v)` or a binary one
    /// `(a, b)` on the lanes' registers. `xor(a, b): _mm512_xor_si512`
    /// writes `unsafe fn xor(a: Self, b: Self) -> Self { Self(_mm512_xor_si512(a.0, b.0)) }`.
    macro_rules! one_intrinsic {
        ($($name:ident $params:tt: $op:path $(as $t:ty)?),* $(,)?) => {
            $(one_intrinsic!(@fn $name $params $op $(as $t)?);)*
        };
        (@fn load (p) $op:path) => {
            #[inline(always)]
            unsafe fn load(p: *const Self::K) -> Self {
                Self($op(p.cast()))
            }
        };
        (@fn store (p, v) $op:path) => {
            #[inline(always)]
            unsafe fn store(p: *mut Self::K, v: Self) {
                $op(p.cast(), v.0)
            }
        };
        (@fn splat (x) $op:path $(as $t:ty)?) => {
            #[inline(always)]
            unsafe fn splat(x: Self::K) -> Self {
                Self($op(x $(as $t)?))
            }
        };
        (@fn $name:ident (v) $op:path) => {
            #[inline(always)]
            unsafe fn $name(v: Self) -> Self {
                Self($op(v.0))
            }
        };
        (@fn $name:ident (a, b) $op:path) => {
            #[inline(always)]
            unsafe fn $name(a: Self, b: Self) -> Self {
                Self($op(a.0, b.0))
            }
        };
    }

    /// AVX-512F: 16 keys of 32 bits per vector.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512x16(__m512i);

    impl Avx512x16 {
        /// Compare-exchange of each lane with the lane `partner` holds: the
        /// larger key goes to the lanes of `high`.
        #[inline(always)]
        unsafe fn exchange(v: __m512i, partner: __m512i, high: u16) -> __m512i {
            _mm512_mask_blend_epi32(high, _mm512_min_epu32(v, partner), _mm512_max_epu32(v, partner))
        }

        /// The mask of the first `n` lanes (all where `n` ≥ 16).
        #[inline(always)]
        fn mask(n: usize) -> u16 {
            ((1u32 << n.min(16)) - 1) as u16
        }
    }

    impl Lanes for Avx512x16 {
        type K = u32;
        const W: usize = 16;

        one_intrinsic! {
            load(p): _mm512_loadu_si512,
            store(p, v): _mm512_storeu_si512,
            splat(x): _mm512_set1_epi32 as i32,
            xor(a, b): _mm512_xor_si512,
            and(a, b): _mm512_and_si512,
            add(a, b): _mm512_add_epi32,
            sub(a, b): _mm512_sub_epi32,
            sign(v): _mm512_srai_epi32::<31>,
            min(a, b): _mm512_min_epu32,
            max(a, b): _mm512_max_epu32,
        }
        #[inline(always)]
        unsafe fn load_first(p: *const u32, n: usize) -> Self {
            Self(_mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), Self::mask(n), p.cast()))
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut u32, n: usize, v: Self) {
            _mm512_mask_storeu_epi32(p.cast(), Self::mask(n), v.0)
        }
        #[inline(always)]
        unsafe fn reverse(v: Self) -> Self {
            Self(_mm512_permutexvar_epi32(
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
            Self(Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA))
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
            let v = Self::exchange(v, Self::reverse(Self(v)).0, 0xFF00);
            let v = Self::exchange(v, _mm512_shuffle_i32x4::<0b10_11_00_01>(v, v), 0xF0F0);
            let v = Self::exchange(v, _mm512_shuffle_epi32::<0b01_00_11_10>(v), 0xCCCC);
            Self(Self::exchange(v, _mm512_shuffle_epi32::<0b10_11_00_01>(v), 0xAAAA))
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

    /// AVX-512F: 8 keys of 64 bits per vector.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512x8(__m512i);

    impl Avx512x8 {
        /// Compare-exchange of each lane with the lane `partner` holds: the
        /// larger key goes to the lanes of `high`.
        #[inline(always)]
        unsafe fn exchange(v: __m512i, partner: __m512i, high: u8) -> __m512i {
            _mm512_mask_blend_epi64(high, _mm512_min_epu64(v, partner), _mm512_max_epu64(v, partner))
        }

        /// The mask of the first `n` lanes (all where `n` ≥ 8).
        #[inline(always)]
        fn mask(n: usize) -> u8 {
            ((1u32 << n.min(8)) - 1) as u8
        }

        /// Each 64-bit lane swapped with its neighbour (1 apart).
        #[inline(always)]
        unsafe fn swap1(v: __m512i) -> __m512i {
            _mm512_shuffle_epi32::<0b01_00_11_10>(v)
        }
    }

    impl Lanes for Avx512x8 {
        type K = u64;
        const W: usize = 8;

        one_intrinsic! {
            load(p): _mm512_loadu_si512,
            store(p, v): _mm512_storeu_si512,
            splat(x): _mm512_set1_epi64 as i64,
            xor(a, b): _mm512_xor_si512,
            and(a, b): _mm512_and_si512,
            add(a, b): _mm512_add_epi64,
            sub(a, b): _mm512_sub_epi64,
            sign(v): _mm512_srai_epi64::<63>,
            min(a, b): _mm512_min_epu64,
            max(a, b): _mm512_max_epu64,
        }
        #[inline(always)]
        unsafe fn load_first(p: *const u64, n: usize) -> Self {
            Self(_mm512_mask_loadu_epi64(_mm512_set1_epi64(-1), Self::mask(n), p.cast()))
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut u64, n: usize, v: Self) {
            _mm512_mask_storeu_epi64(p.cast(), Self::mask(n), v.0)
        }
        #[inline(always)]
        unsafe fn reverse(v: Self) -> Self {
            Self(_mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), v.0))
        }
        #[inline(always)]
        unsafe fn clean(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange(v, _mm512_shuffle_i64x2::<0b01_00_11_10>(v, v), 0xF0);
            let v = Self::exchange(v, _mm512_shuffle_i64x2::<0b10_11_00_01>(v, v), 0xCC);
            Self(Self::exchange(v, Self::swap1(v), 0xAA))
        }
        #[inline(always)]
        unsafe fn sort(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange(v, Self::swap1(v), 0xAA);
            // Each group of 4 against itself reversed, then 1 apart.
            let v = Self::exchange(v, _mm512_permutex_epi64::<0b00_01_10_11>(v), 0xCC);
            let v = Self::exchange(v, Self::swap1(v), 0xAA);
            // The halves are split by the reverse: clean's first step is done.
            let v = Self::exchange(v, Self::reverse(Self(v)).0, 0xF0);
            let v = Self::exchange(v, _mm512_shuffle_i64x2::<0b10_11_00_01>(v, v), 0xCC);
            Self(Self::exchange(v, Self::swap1(v), 0xAA))
        }
        #[inline(always)]
        unsafe fn partition(v: Self, pivot: Self, left: *mut u64, right_end: *mut u64) -> usize {
            let ge = _mm512_cmpge_epu64_mask(v.0, pivot.0);
            let c = ge.count_ones() as usize;
            _mm512_storeu_si512(left.cast(), _mm512_maskz_compress_epi64(!ge, v.0));
            _mm512_mask_storeu_epi64(
                right_end.sub(c).cast(),
                Self::mask(c),
                _mm512_maskz_compress_epi64(ge, v.0),
            );
            c
        }
    }

    /// AVX2: 8 keys of 32 bits per vector.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2x8(__m256i);

    /// For each mask of the lanes below the pivot (bit i: lane i), the
    /// permutation of 8 lanes that puts those lanes first, in order, and the
    /// others after them, in order.
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

    /// [`PERMUTATIONS`] of 4 lanes of 64 bits, as pairs of 32-bit lanes.
    const PERMUTATIONS4: [[u32; 8]; 16] = {
        let mut t = [[0u32; 8]; 16];
        let mut m = 0;
        while m < 16 {
            let p = PERMUTATIONS[m];
            // The first 4 of an 8-lane permutation of a mask below 16 are a
            // permutation of lanes 0–3.
            let mut i = 0;
            while i < 4 {
                t[m][2 * i] = 2 * p[i];
                t[m][2 * i + 1] = 2 * p[i] + 1;
                i += 1;
            }
            m += 1;
        }
        t
    };

    impl Avx2x8 {
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

    impl Lanes for Avx2x8 {
        type K = u32;
        const W: usize = 8;

        one_intrinsic! {
            load(p): _mm256_loadu_si256,
            store(p, v): _mm256_storeu_si256,
            splat(x): _mm256_set1_epi32 as i32,
            xor(a, b): _mm256_xor_si256,
            and(a, b): _mm256_and_si256,
            add(a, b): _mm256_add_epi32,
            sub(a, b): _mm256_sub_epi32,
            sign(v): _mm256_srai_epi32::<31>,
            min(a, b): _mm256_min_epu32,
            max(a, b): _mm256_max_epu32,
        }
        #[inline(always)]
        unsafe fn load_first(p: *const u32, n: usize) -> Self {
            let m = Self::first(n);
            let got = _mm256_maskload_epi32(p.cast(), m);
            Self(_mm256_blendv_epi8(_mm256_set1_epi32(-1), got, m))
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut u32, n: usize, v: Self) {
            _mm256_maskstore_epi32(p.cast(), Self::first(n), v.0)
        }
        #[inline(always)]
        unsafe fn reverse(v: Self) -> Self {
            Self(_mm256_permutevar8x32_epi32(v.0, _mm256_set_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
        }
        #[inline(always)]
        unsafe fn clean(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange::<0xF0>(v, _mm256_permute2x128_si256::<0x01>(v, v));
            let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b01_00_11_10>(v));
            Self(Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v)))
        }
        #[inline(always)]
        unsafe fn sort(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v));
            let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b00_01_10_11>(v));
            let v = Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v));
            // The halves are split by the reverse: clean's first step is done.
            let v = Self::exchange::<0xF0>(v, Self::reverse(Self(v)).0);
            let v = Self::exchange::<0xCC>(v, _mm256_shuffle_epi32::<0b01_00_11_10>(v));
            Self(Self::exchange::<0xAA>(v, _mm256_shuffle_epi32::<0b10_11_00_01>(v)))
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

    /// AVX2: 4 *signed* keys of 64 bits per vector (AVX2 compares 64-bit
    /// lanes signed only, and has no 64-bit min or max).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2x4(__m256i);

    impl Avx2x4 {
        /// Compare-exchange of each lane with the lane `partner` holds: the
        /// larger key goes to the lanes of `HIGH` (bit i: 64-bit lane i). One
        /// compare: a low lane takes its partner where it is greater, a high
        /// lane where it is not (equal keys are equal either way).
        #[inline(always)]
        unsafe fn exchange<const HIGH: i32>(v: __m256i, partner: __m256i) -> __m256i {
            let high = _mm256_set_epi64x(
                -((HIGH >> 3) & 1) as i64,
                -((HIGH >> 2) & 1) as i64,
                -((HIGH >> 1) & 1) as i64,
                -(HIGH & 1) as i64,
            );
            let gt = _mm256_cmpgt_epi64(v, partner);
            _mm256_blendv_epi8(v, partner, _mm256_xor_si256(gt, high))
        }

        /// Lanes `< n` all ones, the others zero (a mask for maskload/store).
        #[inline(always)]
        unsafe fn first(n: usize) -> __m256i {
            _mm256_cmpgt_epi64(_mm256_set1_epi64x(n.min(4) as i64), _mm256_set_epi64x(3, 2, 1, 0))
        }

        /// Each lane swapped with its neighbour (1 apart).
        #[inline(always)]
        unsafe fn swap1(v: __m256i) -> __m256i {
            _mm256_shuffle_epi32::<0b01_00_11_10>(v)
        }
    }

    impl Lanes for Avx2x4 {
        type K = i64;
        const W: usize = 4;

        one_intrinsic! {
            load(p): _mm256_loadu_si256,
            store(p, v): _mm256_storeu_si256,
            splat(x): _mm256_set1_epi64x,
            xor(a, b): _mm256_xor_si256,
            and(a, b): _mm256_and_si256,
            add(a, b): _mm256_add_epi64,
            sub(a, b): _mm256_sub_epi64,
        }
        #[inline(always)]
        unsafe fn load_first(p: *const i64, n: usize) -> Self {
            let m = Self::first(n);
            let got = _mm256_maskload_epi64(p.cast(), m);
            Self(_mm256_blendv_epi8(_mm256_set1_epi64x(i64::MAX), got, m))
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut i64, n: usize, v: Self) {
            _mm256_maskstore_epi64(p.cast(), Self::first(n), v.0)
        }
        #[inline(always)]
        unsafe fn sign(v: Self) -> Self {
            Self(_mm256_cmpgt_epi64(_mm256_setzero_si256(), v.0))
        }
        #[inline(always)]
        unsafe fn min(a: Self, b: Self) -> Self {
            Self(_mm256_blendv_epi8(a.0, b.0, _mm256_cmpgt_epi64(a.0, b.0)))
        }
        #[inline(always)]
        unsafe fn max(a: Self, b: Self) -> Self {
            Self(_mm256_blendv_epi8(b.0, a.0, _mm256_cmpgt_epi64(a.0, b.0)))
        }
        #[inline(always)]
        unsafe fn reverse(v: Self) -> Self {
            Self(_mm256_permute4x64_epi64::<0b00_01_10_11>(v.0))
        }
        #[inline(always)]
        unsafe fn clean(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange::<0b1100>(v, _mm256_permute4x64_epi64::<0b01_00_11_10>(v));
            Self(Self::exchange::<0b1010>(v, Self::swap1(v)))
        }
        #[inline(always)]
        unsafe fn sort(v: Self) -> Self {
            let v = v.0;
            let v = Self::exchange::<0b1010>(v, Self::swap1(v));
            // The halves are split by the reverse: clean's first step is done.
            let v = Self::exchange::<0b1100>(v, _mm256_permute4x64_epi64::<0b00_01_10_11>(v));
            Self(Self::exchange::<0b1010>(v, Self::swap1(v)))
        }
        #[inline(always)]
        unsafe fn partition(v: Self, pivot: Self, left: *mut i64, right_end: *mut i64) -> usize {
            let below = _mm256_cmpgt_epi64(pivot.0, v.0);
            let m = _mm256_movemask_pd(_mm256_castsi256_pd(below)) as usize;
            let perm = _mm256_loadu_si256(PERMUTATIONS4[m].as_ptr().cast());
            let p = _mm256_permutevar8x32_epi32(v.0, perm);
            let c = 4 - m.count_ones() as usize;
            // As in Avx2x8: the right end first.
            _mm256_storeu_si256(right_end.sub(4).cast(), p);
            _mm256_storeu_si256(left.cast(), p);
            c
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Random keys of `K`'s width: all bits, or few distinct.
    fn keys<K: Key>(next: &mut impl FnMut() -> u64, n: usize, few: bool) -> Vec<K> {
        (0..n).map(|_| K::from_u64(if few { next() % 4 } else { next() })).collect()
    }

    /// Each operation of each instruction set the CPU has, against plain
    /// code on random lanes.
    #[inline(always)]
    unsafe fn check<V: Lanes>() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let w = V::W;
        for round in 0..2000 {
            let a: Vec<V::K> = keys(&mut next, w, round % 3 == 0);
            let mut out = vec![V::K::from_u64(0); 3 * w];
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
                // min, max, and the codecs' operations.
                let c: Vec<V::K> = keys(&mut next, w, round % 3 == 0);
                let u = V::load(c.as_ptr());
                V::store(out.as_mut_ptr(), V::min(v, u));
                assert!(out[..w].iter().zip(a.iter().zip(&c)).all(|(o, (x, y))| o == x.min(y)));
                V::store(out.as_mut_ptr(), V::max(v, u));
                assert!(out[..w].iter().zip(a.iter().zip(&c)).all(|(o, (x, y))| o == x.max(y)));
                let bits = |v: &[V::K]| v.iter().map(|k| k.to_u64()).collect::<Vec<u64>>();
                let mask = u64::MAX >> (64 - V::K::BITS);
                let lanewise = |f: &dyn Fn(u64, u64) -> u64| -> Vec<u64> {
                    a.iter().zip(&c).map(|(x, y)| f(x.to_u64(), y.to_u64()) & mask).collect()
                };
                V::store(out.as_mut_ptr(), V::add(v, u));
                assert_eq!(bits(&out[..w]), lanewise(&|x, y| x.wrapping_add(y)));
                V::store(out.as_mut_ptr(), V::sub(v, u));
                assert_eq!(bits(&out[..w]), lanewise(&|x, y| x.wrapping_sub(y)));
                V::store(out.as_mut_ptr(), V::and(v, u));
                assert_eq!(bits(&out[..w]), lanewise(&|x, y| x & y));
                V::store(out.as_mut_ptr(), V::sign(v));
                assert_eq!(
                    bits(&out[..w]),
                    lanewise(&|x, _| if x >> (V::K::BITS - 1) == 1 { mask } else { 0 })
                );
                // The codecs, vector against single keys, and back.
                for flip in [0, mask, 1 << (V::K::BITS - 1)] {
                    V::store(out.as_mut_ptr(), Float(flip).enc(v));
                    assert!(out[..w].iter().zip(&a).all(|(o, &x)| *o == Float(flip).enc1(x)));
                    V::store(out.as_mut_ptr(), Float(flip).dec(Float(flip).enc(v)));
                    assert_eq!(out[..w], a[..]);
                    assert!(a.iter().all(|&x| Float(flip).dec1(Float(flip).enc1(x)) == x));
                    V::store(out.as_mut_ptr(), Xor(flip).dec(Xor(flip).enc(v)));
                    assert_eq!(out[..w], a[..]);
                }
                // Partial loads and stores.
                let n = round % (w + 1);
                V::store(out.as_mut_ptr(), V::load_first(a.as_ptr(), n));
                assert!(out[..n] == a[..n] && out[n..w].iter().all(|&k| k == V::K::MAX));
                out.fill(V::K::from_u64(7));
                V::store_first(out.as_mut_ptr(), n, v);
                assert!(out[..n] == a[..n] && out[n..w].iter().all(|&k| k == V::K::from_u64(7)));
                // A partition step into the middle of room on both sides.
                let pivot = a[round % w];
                out.fill(V::K::from_u64(0));
                let c = V::partition(v, V::splat(pivot), out.as_mut_ptr(), out.as_mut_ptr().add(3 * w));
                let (lt, ge): (Vec<V::K>, Vec<V::K>) = a.iter().partition(|&&k| k < pivot);
                assert_eq!(c, ge.len());
                assert_eq!(out[..w - c], lt[..]);
                assert_eq!(out[3 * w - c..], ge[..]);
            }
        }
    }

    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn check_avx2() {
        check::<Avx2x8>();
        check::<Avx2x4>();
    }

    #[target_feature(enable = "avx512f,popcnt")]
    unsafe fn check_avx512() {
        check::<Avx512x16>();
        check::<Avx512x8>();
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

    #[test]
    fn the_float_codec_orders_like_the_float_keys() {
        // Float(0).enc1 is crate::key's float key, which refines f32_key /
        // f64_key (NaNs last, among themselves by their bits).
        let xs = [f32::NEG_INFINITY, -1.5, -0.0, 0.0, 1e-30, 2.0, f32::INFINITY, f32::NAN, -f32::NAN];
        for x in xs {
            for y in xs {
                let (kx, ky) = (Float(0).enc1(x.to_bits()), Float(0).enc1(y.to_bits()));
                if crate::f32_key(x) < crate::f32_key(y) {
                    assert!(kx < ky, "{x} {y}");
                }
            }
        }
        let nan = Float(0).enc1(f64::NAN.to_bits());
        assert!(nan > Float(0).enc1(f64::INFINITY.to_bits()));
        assert!(Float(0).enc1((-f64::NAN).to_bits()) > Float(0).enc1(f64::INFINITY.to_bits()));
        assert!(Float(0).enc1((-0.0f64).to_bits()) < Float(0).enc1(0.0f64.to_bits()));
    }
}
