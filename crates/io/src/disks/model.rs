//! [`DiskModel`]: the cost of one request on an emulated disk.
//!
//! A request of `n` bytes costs `latency + n / bytes_per_sec`, the classic
//! model of the external-memory literature's disks (a seek, then a transfer).
//! The disk threads of [`DiskIo`](super::DiskIo) serve one request at a time
//! per disk and stretch each request to at least this long, so D emulated
//! disks behave like D independent devices even when the directories share
//! one real one.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::{format_size, parse_size};

/// An emulated disk: each request costs `latency + bytes / bytes_per_sec`,
/// served one at a time per disk.
///
/// Written as `BANDWIDTH,LATENCY`: `100M,5ms`, `1G,200us`, `50MiB,0`.
///
/// ```
/// use emsort_io::disks::DiskModel;
/// use std::time::Duration;
/// let m: DiskModel = "1M,2ms".parse().unwrap();
/// assert_eq!(m.service_time(1 << 20), Duration::from_millis(1002));
/// assert_eq!(m.to_string().parse::<DiskModel>().unwrap(), m);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskModel {
    /// Transfer rate in bytes per second (> 0).
    pub bytes_per_sec: u64,
    /// Fixed cost of every request (seek and rotation, or command overhead).
    pub latency: Duration,
}

impl DiskModel {
    /// Parses `BANDWIDTH,LATENCY`: the bandwidth per second with the crate's
    /// size suffixes ([`parse_size`]: `100M`, `1G`, `50MiB`, an optional
    /// `/s`), the latency with a unit `ns`, `us` (or `µs`), `ms` or `s`
    /// (a bare `0` is allowed).
    pub fn parse(s: &str) -> Result<DiskModel, String> {
        let bad = |why: String| {
            format!(
                "invalid disk model '{s}': {why} (expected BANDWIDTH,LATENCY such as 100M,5ms or 1G,200us)"
            )
        };
        let (bw, lat) = s.split_once(',').ok_or_else(|| bad("missing ','".into()))?;
        let bw = bw.trim();
        let bw = bw.strip_suffix("/s").unwrap_or(bw);
        let bytes_per_sec = parse_size(bw).map_err(bad)?;
        if bytes_per_sec == 0 {
            return Err(bad("the bandwidth must be positive".into()));
        }
        let latency = parse_duration(lat).map_err(bad)?;
        Ok(DiskModel { bytes_per_sec, latency })
    }

    /// How long a request of `bytes` bytes takes: `latency + bytes / bytes_per_sec`.
    pub fn service_time(&self, bytes: usize) -> Duration {
        let ns = bytes as u128 * 1_000_000_000 / self.bytes_per_sec.max(1) as u128;
        self.latency + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }
}

/// Parses `5ms`, `200us`, `200µs`, `100ns`, `1.5s`, `0`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let err = || format!("invalid latency '{t}' (expected a number with ns, us, ms or s)");
    let (num, unit_ns) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000_000_000u64)
    } else if t.chars().all(|c| c == '0' || c == '.') && !t.is_empty() && t.contains('0') {
        ("0", 1)
    } else {
        return Err(err());
    };
    let num = num.trim();
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(err());
    }
    // A whole number exactly (a double would round `865571600053ms`, which
    // `Display` writes), a fraction through a double.
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(unit_ns).map(Duration::from_nanos).ok_or_else(err);
    }
    let v: f64 = num.parse().map_err(|_| err())?;
    let ns = v * unit_ns as f64;
    // `u64::MAX as f64` is 2⁶⁴, itself out of range.
    if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
        return Err(err());
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Formats a duration with the largest unit that divides it evenly.
fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0".to_string();
    }
    for (unit, div) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(div) {
            return format!("{}{unit}", ns / div);
        }
    }
    format!("{ns}ns")
}

impl fmt::Display for DiskModel {
    /// `BANDWIDTH,LATENCY`, e.g. `100M,5ms`; parses back to the same model.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", format_size(self.bytes_per_sec), format_duration(self.latency))
    }
}

impl FromStr for DiskModel {
    type Err = String;
    fn from_str(s: &str) -> Result<DiskModel, String> {
        DiskModel::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_examples() {
        let m = DiskModel::parse("100M,5ms").unwrap();
        assert_eq!(m, DiskModel { bytes_per_sec: 100 << 20, latency: Duration::from_millis(5) });
        let m = DiskModel::parse("1G,200us").unwrap();
        assert_eq!(m, DiskModel { bytes_per_sec: 1 << 30, latency: Duration::from_micros(200) });
        let m = DiskModel::parse("50MiB,0").unwrap();
        assert_eq!(m, DiskModel { bytes_per_sec: 50 << 20, latency: Duration::ZERO });
        let m = DiskModel::parse(" 1000/s , 1.5s ").unwrap();
        assert_eq!(m, DiskModel { bytes_per_sec: 1000, latency: Duration::from_millis(1500) });
        assert_eq!(DiskModel::parse("1K,7ns").unwrap().latency, Duration::from_nanos(7));
        assert_eq!(DiskModel::parse("1K,7µs").unwrap().latency, Duration::from_micros(7));
    }

    #[test]
    fn refuses_bad_input() {
        for s in
            ["", "100M", "100M,", ",5ms", "0,5ms", "100X,5ms", "100M,5", "100M,5h", "100M,-5ms", "100M,ms"]
        {
            let e = DiskModel::parse(s).unwrap_err();
            assert!(e.contains("invalid disk model"), "{s}: {e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["100M,5ms", "1G,200us", "50M,0", "1000,7ns", "3K,2s", "1536,1500us"] {
            let m = DiskModel::parse(s).unwrap();
            assert_eq!(m.to_string(), s);
            assert_eq!(m.to_string().parse::<DiskModel>().unwrap(), m);
        }
    }

    #[test]
    fn service_time_is_latency_plus_transfer() {
        let m = DiskModel { bytes_per_sec: 1000, latency: Duration::from_millis(2) };
        assert_eq!(m.service_time(0), Duration::from_millis(2));
        assert_eq!(m.service_time(500), Duration::from_millis(502));
        assert_eq!(m.service_time(1), Duration::from_millis(3));
    }
}

/// Fuzz tests of `BANDWIDTH,LATENCY` (`PROPTEST_CASES=20000 cargo test -p emsort-io fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::test_util::{cases, within};
    use proptest::prelude::*;

    fn near_valid() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            3 => "[0-9]{1,22}",
            2 => prop::sample::select(vec![
                ",", ",", ".", "K", "M", "G", "P", "iB", "/s", "ns", "us", "µs", "ms", "s", "h", " ", "-", "e9",
                "18446744073709551615", "18446744073709551616", "1e300", "inf", "NaN", "\u{0}", "é",
            ]).prop_map(String::from),
            1 => any::<char>().prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
    }

    /// Latencies in every unit, up to the largest a `u64` of nanoseconds holds.
    fn latency_ns() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (0u64..1 << 20, prop::sample::select(vec![1u64, 1_000, 1_000_000, 1_000_000_000]))
                .prop_map(|(n, unit)| n * unit),
            (any::<u64>(), prop::sample::select(vec![1u64, 1_000, 1_000_000, 1_000_000_000]))
                .prop_map(|(n, unit)| n / unit * unit),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text: a model or a clean error; a model's service time is
        /// defined for any request.
        #[test]
        fn fuzz_disk_model_any_text(s in prop_oneof![any::<String>(), near_valid()], bytes: usize) {
            if let Ok(m) = within(&s, || DiskModel::parse(&s)) {
                prop_assert!(m.bytes_per_sec >= 1);
                prop_assert!(m.service_time(bytes) >= m.latency);
                prop_assert_eq!(within(m, || m.to_string().parse::<DiskModel>()), Ok(m));
            }
        }

        /// Every model prints as text that parses back to it, to the
        /// nanosecond.
        #[test]
        fn fuzz_disk_model_display_round_trips(bw in 1..=u64::MAX, ns in latency_ns()) {
            let m = DiskModel { bytes_per_sec: bw, latency: Duration::from_nanos(ns) };
            prop_assert_eq!(within(m, || m.to_string().parse::<DiskModel>()), Ok(m), "{}", m);
        }
    }

    /// Inputs the fuzz tests found, kept as plain regression tests.
    #[test]
    fn fuzz_regressions() {
        // Whole latencies past 2⁵³ ns were read through a double and rounded.
        let m = DiskModel { bytes_per_sec: 1, latency: Duration::from_nanos(865_571_600_053_000_000) };
        assert_eq!(m.to_string(), "1,865571600053ms");
        assert_eq!(m.to_string().parse::<DiskModel>(), Ok(m));
        assert_eq!(parse_duration("18446744073709551615ns"), Ok(Duration::from_nanos(u64::MAX)));
        assert!(parse_duration("18446744073709551616ns").is_err());
        assert!(parse_duration("18446744073709551615.0ns").is_err(), "2⁶⁴ as a double");
        assert!(parse_duration("18446744074s").is_err());
    }
}
