//! Which runs to merge, and in what order: the merge schedule.
//!
//! Given the sizes of the U runs that run formation produced and the fan-in
//! d, a [`MergePolicy`] yields a list of merges; each takes up to d existing
//! runs and makes a new one, and the last merge makes the output.
//!
//! - **`fifo`** (the reference of the INFO-H-417 project reports): runs wait in a queue; take the first
//!   d, merge them, put the result at the back; repeat until one run is left.
//! - **`optimal`**: fewest bytes moved for this d. The first merge takes
//!   r = ((U − 2) mod (d − 1)) + 2 runs, so that every later merge is a full
//!   d-way merge, and every merge takes the *smallest* runs present (a d-ary
//!   Huffman tree). With equal runs it needs ⌈log_d U⌉ passes over the data,
//!   and never more than `fifo`.
//!
//! ```
//! use emsort_sort::merge_policy::{schedule, MergePolicy};
//! let s = schedule(&[10; 10], 4, MergePolicy::Optimal);
//! assert_eq!(s.merges.len(), 3);          // 10 runs, d = 4: 4 + 4 + 4 inputs
//! assert_eq!(s.merges[0].inputs.len(), 4); // (10 − 2) mod 3 + 2 = 4
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::method::cli_names;

/// How runs are chosen for each merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MergePolicy {
    /// The reports' queue: first d runs in, merged run to the back.
    Fifo,
    /// Smallest runs first, first merge sized so that every later merge is full.
    #[default]
    Optimal,
}

cli_names!(MergePolicy, "merge policy", "fifo or optimal", { Fifo => "fifo", Optimal => "optimal" });

/// One merge: input run ids → a new run id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// Ids of the runs merged (run formation's runs are 0..U, merges number
    /// their outputs U, U+1, … in schedule order).
    pub inputs: Vec<usize>,
    /// Id of the run this merge makes.
    pub output: usize,
    /// Size of the output (sum of the inputs' sizes).
    pub size: u64,
}

/// A merge schedule and what it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The merges in the order to run them.
    pub merges: Vec<Merge>,
    /// Total size merged (each merge's output size, summed): the data moved
    /// by the merge phase, in the units of the run sizes.
    pub merged: u64,
    /// Depth of the merge tree: the most merges any item goes through.
    pub levels: u32,
}

impl Schedule {
    /// Passes over the data counting run formation as the first:
    /// 1 + merged / total (fractional when some data is merged fewer times).
    pub fn passes(&self, total: u64) -> f64 {
        if total == 0 {
            return 1.0;
        }
        1.0 + self.merged as f64 / total as f64
    }
}

/// Plans the merges of runs of `sizes` with fan-in `d` (≥ 2).
pub fn schedule(sizes: &[u64], d: usize, policy: MergePolicy) -> Schedule {
    assert!(d >= 2, "fan-in must be at least 2");
    let u = sizes.len();
    let mut merges = Vec::new();
    let mut depth = vec![0u32; u];
    let mut next_id = u;
    let mut make = |inputs: Vec<usize>, size: u64, depth: &mut Vec<u32>, merges: &mut Vec<Merge>| {
        let lvl = inputs.iter().map(|&i| depth[i]).max().unwrap_or(0) + 1;
        depth.push(lvl);
        merges.push(Merge { inputs, output: next_id, size });
        next_id += 1;
        next_id - 1
    };
    match policy {
        MergePolicy::Fifo => {
            let mut q: VecDeque<(usize, u64)> = sizes.iter().copied().enumerate().collect();
            while q.len() > 1 {
                let take = d.min(q.len());
                let group: Vec<(usize, u64)> = q.drain(..take).collect();
                let size = group.iter().map(|g| g.1).sum();
                let id = make(group.iter().map(|g| g.0).collect(), size, &mut depth, &mut merges);
                q.push_back((id, size));
            }
        }
        MergePolicy::Optimal => {
            let mut h: BinaryHeap<Reverse<(u64, usize)>> =
                sizes.iter().enumerate().map(|(i, &s)| Reverse((s, i))).collect();
            let mut take = if u > 1 { (u - 2) % (d - 1) + 2 } else { 0 };
            while h.len() > 1 {
                let mut group: Vec<(u64, usize)> =
                    (0..take.min(h.len())).map(|_| h.pop().unwrap().0).collect();
                // Merge inputs in creation order, so equal items keep it.
                group.sort_by_key(|g| g.1);
                let size = group.iter().map(|g| g.0).sum();
                let id = make(group.iter().map(|g| g.1).collect(), size, &mut depth, &mut merges);
                h.push(Reverse((size, id)));
                take = d;
            }
        }
    }
    let merged = merges.iter().map(|m| m.size).sum();
    let levels = depth.iter().copied().max().unwrap_or(0);
    Schedule { merges, merged, levels }
}

/// Plans merges that only ever join *neighbouring* runs (in the input's
/// order), each merge listing its inputs in that order: equal items then
/// leave every merge in input order, which `sort -s` and `sort -u` need.
/// Each merge takes the consecutive runs of smallest total size, the first
/// r = ((U − 2) mod (d − 1)) + 2 of them and d after, as `optimal` does
/// without the neighbour rule.
pub fn schedule_in_order(sizes: &[u64], d: usize) -> Schedule {
    assert!(d >= 2, "fan-in must be at least 2");
    let u = sizes.len();
    let mut merges = Vec::new();
    let mut depth = vec![0u32; u];
    // The runs present, in input order: (id, size).
    let mut row: Vec<(usize, u64)> = sizes.iter().copied().enumerate().collect();
    let mut take = if u > 1 { (u - 2) % (d - 1) + 2 } else { 0 };
    while row.len() > 1 {
        let k = take.min(row.len());
        let sums = row.windows(k).map(|w| w.iter().map(|r| r.1).sum::<u64>());
        let (at, size) = sums.enumerate().min_by_key(|&(i, s)| (s, i)).expect("k <= runs");
        let inputs: Vec<usize> = row[at..at + k].iter().map(|r| r.0).collect();
        let id = u + merges.len();
        depth.push(inputs.iter().map(|&i| depth[i]).max().unwrap_or(0) + 1);
        merges.push(Merge { inputs, output: id, size });
        row.splice(at..at + k, [(id, size)]);
        take = d;
    }
    let merged = merges.iter().map(|m| m.size).sum();
    let levels = depth.iter().copied().max().unwrap_or(0);
    Schedule { merges, merged, levels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every in-order merge joins neighbours, in order, and the
        /// schedule is valid.
        #[test]
        fn in_order_merges_join_neighbours(sizes in prop::collection::vec(1u64..100, 0..40), d in 2usize..6) {
            let s = schedule_in_order(&sizes, d);
            check_valid(&sizes, d, &s);
            // Each run covers a range of the input runs; merges join adjacent ranges in order.
            let mut range: Vec<(usize, usize)> = (0..sizes.len()).map(|i| (i, i + 1)).collect();
            for m in &s.merges {
                for w in m.inputs.windows(2) {
                    prop_assert_eq!(range[w[0]].1, range[w[1]].0);
                }
                range.push((range[m.inputs[0]].0, range[*m.inputs.last().unwrap()].1));
            }
        }
    }

    fn check_valid(sizes: &[u64], d: usize, s: &Schedule) {
        let mut alive: Vec<Option<u64>> = sizes.iter().map(|&x| Some(x)).collect();
        for m in &s.merges {
            assert!(m.inputs.len() >= 2 && m.inputs.len() <= d, "{m:?}");
            let size: u64 = m.inputs.iter().map(|&i| alive[i].take().expect("input used once")).sum();
            assert_eq!(size, m.size);
            assert_eq!(m.output, alive.len());
            alive.push(Some(size));
        }
        assert_eq!(alive.iter().flatten().count(), if sizes.is_empty() { 0 } else { 1 });
    }

    #[test]
    fn equal_runs_take_log_d_passes_with_optimal() {
        for (u, d, levels) in
            [(1, 2, 0), (2, 2, 1), (8, 2, 3), (9, 2, 4), (10, 4, 2), (16, 4, 2), (17, 4, 3), (30, 30, 1)]
        {
            let s = schedule(&vec![1; u], d, MergePolicy::Optimal);
            check_valid(&vec![1; u], d, &s);
            assert_eq!(s.levels, levels, "u={u} d={d}");
            // After the first merge every merge is a full d-way merge.
            assert!(s.merges.iter().skip(1).all(|m| m.inputs.len() == d), "u={u} d={d}: {:?}", s.merges);
        }
    }

    #[test]
    fn fifo_is_the_reports_queue() {
        let s = schedule(&[1; 5], 2, MergePolicy::Fifo);
        let inputs: Vec<Vec<usize>> = s.merges.iter().map(|m| m.inputs.clone()).collect();
        assert_eq!(inputs, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(s.merged, 2 + 2 + 3 + 5);
    }

    proptest! {
        #[test]
        fn optimal_is_valid_and_never_worse_than_fifo(sizes in prop::collection::vec(1u64..1000, 0..60), d in 2usize..9) {
            let o = schedule(&sizes, d, MergePolicy::Optimal);
            let f = schedule(&sizes, d, MergePolicy::Fifo);
            check_valid(&sizes, d, &o);
            check_valid(&sizes, d, &f);
            prop_assert!(o.merged <= f.merged, "optimal {} > fifo {}", o.merged, f.merged);
        }
    }
}
