//! A loser tree over packed integer keys, for merging numbers.
//!
//! A general loser tree keeps `Option`
//! heads and calls a comparison closure twice per match: on random data every
//! match is a branch the CPU cannot predict. Numbers have unsigned keys
//! ([`crate::key`]), so each head packs into one integer,
//! `key << 32 | source` ([`Packed`]); an exhausted source is the all-ones
//! value, larger than any real head (whose source index is small). A match
//! is then a single integer comparison, compiled to conditional moves:
//!
//! ```text
//!   node:  lo, hi = min(loser, up), max(loser, up);  loser = hi;  up = lo
//! ```
//!
//! Ties go to the lower source index (it is in the low bits), as in the
//! general tree. The values themselves stay in the caller's array of heads.

/// A key packed with its source index: `key << 32 | source` in a `u64`
/// for 32-bit keys, in a `u128` for 64-bit keys.
pub(crate) trait Packed: Copy + Ord {
    /// The key type.
    type Key;
    /// The exhausted marker (all ones).
    const DONE: Self;
    /// Packs `key` with `source`.
    fn pack(key: Self::Key, source: usize) -> Self;
    /// The source index.
    fn source(self) -> usize;
}

impl Packed for u64 {
    type Key = u32;
    const DONE: u64 = u64::MAX;
    #[inline]
    fn pack(key: u32, source: usize) -> u64 {
        (key as u64) << 32 | source as u64
    }
    #[inline]
    fn source(self) -> usize {
        self as u32 as usize
    }
}

impl Packed for u128 {
    type Key = u64;
    const DONE: u128 = u128::MAX;
    #[inline]
    fn pack(key: u64, source: usize) -> u128 {
        (key as u128) << 64 | source as u128
    }
    #[inline]
    fn source(self) -> usize {
        self as u64 as usize
    }
}

/// A loser tree over `k` sources' packed heads.
pub(crate) struct KeyTree<P: Packed> {
    /// `tree[1..k]`: the loser of each internal node; leaves sit at k..2k.
    tree: Vec<P>,
    winner: P,
    k: usize,
}

impl<P: Packed> KeyTree<P> {
    /// Builds the tree from each source's first head (`P::DONE` when empty).
    pub fn new(heads: &[P]) -> KeyTree<P> {
        let k = heads.len();
        let mut tree = vec![P::DONE; k.max(1)];
        let mut up = vec![P::DONE; 2 * k.max(1)];
        up[k..2 * k].copy_from_slice(heads);
        for n in (1..k).rev() {
            let (a, b) = (up[2 * n], up[2 * n + 1]);
            up[n] = a.min(b);
            tree[n] = a.max(b);
        }
        let winner = match k {
            0 => P::DONE,
            1 => heads[0],
            _ => up[1],
        };
        KeyTree { tree, winner, k }
    }

    /// The smallest head, `None` when every source is exhausted.
    #[inline]
    pub fn winner(&self) -> Option<P> {
        (self.winner != P::DONE).then_some(self.winner)
    }

    /// Replaces the winner's head with `next` (of the same source, or
    /// `P::DONE`) and replays its path to the root.
    #[inline]
    pub fn replace_winner(&mut self, next: P) {
        let mut up = next;
        let mut node = (self.winner.source() + self.k) / 2;
        while node > 0 {
            let l = self.tree[node];
            let (lo, hi) = if l < up { (l, up) } else { (up, l) };
            self.tree[node] = hi;
            up = lo;
            node /= 2;
        }
        self.winner = up;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merges_like_a_sort(mut runs in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..30), 0..12)) {
            runs.iter_mut().for_each(|r| r.sort());
            let mut pos = vec![0usize; runs.len()];
            let head = |r: &Vec<u32>, i: usize, s: usize| r.get(i).map_or(u64::DONE, |&x| u64::pack(x, s));
            let heads: Vec<u64> = runs.iter().enumerate().map(|(s, r)| head(r, 0, s)).collect();
            let mut t = KeyTree::new(&heads);
            let mut out = vec![];
            while let Some(w) = t.winner() {
                let s = w.source();
                out.push((runs[s][pos[s]], s));
                pos[s] += 1;
                t.replace_winner(head(&runs[s], pos[s], s));
            }
            let mut expect: Vec<(u32, usize)> =
                runs.iter().enumerate().flat_map(|(s, r)| r.iter().map(move |&x| (x, s))).collect();
            expect.sort();
            prop_assert_eq!(out, expect);
        }
    }

    #[test]
    fn wide_keys_and_the_largest_key() {
        let heads = [u128::pack(u64::MAX, 0), u128::pack(0, 1), u128::DONE];
        let mut t = KeyTree::new(&heads);
        assert_eq!(t.winner().map(|w| w.source()), Some(1));
        t.replace_winner(u128::DONE);
        assert_eq!(t.winner().map(|w| w.source()), Some(0));
        t.replace_winner(u128::DONE);
        assert_eq!(t.winner(), None);
    }
}
