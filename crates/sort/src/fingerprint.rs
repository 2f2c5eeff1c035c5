//! An order-independent fingerprint of a multiset of items.
//!
//! [`Fingerprint`] adds up two independent 64-bit hashes of every item
//! (wrapping) and counts the items. Addition commutes, so any permutation of
//! the same items gives the same fingerprint, and it streams in constant
//! memory. Two different multisets collide only if both 64-bit sums collide
//! (≈ 2⁻¹²⁸ for non-adversarial data): good enough to check that a sort lost,
//! added or changed nothing.

/// Item count and two wrapping sums of item hashes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Number of items.
    pub count: u64,
    /// Sum of the first hash.
    pub sum_a: u64,
    /// Sum of the second hash.
    pub sum_b: u64,
}

const K0: u64 = 0x9E37_79B9_7F4A_7C15;
const K1: u64 = 0xC2B2_AE3D_27D4_EB4F;
const K2: u64 = 0x1656_67B1_9E37_79F9;

#[inline]
pub(crate) fn mix(mut z: u64) -> u64 {
    // splitmix64's finalizer.
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
fn hash(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K1);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        h = mix(h ^ w.wrapping_mul(K0)).wrapping_add(K2);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(w).wrapping_mul(K0) ^ 0xFF);
    }
    mix(h)
}

impl Fingerprint {
    /// Adds one item (its bytes; for `lines`, without the `\n`).
    #[inline(always)]
    pub fn add(&mut self, item: &[u8]) {
        self.count += 1;
        if item.len() <= 8 {
            // Fast path for numbers: one word, two independent finalizers.
            let w = match item.len() {
                8 => u64::from_le_bytes(item.try_into().unwrap()),
                4 => u32::from_le_bytes(item.try_into().unwrap()) as u64,
                n => {
                    let mut w = [0u8; 8];
                    w[..n].copy_from_slice(item);
                    u64::from_le_bytes(w)
                }
            };
            // The length goes into the top bits of one hash's word and the
            // low bits of the other's. In one place alone an 8-byte item,
            // which fills the word, meets a shorter one in both hashes
            // (`abcdefgx` and `abcdefg`: w ^ 8 << 59 == w' ^ 7 << 59); items
            // of different lengths cannot meet in both places, as
            // (n ^ n') << 59 ≠ n ^ n'.
            let n = item.len() as u64;
            let (xa, xb) = (w ^ (n << 59), w ^ n);
            self.sum_a = self.sum_a.wrapping_add(mix(xa.wrapping_mul(K0) ^ K1));
            self.sum_b = self.sum_b.wrapping_add(mix(xb.wrapping_add(K2).wrapping_mul(K1)));
        } else {
            self.sum_a = self.sum_a.wrapping_add(hash(item, K0));
            self.sum_b = self.sum_b.wrapping_add(hash(item, K1 ^ K2));
        }
    }

    /// Combines the fingerprints of two disjoint parts.
    pub fn merge(&mut self, o: &Fingerprint) {
        self.count += o.count;
        self.sum_a = self.sum_a.wrapping_add(o.sum_a);
        self.sum_b = self.sum_b.wrapping_add(o.sum_b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(items: &[&[u8]]) -> Fingerprint {
        let mut f = Fingerprint::default();
        items.iter().for_each(|i| f.add(i));
        f
    }

    #[test]
    fn order_independent_and_sensitive_to_content() {
        assert_eq!(fp(&[b"a", b"b", b"c"]), fp(&[b"c", b"a", b"b"]));
        assert_ne!(fp(&[b"a", b"b"]), fp(&[b"a", b"c"]));
        assert_ne!(fp(&[b"a", b"a"]), fp(&[b"a"]));
        assert_ne!(fp(&[b"a", b"a", b"b"]), fp(&[b"a", b"b", b"b"]));
        assert_ne!(fp(&[b""]), fp(&[b"\0"]));
        assert_ne!(fp(&[b"12345678"]), fp(&[b"12345678\0"]));
    }

    /// Found by `verify`'s fuzz test: an 8-byte item whose last byte is
    /// `(8 ^ n) << 3` had the fingerprint of its first n bytes (`abcdefgx`
    /// and `abcdefg`, 7 NULs and 7 NULs + `x`), in both hashes.
    #[test]
    fn lengths_do_not_alias_in_the_short_path() {
        assert_ne!(fp(&[b"abcdefgx"]), fp(&[b"abcdefg"]));
        assert_ne!(fp(&[b"\0\0\0\0\0\0\0x"]), fp(&[b"\0\0\0\0\0\0\0"]));
        let base = *b"\x01\x02\x03\x04\x05\x06\x07\x08";
        for n in 0..8 {
            for m in n + 1..=8 {
                // The longer item: the shorter one's bytes, then any bytes,
                // including the one that aliased.
                for last in [0u8, 0x40, 0x48, 0x50, 0x58, 0x60, 0x68, 0x70, 0x78, ((n ^ m) << 3) as u8] {
                    let mut long = base[..m].to_vec();
                    long[n..].fill(0);
                    long[m - 1] ^= last;
                    let (a, b) = (fp(&[&base[..n]]), fp(&[&long]));
                    assert!(a.sum_a != b.sum_a || a.sum_b != b.sum_b, "{:?} vs {:?}", &base[..n], long);
                }
            }
        }
    }
}
