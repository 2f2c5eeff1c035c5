//! The terminal table at the end of a sort campaign.
//!
//! [`headline`] picks, per input (format, N) and emsort stream kind (so
//! `buffered` and `direct` each get a line), emsort's fastest point and
//! sets it beside the I/O lower bound (2 × one O_DIRECT read + write), the CPU
//! bound at the same M and threads (the same sort on tmpfs), GNU
//! sort and STXXL (each at the same M and threads when measured there, else
//! its fastest) and the in-memory sort; [`format_table`] lays the rows out.
//! [`bounds_table`] says, per emsort point, which of the two limits of the
//! machine binds: the I/O bound or the CPU bound (the same sort on tmpfs).
//! Every number comes from the summary rows given.

use emsort_io::format_size;

use super::record::SummaryRow;
use crate::chart::format_seconds;
use crate::claims::{Claim, Verdict};

/// One line of the headline table.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadlineRow {
    /// Format.
    pub format: String,
    /// Input size N in bytes.
    pub bytes: u64,
    /// emsort's fastest median, seconds.
    pub emsort_s: f64,
    /// Its setting (`M=16M d=8 optimal buffered t=2`).
    pub setting: String,
    /// The I/O lower bound, seconds.
    pub io_bound_s: Option<f64>,
    /// The CPU bound at the same M and threads (emsort on tmpfs), seconds.
    pub cpu_bound_s: Option<f64>,
    /// GNU sort's median, seconds.
    pub gnu_sort_s: Option<f64>,
    /// uutils sort's median, seconds.
    pub uutils_sort_s: Option<f64>,
    /// The in-memory sort's median, seconds.
    pub in_memory_s: Option<f64>,
    /// STXXL's median, seconds.
    pub stxxl_s: Option<f64>,
}

impl HeadlineRow {
    /// emsort / I/O bound.
    pub fn ratio_to_io_bound(&self) -> Option<f64> {
        self.io_bound_s.filter(|b| *b > 0.0).map(|b| self.emsort_s / b)
    }
    /// emsort / CPU bound.
    pub fn ratio_to_cpu_bound(&self) -> Option<f64> {
        self.cpu_bound_s.filter(|b| *b > 0.0).map(|b| self.emsort_s / b)
    }
    /// GNU sort / emsort.
    pub fn speedup_vs_gnu_sort(&self) -> Option<f64> {
        self.gnu_sort_s.map(|g| g / self.emsort_s)
    }
    /// uutils sort / emsort.
    pub fn speedup_vs_uutils_sort(&self) -> Option<f64> {
        self.uutils_sort_s.map(|g| g / self.emsort_s)
    }
    /// STXXL / emsort.
    pub fn speedup_vs_stxxl(&self) -> Option<f64> {
        self.stxxl_s.map(|g| g / self.emsort_s)
    }
    /// emsort / in-memory.
    pub fn ratio_to_in_memory(&self) -> Option<f64> {
        self.in_memory_s.filter(|m| *m > 0.0).map(|m| self.emsort_s / m)
    }
}

/// Per input and emsort stream kind, emsort's fastest point and the peers
/// (see the module docs).
pub fn headline(rows: &[SummaryRow]) -> Vec<HeadlineRow> {
    let mut keys: Vec<(&str, u64, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool == "emsort" && r.experiment != "keys") {
        if !keys.contains(&(r.format.as_str(), r.bytes, r.io.as_str())) {
            keys.push((&r.format, r.bytes, &r.io));
        }
    }
    keys.into_iter()
        .filter_map(|(f, n, io)| {
            let on: Vec<&SummaryRow> = rows.iter().filter(|r| r.format == f && r.bytes == n).collect();
            let best = on
                .iter()
                .filter(|r| r.tool == "emsort" && r.io == io)
                .min_by(|a, b| a.median_s.total_cmp(&b.median_s))?;
            let fastest =
                |tool: &str| on.iter().filter(|r| r.tool == tool).map(|r| r.median_s).min_by(f64::total_cmp);
            Some(HeadlineRow {
                format: f.to_string(),
                bytes: n,
                emsort_s: best.median_s,
                setting: format!(
                    "M={} d={} {} {} t={}",
                    best.memory.map(format_size).unwrap_or_default(),
                    best.fan_in.unwrap_or(0),
                    best.policy,
                    best.io,
                    best.threads
                ),
                io_bound_s: best.io_bound_s,
                cpu_bound_s: best.cpu_bound_s,
                gnu_sort_s: best.gnu_sort_s.or_else(|| fastest("gnu-sort")),
                uutils_sort_s: best.uutils_sort_s.or_else(|| fastest("uutils-sort")),
                in_memory_s: best.in_memory_s,
                stxxl_s: best.stxxl_s.or_else(|| fastest("stxxl")),
            })
        })
        .collect()
}

/// The headline rows as an aligned text table (ends with a newline).
pub fn format_table(rows: &[HeadlineRow]) -> String {
    let opt = |x: Option<f64>| x.map(format_seconds).unwrap_or_else(|| "-".into());
    let ratio = |x: Option<f64>| x.map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into());
    let mut s = format!(
        "{:<7} {:>6} {:>9} {:<34} {:>9} {:>7} {:>9} {:>7} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8} {:>9} {:>7}\n",
        "format",
        "N",
        "emsort",
        "best setting",
        "I/O bound",
        "ratio",
        "CPU bound",
        "ratio",
        "GNU sort",
        "speedup",
        "uutils",
        "speedup",
        "STXXL",
        "speedup",
        "in-memory",
        "ratio"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<7} {:>6} {:>9} {:<34} {:>9} {:>7} {:>9} {:>7} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8} {:>9} {:>7}\n",
            r.format,
            format_size(r.bytes),
            format_seconds(r.emsort_s),
            r.setting,
            opt(r.io_bound_s),
            ratio(r.ratio_to_io_bound()),
            opt(r.cpu_bound_s),
            ratio(r.ratio_to_cpu_bound()),
            opt(r.gnu_sort_s),
            ratio(r.speedup_vs_gnu_sort()),
            opt(r.uutils_sort_s),
            ratio(r.speedup_vs_uutils_sort()),
            opt(r.stxxl_s),
            ratio(r.speedup_vs_stxxl()),
            opt(r.in_memory_s),
            ratio(r.ratio_to_in_memory()),
        ));
    }
    s.push_str(
        "ratio = emsort / I/O bound (2 x one O_DIRECT read + write), emsort / CPU bound (the same \
         sort on tmpfs, emsort's defaults at this M) and emsort / in-memory sort; \
         speedup = GNU sort / emsort, uutils sort / emsort and STXXL / emsort (same M and threads where measured).\n",
    );
    s
}

/// Whether more threads cost context switches, migrations and faults (a
/// course report found a merge sort forking a process per partition lose
/// to a plain one on them), in a few lines: per input, at the first (M, d,
/// policy, stream kind) measured with several thread counts, emsort's time,
/// context switches, CPU migrations and minor faults with the fewest and the
/// most threads, and GNU sort's and STXXL's at the same M. Empty when no point was
/// measured with two thread counts.
pub fn threads_reading(rows: &[SummaryRow]) -> String {
    let mut out = String::new();
    let mut seen: Vec<(&str, u64)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool == "emsort" && r.experiment != "keys") {
        if seen.contains(&(r.format.as_str(), r.bytes)) {
            continue;
        }
        let same = |x: &&SummaryRow| {
            x.tool == "emsort"
                && x.format == r.format
                && x.bytes == r.bytes
                && x.memory == r.memory
                && x.fan_in == r.fan_in
                && x.policy == r.policy
                && x.io == r.io
        };
        let group: Vec<&SummaryRow> = rows.iter().filter(same).collect();
        let (Some(lo), Some(hi)) =
            (group.iter().min_by_key(|x| x.threads), group.iter().max_by_key(|x| x.threads))
        else {
            continue;
        };
        if lo.threads == hi.threads {
            continue;
        }
        seen.push((&r.format, r.bytes));
        let mig = |x: &SummaryRow| x.cpu_migrations.map(|m| m.to_string()).unwrap_or_else(|| "-".into());
        let line = |tool: &str, a: &SummaryRow, b: &SummaryRow| {
            format!(
                "  {tool:<8} threads {} -> {}: time {} -> {}, voluntary cs {} -> {}, involuntary cs {} -> {}, \
                 migrations {} -> {}, minor faults {} -> {}\n",
                a.threads,
                b.threads,
                format_seconds(a.median_s),
                format_seconds(b.median_s),
                a.voluntary_cs,
                b.voluntary_cs,
                a.involuntary_cs,
                b.involuntary_cs,
                mig(a),
                mig(b),
                a.minor_faults,
                b.minor_faults
            )
        };
        out.push_str(&format!(
            "{} N={} M={} d={} {} {}:\n",
            r.format,
            format_size(r.bytes),
            r.memory.map(format_size).unwrap_or_default(),
            r.fan_in.unwrap_or(0),
            r.policy,
            r.io
        ));
        out.push_str(&line("emsort", lo, hi));
        for (tool, name) in [("gnu-sort", "GNU sort"), ("stxxl", "STXXL")] {
            let peer: Vec<&SummaryRow> = rows
                .iter()
                .filter(|g| {
                    g.tool == tool && g.format == r.format && g.bytes == r.bytes && g.memory == r.memory
                })
                .collect();
            if let (Some(a), Some(b)) =
                (peer.iter().min_by_key(|x| x.threads), peer.iter().max_by_key(|x| x.threads))
            {
                if a.threads != b.threads {
                    out.push_str(&line(name, a, b));
                }
            }
        }
    }
    out
}

/// The INFO-H-417 reports' conclusion on the merge sort (see
/// [`crate::claims`]) judged
/// from the grid's emsort points: per input, at the reference policy and
/// stream kind and the most threads, the time's range over M (at the d
/// measured with the most M) against its range over d (at the M measured
/// with the most d). Left out where fewer than two M or two d were measured.
pub fn claims(rows: &[SummaryRow]) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut inputs: Vec<(&str, u64)> = Vec::new();
    for r in rows.iter().filter(|r| r.tool == "emsort" && r.experiment != "keys") {
        if !inputs.contains(&(r.format.as_str(), r.bytes)) {
            inputs.push((&r.format, r.bytes));
        }
    }
    for (format, bytes) in inputs {
        let em: Vec<&SummaryRow> = rows
            .iter()
            .filter(|r| {
                r.tool == "emsort" && r.experiment != "keys" && r.format == format && r.bytes == bytes
            })
            .collect();
        let (policy, io) = super::plots::reference(&em);
        let tmax = em.iter().map(|r| r.threads).max().unwrap_or(1);
        let at: Vec<&SummaryRow> =
            em.into_iter().filter(|r| r.policy == policy && r.io == io && r.threads == tmax).collect();
        // The rows sharing `fixed`'s value, the widest sweep of the other.
        let sweep = |fixed: &dyn Fn(&SummaryRow) -> Option<u64>| -> Option<(u64, Vec<&SummaryRow>)> {
            let mut by: std::collections::BTreeMap<u64, Vec<&SummaryRow>> = Default::default();
            for r in &at {
                if let Some(v) = fixed(r) {
                    by.entry(v).or_default().push(r);
                }
            }
            by.into_iter().filter(|(_, v)| v.len() >= 2).max_by_key(|(_, v)| v.len())
        };
        let range = |v: &[&SummaryRow]| {
            let lo = v.iter().map(|r| r.median_s).fold(f64::INFINITY, f64::min);
            let hi = v.iter().map(|r| r.median_s).fold(0.0, f64::max);
            (lo, hi)
        };
        let (Some((d, over_m)), Some((m, over_d))) =
            (sweep(&|r| r.fan_in.map(|d| d as u64)), sweep(&|r| r.memory))
        else {
            continue;
        };
        let ((m_lo, m_hi), (d_lo, d_hi)) = (range(&over_m), range(&over_d));
        let reps = over_m.iter().chain(&over_d).map(|r| r.reps).min().unwrap_or(0);
        out.push(Claim {
            claim: format!(
                "INFO-H-417 reports: the memory M matters far more to the sort's time than the fan-in d ({format}, N = {})",
                format_size(bytes)
            ),
            measurement: format!(
                "over {} M (d = {d}): {} to {} ({:.2}×); over {} d (M = {}): {} to {} ({:.2}×)",
                over_m.len(),
                format_seconds(m_lo),
                format_seconds(m_hi),
                m_hi / m_lo,
                over_d.len(),
                format_size(m),
                format_seconds(d_lo),
                format_seconds(d_hi),
                d_hi / d_lo
            ),
            verdict: Verdict::of(m_hi / m_lo > d_hi / d_lo).from_reps(reps),
        });
    }
    out
}

/// What the reports say of a point's two bounds (from its summary row
/// and the CPU bound's, [`bound_cells`]): each a text, `-` where not
/// measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BoundCells {
    /// 2 × the I/O bound.
    pub io: String,
    /// The CPU bound at the same keys, M and threads, with its user and
    /// system seconds: `2 s (3 s + 500 ms)`.
    pub cpu: String,
    /// The bound that binds, the larger: `io-bound` or `cpu-bound`.
    pub binds: String,
    /// The point's median over it: `1.50x`.
    pub ratio: String,
}

/// The bound cells of summary row `r` (an emsort point, of the grid or
/// the keys experiment), the CPU bound's usage read from its own row in
/// `rows`.
pub(crate) fn bound_cells(rows: &[SummaryRow], r: &SummaryRow) -> BoundCells {
    let t = |x: Option<f64>| x.filter(|v| v.is_finite()).map(format_seconds).unwrap_or_else(|| "-".into());
    let cpu = rows.iter().find(|c| {
        c.tool == "cpu-bound"
            && (&c.experiment, &c.format, c.bytes, &c.keys, c.memory, c.threads)
                == (&r.experiment, &r.format, r.bytes, &r.keys, r.memory, r.threads)
    });
    let usage = match cpu.map(|c| (c.user_s, c.system_s)) {
        Some((Some(u), Some(sy))) if r.cpu_bound_s.is_some() => {
            format!(" ({} + {})", format_seconds(u), format_seconds(sy))
        }
        _ => String::new(),
    };
    BoundCells {
        io: t(r.io_bound_s),
        cpu: format!("{}{usage}", t(r.cpu_bound_s)),
        binds: if r.bound.is_empty() { "-".into() } else { r.bound.clone() },
        ratio: r.ratio_to_bound.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into()),
    }
}

/// The README's table of bounds (Markdown): per emsort point of the sort
/// experiment, its median, 2 × the I/O bound, the CPU bound at the same M
/// and threads (with its user and system seconds), which of the two binds
/// (the larger) and emsort's time over it. Empty without emsort rows.
/// (The keys experiment says the same per key sort in [`super::keys_table`].)
pub fn bounds_table(rows: &[SummaryRow]) -> String {
    let em: Vec<&SummaryRow> = rows.iter().filter(|r| r.tool == "emsort" && r.experiment != "keys").collect();
    if em.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "| point | emsort | 2 × I/O bound | CPU bound (user + system) | binds | emsort / bound |\n\
         |---|---:|---:|---:|---|---:|\n",
    );
    for r in em {
        let b = bound_cells(rows, r);
        s.push_str(&format!(
            "| {} N={} M={} d={} {} {} t={} | {} | {} | {} | {} | {} |\n",
            r.format,
            format_size(r.bytes),
            r.memory.map(format_size).unwrap_or_default(),
            r.fan_in.unwrap_or(0),
            r.policy,
            r.io,
            r.threads,
            format_seconds(r.median_s),
            b.io,
            b.cpu,
            b.binds,
            b.ratio,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::record::{summarise, RawRow};
    use super::*;

    /// M's range against d's, each at the other's widest sweep.
    #[test]
    fn memory_against_fan_in() {
        let mut rows = Vec::new();
        let points = [(1u64 << 20, 8, 4.0), (4 << 20, 8, 2.0), (16 << 20, 8, 1.0), (16 << 20, 2, 1.2)];
        for rep in [1, 2] {
            for (m, d, s) in points {
                let mut r = RawRow::new("emsort", "u32", 64 << 20, 9, 2, rep);
                (r.memory, r.fan_in, r.seconds, r.policy, r.io) =
                    (Some(m), Some(d), s, "optimal".into(), "direct".into());
                rows.push(r);
            }
        }
        let c = claims(&summarise(&rows));
        assert_eq!(c.len(), 1, "{c:#?}");
        assert_eq!(c[0].verdict, Verdict::Holds);
        assert_eq!(
            c[0].measurement,
            "over 3 M (d = 8): 1 s to 4 s (4.00×); over 2 d (M = 16M): 1 s to 1.2 s (1.20×)"
        );
        // One repetition (a quick campaign): the same numbers, no verdict.
        let c = claims(&summarise(&rows[..4]));
        assert_eq!(c[0].verdict, Verdict::OneRun, "{c:#?}");
        assert!(crate::claims::table(&c).contains("| one run: no verdict |"));
        rows.truncate(3);
        assert!(claims(&summarise(&rows)).is_empty(), "one d only");
    }

    #[test]
    fn picks_the_fastest_point_and_its_peers() {
        let mut rows = Vec::new();
        for (m, s) in [(1u64 << 20, 2.0), (4 << 20, 1.0)] {
            let mut r = RawRow::new("emsort", "lines", 8 << 20, 9, 2, 1);
            (r.memory, r.fan_in, r.seconds, r.policy, r.io) =
                (Some(m), Some(8), s, "optimal".into(), "buffered".into());
            rows.push(r);
        }
        let mut g = RawRow::new("gnu-sort", "lines", 8 << 20, 9, 2, 1);
        (g.memory, g.seconds) = (Some(4 << 20), 5.0);
        rows.push(g);
        let mut io = RawRow::new("io-bound", "lines", 8 << 20, 9, 1, 1);
        io.seconds = 0.25;
        rows.push(io);
        let h = headline(&summarise(&rows));
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].emsort_s, 1.0);
        assert_eq!(h[0].setting, "M=4M d=8 optimal buffered t=2");
        assert_eq!(h[0].ratio_to_io_bound(), Some(2.0));
        assert_eq!(h[0].speedup_vs_gnu_sort(), Some(5.0));
        assert_eq!(h[0].ratio_to_in_memory(), None);
        assert_eq!(h[0].ratio_to_cpu_bound(), None);
        assert_eq!(threads_reading(&summarise(&rows)), "");
        let mut one = rows[1].clone();
        (one.threads, one.seconds, one.voluntary_cs) = (1, 1.5, 7);
        rows.push(one);
        let mut g1 = rows[2].clone();
        (g1.threads, g1.seconds) = (1, 6.0);
        rows.push(g1);
        let text = threads_reading(&summarise(&rows));
        assert!(text.starts_with("lines N=8M M=4M d=8 optimal buffered:\n"), "{text}");
        assert!(text.contains("emsort   threads 1 -> 2: time 1.5 s -> 1 s, voluntary cs 7 -> 0"), "{text}");
        assert!(text.contains("GNU sort threads 1 -> 2: time 6 s -> 5 s"), "{text}");
        let t = format_table(&h);
        assert!(t.contains("5.00x") && t.contains("2.00x"), "{t}");
        assert!(t.contains("STXXL"), "{t}");
        assert_eq!(h[0].speedup_vs_stxxl(), None);
        let mut x = RawRow::new("stxxl", "lines", 8 << 20, 9, 2, 1);
        (x.memory, x.seconds) = (Some(4 << 20), 4.0);
        rows.push(x);
        let mut c = RawRow::new("cpu-bound", "lines", 8 << 20, 9, 2, 1);
        (c.memory, c.seconds) = (Some(4 << 20), 0.8);
        rows.push(c);
        let h = headline(&summarise(&rows));
        assert_eq!(h[0].speedup_vs_stxxl(), Some(4.0));
        assert_eq!((h[0].cpu_bound_s, h[0].ratio_to_cpu_bound()), (Some(0.8), Some(1.25)));
        assert!(format_table(&h).contains("800 ms   1.25x"), "{}", format_table(&h));
        assert!(format_table(&h).contains("4.00x"));
    }
    #[test]
    fn bounds_table_names_the_binding_bound() {
        let mut rows = Vec::new();
        for (tool, m, secs) in
            [("emsort", 1u64 << 20, 4.0), ("emsort", 4 << 20, 1.5), ("cpu-bound", 1 << 20, 2.0)]
        {
            let mut r = RawRow::new(tool, "u32", 8 << 20, 9, 2, 1);
            (r.memory, r.fan_in, r.seconds, r.policy, r.io) =
                (Some(m), Some(8), secs, "optimal".into(), "buffered".into());
            (r.user_s, r.system_s) = (Some(3.0), Some(0.5));
            rows.push(r);
        }
        let mut io = RawRow::new("io-bound", "u32", 8 << 20, 9, 1, 1);
        io.seconds = 0.5;
        rows.push(io);
        let t = bounds_table(&summarise(&rows));
        assert!(t.contains("| u32 N=8M M=1M d=8 optimal buffered t=2 | 4 s | 1 s | 2 s (3 s + 500 ms) | cpu-bound | 2.00x |"), "{t}");
        assert!(
            t.contains("| u32 N=8M M=4M d=8 optimal buffered t=2 | 1.5 s | 1 s | - | io-bound | 1.50x |"),
            "{t}"
        );
        assert_eq!(t.lines().count(), 4, "{t}");
        assert_eq!(bounds_table(&[]), "");
    }
}
