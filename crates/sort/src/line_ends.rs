//! Where lines end: every position of the terminator byte in a slice,
//! found 64 bytes at a time.
//!
//! `memchr::memchr_iter` is built for matches that are far apart: each
//! match restarts its vector search, which costs more than the search when
//! lines are tens of bytes long. Profiled on 1 GiB of text lines (55 bytes
//! on average, `bench/results/2026-11-26-profile`), its `find_raw` was
//! about 15 % of the sort's CPU time, spread over run formation's line
//! count and index and the merge's line splitting. Here each 64-byte
//! block is compared once into a bit mask (SSE2, part of every x86-64
//! CPU; a plain loop elsewhere, which compilers vectorise), and the matches
//! are its set bits, taken lowest first: a few instructions per line.

/// The bit mask of the bytes of `block` (at most 64) equal to `eol`: bit
/// `i` set when `block[i] == eol`.
#[inline]
pub(crate) fn mask(block: &[u8], eol: u8) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if block.len() == 64 {
        // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned
        // 16-byte loads read `block[0..64]`, which exists.
        unsafe {
            use std::arch::x86_64::*;
            let needle = _mm_set1_epi8(eol as i8);
            let p = block.as_ptr();
            let m = |i: usize| {
                let v = _mm_loadu_si128(p.add(16 * i).cast());
                (_mm_movemask_epi8(_mm_cmpeq_epi8(v, needle)) as u32 as u64) << (16 * i)
            };
            return m(0) | m(1) | m(2) | m(3);
        }
    }
    let mut m = 0u64;
    for (i, &b) in block.iter().enumerate().take(64) {
        m |= u64::from(b == eol) << i;
    }
    m
}

/// The positions of `eol` in a slice, in order (see [`line_ends`]).
#[derive(Debug, Clone)]
pub(crate) struct LineEnds<'a> {
    text: &'a [u8],
    eol: u8,
    /// Where the block of `bits` starts.
    block: usize,
    /// The matches of that block not yet returned.
    bits: u64,
}

/// Calls `f` on the position of each `eol` byte in `text`, in order,
/// until it returns false.
#[inline]
pub(crate) fn each_line_end(text: &[u8], eol: u8, mut f: impl FnMut(usize) -> bool) {
    for p in line_ends(text, eol) {
        if !f(p) {
            break;
        }
    }
}

/// The positions of every `eol` byte in `text`, in order: the same as
/// `memchr::memchr_iter(eol, text)`, faster when lines are short.
#[inline]
pub(crate) fn line_ends(text: &[u8], eol: u8) -> LineEnds<'_> {
    let first = &text[..text.len().min(64)];
    LineEnds { text, eol, block: 0, bits: mask(first, eol) }
}

impl Iterator for LineEnds<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.block += 64;
            if self.block >= self.text.len() {
                return None;
            }
            let end = self.text.len().min(self.block + 64);
            self.bits = mask(&self.text[self.block..end], self.eol);
        }
        let at = self.block + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(at)
    }
}

/// The position of the first `eol` in `text`: `memchr::memchr` for a
/// terminator that is usually within the first 64 bytes.
#[inline]
pub(crate) fn first_end(text: &[u8], eol: u8) -> Option<usize> {
    line_ends(text, eol).next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every position memchr finds, in order, and nothing else, for
        /// any bytes (terminators dense, sparse, at block edges, absent)
        /// and any start within an allocation (unaligned loads).
        #[test]
        fn finds_what_memchr_finds(
            text in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(0u8), any::<u8>()], 0..400),
            skip in 0usize..70,
            eol in prop_oneof![Just(b'\n'), Just(0u8)],
        ) {
            let t = &text[skip.min(text.len())..];
            let ours: Vec<usize> = line_ends(t, eol).collect();
            let theirs: Vec<usize> = memchr::memchr_iter(eol, t).collect();
            prop_assert_eq!(&ours, &theirs);
            prop_assert_eq!(first_end(t, eol), memchr::memchr(eol, t));
        }
    }

    #[test]
    fn block_edges_and_the_tail() {
        let mut t = vec![b'a'; 200];
        for p in [0, 63, 64, 127, 128, 191, 199] {
            t[p] = b'\n';
        }
        assert_eq!(line_ends(&t, b'\n').collect::<Vec<_>>(), [0, 63, 64, 127, 128, 191, 199]);
        assert_eq!(line_ends(&t[1..], b'\n').collect::<Vec<_>>(), [62, 63, 126, 127, 190, 198]);
        assert_eq!(line_ends(&[], b'\n').next(), None);
        assert_eq!(line_ends(&[b'\n'; 64], b'\n').count(), 64);
        assert_eq!(first_end(b"abc", b'\n'), None);
    }
}
