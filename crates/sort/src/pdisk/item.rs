//! Items of every format as the parallel-disk merges see them: where an
//! item ends in a block, its ordered 64-bit prefix, its full key, and its
//! forecasting key's encoding.
//!
//! Order of two items: their prefixes ([`ItemFormat::item_prefix`], the
//! descending order already applied), then, for records and lines whose
//! prefixes tie, their key bytes ([`ItemFormat::cmp_keys`]), then the run
//! index (as the loser trees of the crate break ties).
//!
//! A forecasting key ([`ItemFormat::encode_key`]) is stored as bytes:
//! numbers as the 8-byte big-endian ordered key, records as their key
//! field, lines as the line without its terminator (`\n`, or NUL under
//! `-z`: [`ItemFormat::with_eol`]). The prefix and the key bytes
//! of an encoded key ([`ItemFormat::key_prefix`]) compare exactly as the
//! item's own, so a placeholder head made of a forecasting key sorts where
//! the item itself will.

use std::cmp::Ordering;

use crate::key::prefix;
use crate::Format;

/// How numbers turn into their ordered key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Num(Num, usize),
    Rec { size: usize, k0: usize, k1: usize },
    Lines,
}

/// A format and its direction, for the merges of [`super`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ItemFormat {
    kind: Kind,
    /// All ones when descending: prefixes are complemented.
    mask: u64,
    reverse: bool,
    /// The byte that ends a line (lines only).
    eol: u8,
}

impl ItemFormat {
    /// The merge's view of `format` in ascending or descending order.
    pub fn new(format: Format, reverse: bool) -> ItemFormat {
        let kind = match format {
            Format::U32 => Kind::Num(Num::U32, 4),
            Format::I32 => Kind::Num(Num::I32, 4),
            Format::F32 => Kind::Num(Num::F32, 4),
            Format::U64 => Kind::Num(Num::U64, 8),
            Format::I64 => Kind::Num(Num::I64, 8),
            Format::F64 => Kind::Num(Num::F64, 8),
            Format::Rec(r) => Kind::Rec { size: r.size, k0: r.key_offset, k1: r.key_offset + r.key_len },
            Format::Lines => Kind::Lines,
        };
        ItemFormat { kind, mask: if reverse { u64::MAX } else { 0 }, reverse, eol: b'\n' }
    }

    /// The same format with lines ended by `eol` (default `\n`; NUL for
    /// `-z`, [`SortPlan::eol`](crate::SortPlan::eol)).
    pub fn with_eol(self, eol: u8) -> ItemFormat {
        ItemFormat { eol, ..self }
    }

    /// The byte that ends a line.
    #[inline]
    pub fn eol(&self) -> u8 {
        self.eol
    }

    /// The size of an item, `None` for lines.
    #[inline]
    pub fn fixed(&self) -> Option<usize> {
        match self.kind {
            Kind::Num(_, s) | Kind::Rec { size: s, .. } => Some(s),
            Kind::Lines => None,
        }
    }

    /// Whether equal prefixes must be settled on the key bytes (records
    /// and lines; a number's prefix is its whole key).
    #[inline]
    pub fn ties(&self) -> bool {
        !matches!(self.kind, Kind::Num(..))
    }

    /// The length of the item at the start of `data` when it is complete
    /// there (a line up to and with its terminator).
    #[inline]
    pub fn complete_len(&self, data: &[u8]) -> Option<usize> {
        match self.kind {
            Kind::Num(_, s) | Kind::Rec { size: s, .. } => (data.len() >= s).then_some(s),
            Kind::Lines => memchr::memchr(self.eol, data).map(|p| p + 1),
        }
    }

    /// The key bytes of a whole item (records: the key field; lines: the
    /// line without its terminator; numbers: the item).
    #[inline]
    pub fn item_key<'a>(&self, item: &'a [u8]) -> &'a [u8] {
        match self.kind {
            Kind::Num(..) => item,
            Kind::Rec { k0, k1, .. } => &item[k0..k1],
            Kind::Lines => &item[..item.len() - 1],
        }
    }

    /// The ordered prefix of a whole item: unsigned order is the sort's
    /// order (for numbers the whole key).
    #[inline]
    pub fn item_prefix(&self, item: &[u8]) -> u64 {
        let p = match self.kind {
            Kind::Num(n, _) => num_key(n, item),
            Kind::Rec { k0, k1, .. } => prefix(&item[k0..k1]),
            Kind::Lines => prefix(&item[..item.len() - 1]),
        };
        p ^ self.mask
    }

    /// Appends the forecasting key of a whole item to `out`.
    #[inline]
    pub fn encode_key(&self, item: &[u8], out: &mut Vec<u8>) {
        match self.kind {
            Kind::Num(..) => out.extend_from_slice(&self.item_prefix(item).to_be_bytes()),
            _ => out.extend_from_slice(self.item_key(item)),
        }
    }

    /// The length of every encoded key, `None` when they vary (lines).
    pub fn key_len(&self) -> Option<usize> {
        match self.kind {
            Kind::Num(..) => Some(8),
            Kind::Rec { k0, k1, .. } => Some(k1 - k0),
            Kind::Lines => None,
        }
    }

    /// The ordered prefix of an encoded forecasting key.
    #[inline]
    pub fn key_prefix(&self, key: &[u8]) -> u64 {
        match self.kind {
            Kind::Num(..) => u64::from_be_bytes(key[..8].try_into().expect("8-byte key")),
            _ => prefix(key) ^ self.mask,
        }
    }

    /// Compares key bytes (of items, [`ItemFormat::item_key`], or encoded
    /// keys, which are the same bytes for records and lines) in the sort's
    /// order.
    #[inline]
    pub fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.kind {
            Kind::Num(..) => Ordering::Equal,
            _ if self.reverse => b.cmp(a),
            _ => a.cmp(b),
        }
    }
}

/// The unsigned key of a number (see [`crate::key`]).
#[inline]
fn num_key(n: Num, item: &[u8]) -> u64 {
    use crate::key::NumKey;
    fn ne<const N: usize>(x: &[u8]) -> [u8; N] {
        x[..N].try_into().expect("item of the format's size")
    }
    match n {
        Num::U32 => u32::from_ne_bytes(ne(item)).key() as u64,
        Num::I32 => i32::from_ne_bytes(ne(item)).key() as u64,
        Num::F32 => f32::from_ne_bytes(ne(item)).key() as u64,
        Num::U64 => u64::from_ne_bytes(ne(item)).key(),
        Num::I64 => i64::from_ne_bytes(ne(item)).key(),
        Num::F64 => f64::from_ne_bytes(ne(item)).key(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Orders two items as the merge does (without the run index).
    fn cmp(f: &ItemFormat, a: &[u8], b: &[u8]) -> Ordering {
        f.item_prefix(a).cmp(&f.item_prefix(b)).then_with(|| f.cmp_keys(f.item_key(a), f.item_key(b)))
    }

    #[test]
    fn orders_like_the_format_and_keys_like_items() {
        for rev in [false, true] {
            let cases: Vec<(Format, Vec<Vec<u8>>)> = vec![
                (Format::I32, [-5i32, 0, 7].iter().map(|x| x.to_ne_bytes().to_vec()).collect()),
                (Format::F64, [-1.5f64, 0.0, f64::NAN].iter().map(|x| x.to_ne_bytes().to_vec()).collect()),
                ("rec:4:1:2".parse().unwrap(), vec![b"zaaz".to_vec(), b"aabz".to_vec(), b"abaa".to_vec()]),
                (Format::Lines, vec![b"\n".to_vec(), b"abcdefgh\n".to_vec(), b"abcdefgh\0\n".to_vec()]),
            ];
            for (format, items) in cases {
                let f = ItemFormat::new(format, rev);
                for a in &items {
                    assert_eq!(f.complete_len(a), Some(a.len()));
                    let mut k = Vec::new();
                    f.encode_key(a, &mut k);
                    assert_eq!(f.key_prefix(&k), f.item_prefix(a));
                    if f.ties() {
                        assert_eq!(k, f.item_key(a));
                    }
                    for b in &items {
                        let (x, y) = if format == Format::Lines {
                            (&a[..a.len() - 1], &b[..b.len() - 1])
                        } else {
                            (&a[..], &b[..])
                        };
                        let want = format.compare(x, y);
                        let want = if rev { want.reverse() } else { want };
                        assert_eq!(cmp(&f, a, b), want, "{format} rev {rev}");
                    }
                }
            }
        }
    }
}
