//! Merge orders and memory formulas of DSM and SRM (Barve & Vitter,
//! sections 2.4, 4.1.3 and 5.3.2).
//!
//! Symbols as in the paper: M memory in bytes, B the block size in bytes,
//! D disks, R the merge order, U the runs formed (the paper's n = N/M),
//! B_f the block of a forecasting data run (4.1.2: B_f = B·I / b_f, here
//! B / [`FORECAST_BLOCK_DIVISOR`] in bytes, at least [`MIN_FORECAST_BLOCK`]).
//!
//! **DSM** (2.4, 5.3.2): every run and the output are striped streams of
//! logical blocks of D·B, each double-buffered:
//!
//! ```text
//!   M_dsm(R) = 2·R·D·B + 2·D·B          R_dsm = ⌊(M/B − 2D) / (2D)⌋
//! ```
//!
//! **SRM** (4.1.3, 4.4): m ≥ 2R + D input blocks (R leading, R prefetched,
//! D being read), two output buffers of D·B, and the forecasting buffers of
//! the blocked scheme (4.1.2): one B_f buffer for each of the R forecasting
//! data runs read by the forecasting heap, one more per run for the merge's
//! own placeholder heads (see `pdisk/srm.rs`), one for the output's:
//!
//! ```text
//!   M_srm(R) = (2R + D)·B + 2·D·B + (2R + 1)·B_f
//! ```
//!
//! The paper writes M(R') = R'B + 2DB + (R' + 1)B_f; we count the m ≥ 2R + D
//! input blocks that section 4.4 assumes and the second forecasting cursor
//! per run. Its procedure: the smallest R' with ⌈log_R' U⌉ = ⌈log_{M/B} U⌉,
//! decremented until M ≥ M(R'), then the smallest R'' with the same number of
//! passes ⌈log_R'' U⌉ — the same as: P = ⌈log_{R_max} U⌉ for the largest R_max
//! that fits (and the optional cap, 19 in the paper's runs), and R = the
//! smallest order that still needs only P passes ([`srm_merge_order`]).
//!
//! Forecasting data stays in memory (4.1.3) when
//! M ≥ M_srm(R) − (2R + 1)·B_f + 2·N·K/B, i.e. when the keys of every run of
//! a pass, input and output (2NK/B bytes), fit beside the blocks.
//!
//! ```
//! use emsort_sort::pdisk::order::{dsm_merge_order, passes, srm_merge_order};
//! assert_eq!(passes(30, 6), 2);
//! // 30 runs and room for 19: two passes are needed anyway, and 6 is the
//! // smallest order that still does it in two (6² = 36 ≥ 30 > 5²).
//! assert_eq!(srm_merge_order(30, 19, None), 6);
//! assert_eq!(srm_merge_order(30, 19, Some(4)), 4);
//! assert_eq!(dsm_merge_order(24 << 20, 256 << 10, 6), 7);
//! ```

/// b_f of 4.1.2: B_f = B / b_f.
pub const FORECAST_BLOCK_DIVISOR: usize = 8;

/// The smallest B_f in bytes.
pub const MIN_FORECAST_BLOCK: usize = 512;

/// B_f for blocks of `block` bytes.
pub fn forecast_block(block: usize) -> usize {
    (block / FORECAST_BLOCK_DIVISOR).max(MIN_FORECAST_BLOCK)
}

/// Merge passes to merge `u` runs with order `r`: ⌈log_r u⌉ (0 for u ≤ 1).
pub fn passes(u: u64, r: usize) -> usize {
    let r = r.max(2) as u128;
    let (mut p, mut reach) = (0, 1u128);
    while reach < u as u128 {
        reach *= r;
        p += 1;
    }
    p
}

/// M_dsm(R) = 2·R·D·B + 2·D·B: two logical blocks per run and two for the
/// output.
pub fn dsm_memory(r: usize, block: usize, disks: usize) -> u64 {
    let logical = (disks * block) as u64;
    2 * r as u64 * logical + 2 * logical
}

/// R_dsm = ⌊(M/B − 2D) / (2D)⌋, the largest R with M ≥ M_dsm(R) (may be
/// below 2: then DSM cannot run).
pub fn dsm_merge_order(memory: u64, block: usize, disks: usize) -> usize {
    let logical = (disks * block) as u64;
    (memory.saturating_sub(2 * logical) / (2 * logical)) as usize
}

/// M_srm(R) = (2R + D)·B + 2·D·B + (2R + 1)·B_f: SRM's memory with
/// forecasting data in the blocked scheme.
pub fn srm_memory(r: usize, block: usize, disks: usize) -> u64 {
    srm_block_memory(r, block, disks) + (2 * r as u64 + 1) * forecast_block(block) as u64
}

/// (2R + D)·B + 2·D·B: SRM's input and output blocks alone.
pub fn srm_block_memory(r: usize, block: usize, disks: usize) -> u64 {
    ((2 * r + disks) * block + 2 * disks * block) as u64
}

/// The largest R with M ≥ M_srm(R) (may be below 2).
pub fn srm_max_fit(memory: u64, block: usize, disks: usize) -> usize {
    let per_run = 2 * block as u64 + 2 * forecast_block(block) as u64;
    let fixed = 3 * (disks * block) as u64 + forecast_block(block) as u64;
    (memory.saturating_sub(fixed) / per_run) as usize
}

/// SRM's merge order for `u` runs when memory allows up to `max_fit`
/// (≥ 2) and the plan caps it at `cap`: the smallest R with
/// ⌈log_R U⌉ = ⌈log_{min(max_fit, cap)} U⌉ (section 5.3.2).
pub fn srm_merge_order(u: u64, max_fit: usize, cap: Option<usize>) -> usize {
    let top = cap.map_or(max_fit, |c| c.min(max_fit)).max(2);
    let p = passes(u, top);
    (2..=top).find(|&r| passes(u, r) == p).unwrap_or(top)
}

/// Whether SRM's forecasting data (`forecast_bytes` for the runs of one
/// pass, input and output together, the paper's 2NK/B) fits in memory
/// beside the merge's blocks (4.1.3).
pub fn forecast_fits(memory: u64, r: usize, block: usize, disks: usize, forecast_bytes: u64) -> bool {
    memory >= srm_block_memory(r, block, disks) + forecast_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_ceiling_logs() {
        for (u, r, p) in
            [(0, 2, 0), (1, 2, 0), (2, 2, 1), (9, 3, 2), (10, 3, 3), (1000, 10, 3), (1001, 10, 4)]
        {
            assert_eq!(passes(u, r), p, "u {u} r {r}");
        }
    }

    #[test]
    fn srm_order_is_the_smallest_with_optimal_passes() {
        // Within memory: one pass for 10 runs when 19 fit, with R = 10.
        assert_eq!(srm_merge_order(10, 19, None), 10);
        assert_eq!(srm_merge_order(100, 19, None), 10); // 10² = 100
        assert_eq!(srm_merge_order(101, 19, None), 11);
        assert_eq!(srm_merge_order(400, 19, None), 8); // 3 passes; 7³ = 343 < 400 ≤ 512
        assert_eq!(srm_merge_order(5, 2, None), 2);
        assert_eq!(srm_merge_order(50, 100, Some(3)), 3); // 4 passes with 3
        for u in 2..300u64 {
            for fit in 2..40 {
                let r = srm_merge_order(u, fit, None);
                assert_eq!(passes(u, r), passes(u, fit), "u {u} fit {fit}");
                assert!(r <= fit && (r == 2 || passes(u, r - 1) > passes(u, fit)));
            }
        }
    }

    #[test]
    fn memory_formulas() {
        let (b, d) = (256 << 10, 6);
        // The paper's 24 MB and 15 MB: DSM merges ⌊(96 − 12) / 12⌋ = 7 and
        // ⌊(60 − 12) / 12⌋ = 4 runs.
        assert_eq!(dsm_merge_order(24 << 20, b, d), 7);
        assert_eq!(dsm_merge_order(15 << 20, b, d), 4);
        assert!(dsm_memory(7, b, d) <= 24 << 20 && dsm_memory(8, b, d) > 24 << 20);
        // SRM: (2R + 6)·B + 12·B + (2R + 1)·B/8 ≤ 96 B → R ≤ 34.
        let fit = srm_max_fit(24 << 20, b, d);
        assert!(srm_memory(fit, b, d) <= 24 << 20 && srm_memory(fit + 1, b, d) > 24 << 20);
        assert_eq!(fit, 34);
        assert!(forecast_fits(24 << 20, 10, b, d, 100_000));
        assert!(!forecast_fits(24 << 20, 34, b, d, 10 << 20));
    }
}
