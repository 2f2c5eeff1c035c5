//! The tournament tree of every merge: a loser tree over k sources.
//!
//! Each source offers one *entry* for its head; the tree keeps the loser
//! of every match at its internal nodes and the overall winner apart, so
//! replacing the winner's entry replays one path of ⌈log₂ k⌉ matches.
//! Who wins a match is the caller's `beats(a, b)` ("entry a goes before
//! entry b"), a strict order with ties broken by the source; the tree
//! itself never looks inside an entry. The merges choose their entries:
//!
//! - numbers ([`crate::multiway`] at the scalar SIMD level): the key packed
//!   with its source ([`Packed`], `key << 32 | source`, or 64 for 64-bit keys), so a match is one
//!   integer comparison; an exhausted source is all ones;
//! - records and lines ([`crate::merge_items`]): `(prefix, second, third, source)`,
//!   integer comparisons first and the full order only when they tie;
//! - DSM and SRM ([`crate::pdisk`]) and SRM's forecasting heap: the
//!   source index itself, `beats` reading the heads the merge keeps.
//!
//! A match stores both outcomes without a branch on who won (`lo, hi =
//! if beats(l, up) { (l, up) } else { (up, l) }`), which compiles to
//! conditional moves where the comparison is cheap: on random data the
//! winner of a match is a branch no CPU predicts.

/// A loser tree over `k` sources' entries of type `E`.
#[derive(Debug, Clone)]
pub(crate) struct LoserTree<E> {
    /// `tree[1..k]`: the loser of each internal node; leaves sit at k..2k.
    tree: Vec<E>,
    winner: E,
    k: usize,
}

impl<E: Copy> LoserTree<E> {
    /// Builds the tree from each source's first entry (`leaves[s]` for
    /// source s); `none` is the winner when there is no source.
    pub fn new(leaves: &[E], none: E, beats: impl Fn(E, E) -> bool) -> LoserTree<E> {
        let k = leaves.len();
        let mut tree = vec![none; k.max(1)];
        let mut up = vec![none; 2 * k.max(1)];
        up[k..2 * k].copy_from_slice(leaves);
        for n in (1..k).rev() {
            let (a, b) = (up[2 * n], up[2 * n + 1]);
            let (w, l) = if beats(b, a) { (b, a) } else { (a, b) };
            up[n] = w;
            tree[n] = l;
        }
        // With one source, up[1] is its leaf; with none, `none`.
        LoserTree { tree, winner: up[1], k }
    }

    /// The entry that goes first.
    #[inline]
    pub fn winner(&self) -> E {
        self.winner
    }

    /// Replaces the winner's entry — the winner came from source `s` — with
    /// `next` (the source's next head, or its exhausted mark) and replays
    /// the source's path to the root.
    #[inline]
    pub fn replace(&mut self, s: usize, next: E, beats: impl Fn(E, E) -> bool) {
        let mut up = next;
        let mut node = (s + self.k) / 2;
        while node > 0 {
            let l = self.tree[node];
            let (lo, hi) = if beats(l, up) { (l, up) } else { (up, l) };
            self.tree[node] = hi;
            up = lo;
            node /= 2;
        }
        self.winner = up;
    }
}

/// A number's key packed with its source index, the entry of a merge of
/// numbers: `key << 32 | source` in a `u64` for 32-bit keys, `key << 64 | source` in a `u128`
/// for 64-bit keys. Unsigned order is the merge's order, ties going to the
/// lower source; [`Packed::DONE`] (all ones) loses to every head.
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

/// Writes the [`Packed`] impl of each `$p`: a key of `$k` in its high half,
/// the source in its low half.
macro_rules! packed {
    ($($p:ty: $k:ty),*) => {$(
        impl Packed for $p {
            type Key = $k;
            const DONE: $p = <$p>::MAX;
            #[inline]
            fn pack(key: $k, source: usize) -> $p {
                (key as $p) << <$k>::BITS | source as $p
            }
            #[inline]
            fn source(self) -> usize {
                self as $k as usize
            }
        }
    )*};
}

packed!(u64: u32, u128: u64);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Packed keys merge like a sort of (key, source).
        #[test]
        fn packed_keys_merge_like_a_sort(mut runs in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..30), 0..12)) {
            runs.iter_mut().for_each(|r| r.sort());
            let mut pos = vec![0usize; runs.len()];
            let head = |r: &Vec<u32>, i: usize, s: usize| r.get(i).map_or(u64::DONE, |&x| u64::pack(x, s));
            let heads: Vec<u64> = runs.iter().enumerate().map(|(s, r)| head(r, 0, s)).collect();
            let mut t = LoserTree::new(&heads, u64::DONE, |a, b| a < b);
            let mut out = vec![];
            while t.winner() != u64::DONE {
                let s = t.winner().source();
                out.push((runs[s][pos[s]], s));
                pos[s] += 1;
                t.replace(s, head(&runs[s], pos[s], s), |a, b| a < b);
            }
            let mut expect: Vec<(u32, usize)> =
                runs.iter().enumerate().flat_map(|(s, r)| r.iter().map(move |&x| (x, s))).collect();
            expect.sort();
            prop_assert_eq!(out, expect);
        }

        /// Source indices whose heads the caller keeps merge like a stable
        /// sort when `beats` breaks ties by the index.
        #[test]
        fn indices_merge_like_a_stable_sort(mut runs in prop::collection::vec(prop::collection::vec(0u32..20, 0..30), 1..12)) {
            runs.iter_mut().for_each(|r| r.sort());
            let mut pos = vec![0usize; runs.len()];
            let head = |pos: &[usize], s: usize| runs[s].get(pos[s]).copied().unwrap_or(u32::MAX);
            let beats = |pos: &[usize], a: usize, b: usize| (head(pos, a), a) < (head(pos, b), b);
            let sources: Vec<usize> = (0..runs.len()).collect();
            let mut t = LoserTree::new(&sources, 0, |a, b| beats(&pos, a, b));
            let mut out = vec![];
            loop {
                let w = t.winner();
                if pos[w] >= runs[w].len() {
                    break;
                }
                out.push((runs[w][pos[w]], w));
                pos[w] += 1;
                t.replace(w, w, |a, b| beats(&pos, a, b));
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
        let mut t = LoserTree::new(&heads, u128::DONE, |a, b| a < b);
        assert_eq!(t.winner().source(), 1);
        t.replace(1, u128::DONE, |a, b| a < b);
        assert_eq!(t.winner().source(), 0);
        t.replace(0, u128::DONE, |a, b| a < b);
        assert_eq!(t.winner(), u128::DONE);
    }
}
