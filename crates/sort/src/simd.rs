//! Which SIMD kernels sort and merge numbers: chosen once per process from
//! what the CPU has, or forced lower.
//!
//! | level | sort of runs of numbers (every format) | merge of runs of numbers |
//! |---|---|---|
//! | [`Level::Avx512`] | quicksort, 16 keys of 32 bits or 8 of 64 per vector (`simd_sort.rs`) | bitonic networks of 16 or 8 (`simd_merge.rs`) |
//! | [`Level::Avx2`] | the same quicksort, 8 keys of 32 bits or 4 of 64 | bitonic networks of 8 or 4 |
//! | [`Level::Scalar`] | `rdst`'s radix sort | a loser tree of packed keys (`tree.rs`) |
//!
//! The level is the highest the CPU offers (AVX-512F, else AVX2, both with
//! POPCNT), unless the environment variable `EMSORT_SIMD` names a lower one
//! (`avx2` or `scalar`; `avx512` or anything higher than the CPU has means
//! the CPU's level): so every level is tested, and measured, on any machine
//! that has the highest (issue 38). Every level gives the same output.
//!
//! ```
//! let l = emsort_sort::simd::level();
//! assert!(l <= emsort_sort::simd::detected());
//! ```

use std::sync::OnceLock;

/// A set of SIMD kernels, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// No SIMD kernel: radix sort and loser tree.
    Scalar,
    /// AVX2 (256-bit vectors, 8 keys of 32 bits or 4 of 64).
    Avx2,
    /// AVX-512F (512-bit vectors, 16 keys of 32 bits or 8 of 64).
    Avx512,
}

impl Level {
    /// Its name, as `EMSORT_SIMD` and `--stats` write it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level a name gives (`EMSORT_SIMD`'s words), if any.
    pub fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "scalar" | "none" | "off" => Some(Level::Scalar),
            "avx2" => Some(Level::Avx2),
            "avx512" | "avx-512" | "avx512f" => Some(Level::Avx512),
            _ => None,
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The highest level this CPU runs.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        let popcnt = std::arch::is_x86_feature_detected!("popcnt");
        if popcnt && std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if popcnt && std::arch::is_x86_feature_detected!("avx2") {
            return Level::Avx2;
        }
    }
    Level::Scalar
}

/// The level this process uses: [`detected`], or lower as `EMSORT_SIMD`
/// asks (read once).
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cpu = detected();
        match std::env::var("EMSORT_SIMD").ok().and_then(|v| Level::parse(&v)) {
            Some(asked) => asked.min(cpu),
            None => cpu,
        }
    })
}

/// The levels this CPU can run, lowest first (for tests and benchmarks
/// that compare them).
pub fn levels() -> Vec<Level> {
    [Level::Scalar, Level::Avx2, Level::Avx512].into_iter().filter(|l| *l <= detected()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_levels_are_ordered() {
        for l in [Level::Scalar, Level::Avx2, Level::Avx512] {
            assert_eq!(Level::parse(l.name()), Some(l));
        }
        assert_eq!(Level::parse("AVX2"), Some(Level::Avx2));
        assert_eq!(Level::parse("sse"), None);
        assert!(Level::Scalar < Level::Avx2 && Level::Avx2 < Level::Avx512);
        assert!(level() <= detected());
        assert_eq!(levels().first(), Some(&Level::Scalar));
        assert_eq!(levels().last(), Some(&detected()));
    }
}
