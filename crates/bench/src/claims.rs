//! Published conclusions beside what a campaign measured: each experiment
//! states the findings of the studies it repeats as [`Claim`]s judged from
//! its summary, and its README (and `--plot-only`) lays them out with
//! [`table`], so that a user's own run tells them which conclusions hold on
//! their machine.
//!
//! The studies, as the claims name them:
//!
//! - *the INFO-H-417 reports*: two student reports for ULB's course
//!   INFO-H-417 Database Systems Architecture (2018, Java): Heinrich,
//!   Kambayatughar and Thanasi, "Algorithms in Secondary Memory", and
//!   Denisov, Dolot and Masli, "External Memory Algorithms"; stream kinds
//!   over k, N and B, and an external multiway merge sort over M and d
//!   (experiments 1 and 2);
//! - *Barve & Vitter*: R. D. Barve and J. S. Vitter, "A Simple and Efficient
//!   Parallel Disk Mergesort" (SRM against DSM on D disks; experiment 3);
//! - *the Chalmers thesis*: T. Bäckemo and K. Olsson, "Minimizing read
//!   bottlenecks in I/O bound systems: Effective and adaptive I/O using
//!   C++", master's thesis, Chalmers University of Technology, 2022
//!   (readers, an adaptive reader, trace replays; experiment 4);
//! - *Exoshuffle* (arXiv:2203.05072) and Exoshuffle-CloudSort
//!   (arXiv:2301.03734): the distributed sort on Ray.
//!
//! A comparison of two timings is judged with their spread
//! ([`faster`]): when the slower one's fastest run beats the faster one's
//! slowest, the medians' order is [`Verdict::Noise`], not a finding (the
//! stream campaign's "mmap is the fastest reader at N = 10⁸", 641 against
//! 614 MiB/s, lay inside a 0.52–1.54 s spread). A claim judged from
//! timings of a single repetition — a `--quick` campaign, or any with one
//! repetition — gets [`Verdict::OneRun`] (`one run: no verdict`) instead
//! of holds or differs ([`Verdict::from_reps`]): one run has no spread, and
//! the order of two single runs can flip from one campaign to the next.
//! Claims on counts (SRM's merge passes against DSM's) do not depend on
//! timing and are judged from one run too.

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
    /// The claim was judged from a single repetition (a `--quick`
    /// campaign, or one with one repetition): one run has no spread to
    /// tell a finding from chance, so it gives no verdict.
    OneRun,
}

impl Verdict {
    /// `holds`, `differs`, `within the noise` or `one run: no verdict`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs => "differs",
            Verdict::Noise => "within the noise",
            Verdict::OneRun => "one run: no verdict",
        }
    }

    /// This verdict of a claim judged from points of `reps` repetitions
    /// (the fewest among them): [`Verdict::OneRun`] when that is one (or
    /// none), whatever the one run said; else the verdict itself.
    ///
    /// ```
    /// use emsort_bench::claims::Verdict;
    ///
    /// assert_eq!(Verdict::Holds.from_reps(1), Verdict::OneRun);
    /// assert_eq!(Verdict::Holds.from_reps(3), Verdict::Holds);
    /// assert_eq!(Verdict::OneRun.word(), "one run: no verdict");
    /// ```
    pub fn from_reps(self, reps: usize) -> Verdict {
        if reps <= 1 {
            Verdict::OneRun
        } else {
            self
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

/// One published claim beside what the campaign measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The claim, with the study (and section) it comes from.
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
    let mut s = String::from("| published claim | our measurement | verdict |\n|---|---|---|\n");
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
        // The issue's example: medians apart, ranges overlapping.
        assert_eq!(faster((0.62, 0.52, 1.54), (0.65, 0.60, 0.70)), Verdict::Noise);
        assert_eq!(faster((1.0, 1.0, 1.0), (1.0, 1.0, 1.0)), Verdict::Noise);
    }

    /// A claim judged from one repetition says so instead of holding or
    /// differing, in the table and the terminal's lines alike.
    #[test]
    fn one_repetition_gives_no_verdict() {
        for v in [Verdict::Holds, Verdict::Differs, Verdict::Noise] {
            assert_eq!(v.from_reps(1), Verdict::OneRun);
            assert_eq!(v.from_reps(0), Verdict::OneRun);
            assert_eq!(v.from_reps(2), v);
        }
        // Two single runs that do not overlap would otherwise decide.
        let v = faster((1.0, 1.0, 1.0), (2.0, 2.0, 2.0));
        assert_eq!(v, Verdict::Holds);
        let c = Claim { claim: "a".into(), measurement: "b".into(), verdict: v.from_reps(1) };
        assert!(table(std::slice::from_ref(&c)).ends_with("| a | b | one run: no verdict |\n"));
        assert_eq!(lines(&[c]), "  one run: no verdict: a. b\n");
    }

    #[test]
    fn table_has_a_row_per_claim() {
        let c = Claim { claim: "a".into(), measurement: "b".into(), verdict: Verdict::Noise };
        assert_eq!(
            table(std::slice::from_ref(&c)),
            "| published claim | our measurement | verdict |\n|---|---|---|\n| a | b | within the noise |\n"
        );
        assert_eq!(lines(&[c]), "  within the noise: a. b\n");
        assert_eq!(table(&[]), "");
    }
}
