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
//! | `f32`, `f64` | [`f32_key`] / [`f64_key`]: total order, NaNs last |
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

use crate::{f32_key, f64_key};

/// A number format's item with its normalised unsigned key.
pub trait NumKey: Element {
    /// The unsigned key type.
    type Key: Ord + Copy + Send + Sync + Not<Output = Self::Key> + Into<u64>;
    /// The key: unsigned order equals the format's order.
    fn key(self) -> Self::Key;
    /// For a 32-bit integer whose key in the order `rev` (descending when
    /// true) is its bits XOR a constant: that constant, the `flip` of the
    /// AVX-512 sort and merge kernels. `None` for the other formats.
    fn flip32(_rev: bool) -> Option<u32> {
        None
    }
}

impl NumKey for u32 {
    type Key = u32;
    #[inline]
    fn key(self) -> u32 {
        self
    }
    fn flip32(rev: bool) -> Option<u32> {
        Some(if rev { !0 } else { 0 })
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
    fn flip32(rev: bool) -> Option<u32> {
        Some(if rev { !(1 << 31) } else { 1 << 31 })
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
    #[inline]
    fn key(self) -> u32 {
        f32_key(self)
    }
}

impl NumKey for f64 {
    type Key = u64;
    #[inline]
    fn key(self) -> u64 {
        f64_key(self)
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

        #[test]
        fn prefix_then_full_key_is_bytewise(a in prop::collection::vec(any::<u8>(), 0..12),
                                            b in prop::collection::vec(any::<u8>(), 0..12)) {
            let o = prefix(&a).cmp(&prefix(&b)).then_with(|| a.cmp(&b));
            prop_assert_eq!(o, a.cmp(&b));
        }
    }
}
