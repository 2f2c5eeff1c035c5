//! The seed documents' conclusions beside what a campaign measured: each
//! experiment states its seeds' findings as [`Claim`]s judged from its
//! summary, and its README (and `--plot-only`) lays them out with
//! [`table`], so that a user's own run tells them which conclusions hold on
//! their machine.
//!
//! A comparison of two timings is judged with their spread
//! ([`faster`]): when the slower one's fastest run beats the faster one's
//! slowest, the medians' order is [`Verdict::Noise`], not a finding (the
//! stream campaign's "mmap is the fastest reader at N = 10⁸", 641 against
//! 614 MiB/s, lay inside a 0.52–1.54 s spread).

use std::fmt::Write as _;

/// What a measurement says of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The measurement bears the claim out.
    Holds,
    /// It contradicts the claim.
    Differs,
    /// The medians agree with the claim or not, but the runs' ranges
    /// overlap: this run cannot tell.
    Noise,
}

impl Verdict {
    /// `holds`, `differs` or `within the noise`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs => "differs",
            Verdict::Noise => "within the noise",
        }
    }

    /// [`Verdict::Holds`] when `holds`, else [`Verdict::Differs`].
    pub fn of(holds: bool) -> Verdict {
        if holds {
            Verdict::Holds
        } else {
            Verdict::Differs
        }
    }
}

/// One of a seed's claims beside what the campaign measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The claim, with the seed (and section) it comes from.
    pub claim: String,
    /// What the summary says, with the numbers.
    pub measurement: String,
    /// What the measurement says of it.
    pub verdict: Verdict,
}

/// A timing: (median, min, max) of a point's runs, in seconds.
pub type Timing = (f64, f64, f64);

/// Whether `a` is faster than `b`: [`Verdict::Noise`] when their ranges
/// overlap (neither always beats the other), else by the medians.
pub fn faster(a: Timing, b: Timing) -> Verdict {
    if a.2 < b.1 {
        Verdict::Holds
    } else if b.2 < a.1 {
        Verdict::Differs
    } else {
        Verdict::Noise
    }
}

/// The claims as a Markdown table (a header line, then a row each); empty
/// when there are none.
pub fn table(claims: &[Claim]) -> String {
    if claims.is_empty() {
        return String::new();
    }
    let mut s = String::from("| seed claim | our measurement | verdict |\n|---|---|---|\n");
    for c in claims {
        let _ = writeln!(s, "| {} | {} | {} |", c.claim, c.measurement, c.verdict.word());
    }
    s
}

/// The claims a line each, for a terminal: `holds: claim. measurement`.
pub fn lines(claims: &[Claim]) -> String {
    claims.iter().map(|c| format!("  {}: {}. {}\n", c.verdict.word(), c.claim, c.measurement)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_runs_are_noise() {
        assert_eq!(faster((1.0, 0.9, 1.1), (2.0, 1.8, 2.2)), Verdict::Holds);
        assert_eq!(faster((2.0, 1.8, 2.2), (1.0, 0.9, 1.1)), Verdict::Differs);
        // The example: medians apart, ranges overlapping.
        assert_eq!(faster((0.62, 0.52, 1.54), (0.65, 0.60, 0.70)), Verdict::Noise);
        assert_eq!(faster((1.0, 1.0, 1.0), (1.0, 1.0, 1.0)), Verdict::Noise);
    }

    #[test]
    fn table_has_a_row_per_claim() {
        let c = Claim { claim: "a".into(), measurement: "b".into(), verdict: Verdict::Noise };
        assert_eq!(
            table(std::slice::from_ref(&c)),
            "| seed claim | our measurement | verdict |\n|---|---|---|\n| a | b | within the noise |\n"
        );
        assert_eq!(lines(&[c]), "  within the noise: a. b\n");
        assert_eq!(table(&[]), "");
    }
}
