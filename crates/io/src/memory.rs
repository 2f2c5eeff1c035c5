//! What the machine says about its memory: fields of `/proc/meminfo`, and
//! of this process's `/proc/self/status` (its address space and data).
//!
//! ```
//! if let Some(total) = emsort_io::meminfo("MemTotal:") {
//!     assert!(total > 0);
//! }
//! ```

/// A `/proc/meminfo` field (`"MemTotal:"`, `"MemAvailable:"` …; given in kB
/// there) in bytes, or `None` where the file or the field is missing.
pub fn meminfo(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, field)
}

/// A field of this process's `/proc/self/status` given in kB (`"VmSize:"`,
/// `"VmData:"`, `"VmRSS:"` …) in bytes, or `None` where it is missing.
pub fn self_status(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_meminfo(&text, field)
}

/// The field `field` of a `/proc/meminfo` text, in bytes.
fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_bytes() {
        let text = "MemTotal:       24568852 kB\nMemFree:  100 kB\nMemAvailable:   0 kB\nHuge: 1\n";
        assert_eq!(parse_meminfo(text, "MemTotal:"), Some(24568852 * 1024));
        assert_eq!(parse_meminfo(text, "MemAvailable:"), Some(0));
        assert_eq!(parse_meminfo(text, "Huge:"), Some(1024));
        assert_eq!(parse_meminfo(text, "Missing:"), None);
        assert_eq!(parse_meminfo("MemTotal: lots kB\n", "MemTotal:"), None);
        assert!(meminfo("MemTotal:").is_some_and(|t| t > 0));
        assert!(self_status("VmSize:").is_some_and(|t| t > 0));
    }
}
