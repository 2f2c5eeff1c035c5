//! The front ends' memory policy, in one place: how a memory budget is
//! written and what it is when none is given. `emsort sort -S` and the
//! Python package's `memory=` both use it.
//!
//! - [`parse_memory`]: a size with K/M/G/T/P suffixes (powers of 1024, as
//!   [`emsort_io::parse_size`]) or `N%` of the machine's total RAM.
//! - [`default_memory`]: a quarter of the available RAM, but no more than
//!   twice the input plus 16 MiB (a small input needs no more), and no more
//!   than the process's limits allow ([`limit_cap`]).
//! - [`limit_cap`]: under `ulimit -v` or `ulimit -d`, half of the address
//!   space or data the process has left, as GNU sort sizes its buffer (a
//!   sort that runs into such a limit fails; issue 37 saw `ulimit -v 400M`
//!   with `-S 1G` abort).
//!
//! ```
//! use emsort_sort::budget::{default_memory, parse_memory};
//! assert_eq!(parse_memory("256M"), Ok(256 << 20));
//! assert!(parse_memory("0%").is_err());
//! assert!(default_memory(Some(1000)) <= 2000 + (16 << 20));
//! ```

use emsort_io::{meminfo, self_status};

/// A memory size: K/M/G/T/P suffixes (powers of 1024) or `N%` of the
/// machine's total RAM (more than 0 and at most 100).
pub fn parse_memory(s: &str) -> Result<u64, String> {
    if let Some(p) = s.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| format!("invalid percentage '{s}'"))?;
        if !(pct > 0.0 && pct <= 100.0) {
            return Err(format!("invalid percentage '{s}' (expected more than 0% and at most 100%)"));
        }
        let total = meminfo("MemTotal:").ok_or("cannot read the total RAM from /proc/meminfo")?;
        return Ok((total as f64 * pct / 100.0) as u64);
    }
    emsort_io::parse_size(s)
}

/// Parses GNU `sort -S`'s SIZE: digits, then nothing (KiB, GNU's
/// default unit), `b` (bytes), one of `K M G T P E Z Y R Q` (powers of
/// 1024; `k m g t` too) or `%` (of the physical memory).
///
/// ```
/// use emsort_sort::budget::parse_sort_size;
/// assert_eq!(parse_sort_size("4096"), Ok(4 << 20));
/// assert_eq!(parse_sort_size("100b"), Ok(100));
/// assert_eq!(parse_sort_size("256M"), Ok(256 << 20));
/// assert!(parse_sort_size("1x").is_err());
/// ```
pub fn parse_sort_size(s: &str) -> Result<u64, String> {
    let bad = || format!("invalid -S argument '{s}'");
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    let shift = match &s[digits..] {
        "" => 10,
        "b" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        "P" => 50,
        "E" => 60,
        "Z" | "Y" | "R" | "Q" => 70,
        "%" => {
            if n == 0 || n > 100 {
                return Err(format!("invalid -S argument '{s}' (expected 1% to 100%)"));
            }
            return parse_memory(s);
        }
        _ => return Err(bad()),
    };
    if shift >= 64 {
        return Err(format!("-S argument '{s}' too large"));
    }
    n.checked_mul(1 << shift).ok_or_else(|| format!("-S argument '{s}' too large"))
}

/// The memory M of a sort given none: a quarter of the available RAM, but
/// no more than twice the input plus 16 MiB when its size is known, and
/// no more than [`limit_cap`].
pub fn default_memory(input_bytes: Option<u64>) -> u64 {
    let quarter = meminfo("MemAvailable:").unwrap_or(1 << 30) / 4;
    let m = match input_bytes {
        Some(n) => quarter.min(n.saturating_mul(2).saturating_add(16 << 20)),
        None => quarter,
    };
    limit_cap().map_or(m, |cap| m.min(cap))
}

/// The most memory a sort may plan for under this process's resource
/// limits: half of what `RLIMIT_AS` (`ulimit -v`) leaves of the address
/// space and of what `RLIMIT_DATA` (`ulimit -d`) leaves of the data
/// segment, the smaller; `None` without such limits. GNU sort halves its
/// limits the same way ("leave a large safety margin … as failure can
/// occur when they are exceeded"): threads, their stacks and the
/// allocator's arenas take address space beyond M.
pub fn limit_cap() -> Option<u64> {
    use rustix::process::{getrlimit, Resource};
    let left = |r: Resource, used: &str| {
        getrlimit(r).current.map(|lim| lim.saturating_sub(self_status(used).unwrap_or(0)))
    };
    let least = match (left(Resource::As, "VmSize:"), left(Resource::Data, "VmData:")) {
        (Some(a), Some(d)) => Some(a.min(d)),
        (a, d) => a.or(d),
    };
    least.map(|l| l / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_percentages() {
        assert_eq!(parse_memory("64K"), Ok(64 << 10));
        let total = meminfo("MemTotal:").unwrap();
        let half = parse_memory("50%").unwrap();
        assert!(half.abs_diff(total / 2) <= 1, "{half} vs {total}");
        assert_eq!(parse_memory("100%").unwrap(), total);
        for bad in ["0%", "101%", "-5%", "x%", "%", "12Q"] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_limit_no_cap() {
        use rustix::process::{getrlimit, Resource};
        let unlimited =
            getrlimit(Resource::As).current.is_none() && getrlimit(Resource::Data).current.is_none();
        assert_eq!(limit_cap().is_none(), unlimited);
    }

    #[test]
    fn the_default_follows_the_input() {
        // Not compared with each other: the memory available changes
        // between two calls while other tests run.
        assert!(default_memory(None) > 16 << 20, "a quarter of the memory available");
        assert!(default_memory(Some(0)) <= 16 << 20, "a small input: 16 MiB");
        assert!(default_memory(Some(1 << 40)) > 16 << 20, "a large input: the quarter");
    }
}
