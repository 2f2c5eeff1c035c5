//! Normalised sort keys: numbers as unsigned integers whose order is the
//! format's order.
//!
//! Sorting by an unsigned key lets one comparison (or a radix pass) serve
//! every number format:
//!
//! | format | key |
//! |---|---|
//! | `u32`, `u64` | the value itself |
//! | `i32`, `i64` | the bits with the sign bit flipped (−2³¹ → 0, −1 → 2³¹ − 1, 0 → 2³¹) |
//! | `f32`, `f64` | the total order, NaNs last: [`f32_key`] / [`f64_key`] rotated so that NaNs keep their bits (among themselves in the order of their keys' bits) |
//!
//! Every key is a bijection of the item's bits: equal keys are equal items,
//! so every sort and merge of a format, at every SIMD level, writes the
//! same bytes. (A float's key orders like [`f32_key`] / [`f64_key`], where
//! all NaNs are equal, and refines it: negative numbers' bits complemented,
//! positive numbers' sign bit set, then the mantissa's all-ones subtracted,
//! which wraps the NaNs with the sign bit, the lowest keys, round to the
//! top, above +∞ and the positive NaNs.)
//!
//! Descending order complements the key (`!key`), so NaNs come first, as
//! the exact reverse of the ascending order.
//!
//! Records and lines are sorted by an index of 8-byte big-endian key
//! *prefixes* ([`prefix`]) with ties broken on the full key.
//!
//! ```
//! use emsort_sort::key::NumKey;
//! assert!((-1i32).key() < 0i32.key());
//! assert!(f64::NAN.key() > f64::INFINITY.key());
//! assert!((-0.0f32).key() < 0.0f32.key());
//! ```

use std::ops::Not;

use emsort_io::Element;

#[cfg(doc)]
use crate::{f32_key, f64_key};

/// A number format's item with its normalised unsigned key.
pub trait NumKey: Element {
    /// The unsigned key type.
    type Key: Ord + Copy + Send + Sync + Not<Output = Self::Key> + Into<u64>;
    /// The key: unsigned order equals the format's order.
    fn key(self) -> Self::Key;
    /// Whether the format is a float (its key is not the bits XOR a
    /// constant): which of the SIMD kernels' codecs serves it.
    const FLOAT: bool = false;
}

impl NumKey for u32 {
    type Key = u32;
    #[inline]
    fn key(self) -> u32 {
        self
    }
}

impl NumKey for u64 {
    type Key = u64;
    #[inline]
    fn key(self) -> u64 {
        self
    }
}

impl NumKey for i32 {
    type Key = u32;
    #[inline]
    fn key(self) -> u32 {
        (self as u32) ^ (1 << 31)
    }
}

impl NumKey for i64 {
    type Key = u64;
    #[inline]
    fn key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
}

impl NumKey for f32 {
    type Key = u32;
    const FLOAT: bool = true;
    #[inline]
    fn key(self) -> u32 {
        let b = self.to_bits();
        let z = if b >> 31 == 1 { !b } else { b | (1 << 31) };
        z.wrapping_sub((1 << 23) - 1)
    }
}

impl NumKey for f64 {
    type Key = u64;
    const FLOAT: bool = true;
    #[inline]
    fn key(self) -> u64 {
        let b = self.to_bits();
        let z = if b >> 63 == 1 { !b } else { b | (1 << 63) };
        z.wrapping_sub((1 << 52) - 1)
    }
}

/// The key in ascending (`REV` false) or descending (`REV` true) order.
#[inline]
pub fn ordered_key<T: NumKey, const REV: bool>(x: T) -> T::Key {
    if REV {
        !x.key()
    } else {
        x.key()
    }
}

/// What the bits of an item of `T` are XORed with to give the SIMD
/// kernels' keys in the order `rev` (descending when true), after the
/// float transform for floats: the key of the zero bits for integers (the
/// sign bit for i32 and i64), all ones for descending order.
pub(crate) fn bits_flip<T: NumKey>(rev: bool) -> u64 {
    let all = u64::MAX >> (64 - 8 * std::mem::size_of::<T>());
    let int = if T::FLOAT { 0 } else { T::zeroed().key().into() };
    int ^ if rev { all } else { 0 }
}

/// The first 8 bytes of `key` as a big-endian integer, padded with zeros:
/// comparing prefixes, then the full keys on a tie, is bytewise comparison.
#[inline]
pub fn prefix(key: &[u8]) -> u64 {
    if key.len() >= 8 {
        u64::from_be_bytes(key[..8].try_into().expect("8 bytes"))
    } else {
        let mut b = [0u8; 8];
        b[..key.len()].copy_from_slice(key);
        u64::from_be_bytes(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn keys_order_like_the_numbers(a: i64, b: i64, x: f64, y: f64) {
            prop_assert_eq!(a.cmp(&b), a.key().cmp(&b.key()));
            prop_assert_eq!((a as i32).cmp(&(b as i32)), (a as i32).key().cmp(&(b as i32).key()));
            if !x.is_nan() && !y.is_nan() {
                prop_assert_eq!(x.total_cmp(&y), x.key().cmp(&y.key()));
            }
            prop_assert_eq!(ordered_key::<i64, true>(a).cmp(&ordered_key::<i64, true>(b)), b.cmp(&a));
        }

        /// Float keys refine f32_key / f64_key (which make all NaNs equal)
        /// and are bijections of the bits.
        #[test]
        fn float_keys_refine_the_total_order(a: u64, b: u64, narrow: bool) {
            if narrow {
                let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
                if crate::f32_key(x) != crate::f32_key(y) {
                    prop_assert_eq!(x.key().cmp(&y.key()), crate::f32_key(x).cmp(&crate::f32_key(y)));
                }
                prop_assert_eq!(x.key() == y.key(), a as u32 == b as u32);
            } else {
                let (x, y) = (f64::from_bits(a), f64::from_bits(b));
                if crate::f64_key(x) != crate::f64_key(y) {
                    prop_assert_eq!(x.key().cmp(&y.key()), crate::f64_key(x).cmp(&crate::f64_key(y)));
                }
                prop_assert_eq!(x.key() == y.key(), a == b);
            }
        }

        #[test]
        fn prefix_then_full_key_is_bytewise(a in prop::collection::vec(any::<u8>(), 0..12),
                                            b in prop::collection::vec(any::<u8>(), 0..12)) {
            let o = prefix(&a).cmp(&prefix(&b)).then_with(|| a.cmp(&b));
            prop_assert_eq!(o, a.cmp(&b));
        }
    }

    #[test]
    fn float_keys_put_nans_of_both_signs_last() {
        for nan in [f64::NAN, -f64::NAN, f64::from_bits(0x7FF0_0000_0000_0001), f64::from_bits(!0)] {
            assert!(nan.key() > f64::INFINITY.key());
        }
        assert!((-f32::NAN).key() > f32::INFINITY.key() && f32::NAN.key() > f32::INFINITY.key());
        assert_eq!(f32::NEG_INFINITY.key(), 0);
        assert!((-0.0f64).key() < 0.0f64.key());
    }
}
