//! A loser tree (tournament tree) for k-way merging.
//!
//! ```text
//!                 [winner]            tree[0]: index of the overall winner
//!                  loser              tree[1]
//!             loser      loser        tree[2], tree[3]
//!   leaves:  s0   s1    s2   s3       the current head of each source
//! ```
//!
//! Each internal node keeps the *loser* of the match played there; the
//! winner moves up. After the winner's source yields its next item, only the
//! matches on that leaf's path to the root are replayed: ⌈log₂ k⌉
//! comparisons per item, against 2·log₂ k for a binary heap's sift-down,
//! and no comparison of two siblings that both lost earlier. An exhausted
//! source holds `None`, which loses to everything. Ties go to the lower
//! source index, so merging runs in creation order is stable.

/// A loser tree over `k` sources whose heads are of type `T`.
#[derive(Debug, Clone)]
pub struct LoserTree<T, F> {
    /// `tree[0]` is the winner; `tree[1..k]` the losers of the internal nodes.
    tree: Vec<usize>,
    heads: Vec<Option<T>>,
    cmp: F,
}

impl<T, F: Fn(&T, &T) -> std::cmp::Ordering> LoserTree<T, F> {
    /// Builds the tree from each source's first item (`None` for an empty
    /// source) and their order (one call per match).
    pub fn new(heads: Vec<Option<T>>, cmp: F) -> Self {
        let k = heads.len();
        let mut t = LoserTree { tree: vec![usize::MAX; k.max(1)], heads, cmp };
        if k > 0 {
            // Build bottom-up: winners[n] for every node n of the implicit
            // tree whose leaves sit at k..2k.
            let mut winners = vec![0usize; 2 * k];
            for i in 0..k {
                winners[k + i] = i;
            }
            for n in (1..k).rev() {
                let (a, b) = (winners[2 * n], winners[2 * n + 1]);
                let (w, l) = if t.beats(b, a) { (b, a) } else { (a, b) };
                winners[n] = w;
                t.tree[n] = l;
            }
            t.tree[0] = if k == 1 { 0 } else { winners[1] };
        }
        t
    }

    /// Whether source `a`'s head beats source `b`'s (smaller; ties to the
    /// lower index; `None` loses).
    #[inline]
    fn beats(&self, a: usize, b: usize) -> bool {
        match (&self.heads[a], &self.heads[b]) {
            (Some(x), Some(y)) => (self.cmp)(x, y).then(a.cmp(&b)).is_lt(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => a < b,
        }
    }

    /// Number of sources.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether the tree has no sources.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The source holding the smallest head, or `None` when all are exhausted.
    #[inline]
    pub fn winner(&self) -> Option<usize> {
        let w = *self.tree.first()?;
        if w == usize::MAX || self.heads[w].is_none() {
            None
        } else {
            Some(w)
        }
    }

    /// The smallest head.
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.winner().and_then(|w| self.heads[w].as_ref())
    }

    /// Replaces the winner's head with its source's next item (`None` when
    /// the source is exhausted) and replays the winner's path; returns the
    /// old head.
    #[inline]
    pub fn replace_winner(&mut self, next: Option<T>) -> Option<T> {
        let k = self.heads.len();
        let w = self.winner()?;
        let old = std::mem::replace(&mut self.heads[w], next);
        let mut winner = w;
        let mut node = (w + k) / 2;
        while node > 0 {
            let l = self.tree[node];
            if self.beats(l, winner) {
                self.tree[node] = winner;
                winner = l;
            }
            node /= 2;
        }
        self.tree[0] = winner;
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn merge(runs: Vec<Vec<u32>>) -> Vec<(u32, usize)> {
        let mut iters: Vec<_> = runs.into_iter().map(|r| r.into_iter()).collect();
        let heads = iters.iter_mut().map(|i| i.next()).collect();
        let mut t = LoserTree::new(heads, |a: &u32, b: &u32| a.cmp(b));
        let mut out = vec![];
        while let Some(w) = t.winner() {
            let next = iters[w].next();
            out.push((t.replace_winner(next).unwrap(), w));
        }
        out
    }

    proptest! {
        #[test]
        fn merges_like_a_stable_sort(mut runs in prop::collection::vec(prop::collection::vec(0u32..50, 0..40), 0..20)) {
            runs.iter_mut().for_each(|r| r.sort());
            let mut expect: Vec<(u32, usize)> =
                runs.iter().enumerate().flat_map(|(i, r)| r.iter().map(move |&x| (x, i))).collect();
            expect.sort(); // by value, then source index: the stable merge order
            prop_assert_eq!(merge(runs), expect);
        }
    }

    #[test]
    fn empty_and_single() {
        assert!(merge(vec![]).is_empty());
        assert!(merge(vec![vec![], vec![]]).is_empty());
        assert_eq!(merge(vec![vec![1, 2]]), vec![(1, 0), (2, 0)]);
    }
}
