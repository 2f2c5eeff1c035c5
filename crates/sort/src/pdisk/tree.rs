//! A loser tree whose matches are decided by the caller.
//!
//! The merges of this module keep their heads (items, placeholder heads,
//! forecasting keys) in their own structures, which change between
//! matches; the tree keeps only indices and asks `beats(a, b)` — "source
//! a's head goes before source b's" — when it replays a path, so the heads
//! can be borrowed afresh each time. `beats` must be a strict total order (ties broken by
//! the index).

/// A loser tree over `k` sources.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// `tree[0]`: the winner; `tree[1..k]`: the loser of each internal node.
    tree: Vec<usize>,
    k: usize,
}

impl Tree {
    /// Builds the tree over sources `0..k`.
    pub fn new(k: usize, beats: impl Fn(usize, usize) -> bool) -> Tree {
        let mut tree = vec![0usize; k.max(1)];
        if k > 1 {
            let mut up = vec![0usize; 2 * k];
            for (i, u) in up[k..].iter_mut().enumerate() {
                *u = i;
            }
            for n in (1..k).rev() {
                let (a, b) = (up[2 * n], up[2 * n + 1]);
                let (w, l) = if beats(b, a) { (b, a) } else { (a, b) };
                up[n] = w;
                tree[n] = l;
            }
            tree[0] = up[1];
        }
        Tree { tree, k }
    }

    /// The source whose head goes first.
    #[inline]
    pub fn winner(&self) -> usize {
        self.tree[0]
    }

    /// Replays the path of source `s` (the winner) after its head changed.
    #[inline]
    pub fn replay(&mut self, s: usize, beats: impl Fn(usize, usize) -> bool) {
        let mut winner = s;
        let mut node = (s + self.k) / 2;
        while node > 0 {
            let l = self.tree[node];
            if beats(l, winner) {
                self.tree[node] = winner;
                winner = l;
            }
            node /= 2;
        }
        self.tree[0] = winner;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merges_like_a_stable_sort(mut runs in prop::collection::vec(prop::collection::vec(0u32..20, 0..30), 1..12)) {
            runs.iter_mut().for_each(|r| r.sort());
            let mut pos = vec![0usize; runs.len()];
            let head = |pos: &[usize], s: usize| runs[s].get(pos[s]).copied().unwrap_or(u32::MAX);
            let beats = |pos: &[usize], a: usize, b: usize| (head(pos, a), a) < (head(pos, b), b);
            let mut t = Tree::new(runs.len(), |a, b| beats(&pos, a, b));
            let mut out = vec![];
            loop {
                let w = t.winner();
                if pos[w] >= runs[w].len() {
                    break;
                }
                out.push((runs[w][pos[w]], w));
                pos[w] += 1;
                t.replay(w, |a, b| beats(&pos, a, b));
            }
            let mut expect: Vec<(u32, usize)> =
                runs.iter().enumerate().flat_map(|(s, r)| r.iter().map(move |&x| (x, s))).collect();
            expect.sort();
            prop_assert_eq!(out, expect);
        }
    }
}
