//! The paper's tables (Barve & Vitter, Tables 1 and 2), made from
//! `summary.csv`: `table.md` and the terminal summary.
//!
//! [`sections`] groups the summary rows into tables:
//!
//! - one table per (format, M, B, D, emulated disk), a row per N: like the
//!   paper's Table 1 (M = 15 MB) and Table 2 (M = 24 MB);
//! - one table per D sweep, a row per D: every (format, M, B, N, emulated
//!   disk) measured with two or more D. A single-N table whose only point
//!   belongs to a D sweep is left out (the sweep shows it).
//!
//! Each row holds U (the runs formed, the same for both methods), then for
//! DSM and for SRM the passes, the merge order R of each pass, the merge
//! time (median of the repetitions) and the streaming rate, for SRM the
//! I/O overhead ν of each pass, and the ratio of SRM's merge time to DSM's
//! (below 1: SRM is faster). [`table_markdown`] renders them as Markdown,
//! [`format_table`] as aligned text.
//!
//! ```
//! use emsort_bench::srm::{format_table, SummaryRow};
//! assert_eq!(format_table(&[]), "");
//! ```

use std::collections::BTreeMap;

use emsort_io::format_size;

use super::record::SummaryRow;
use crate::claims::{faster, Claim, Verdict};
use crate::streams::format_count;

/// One method's cells of a table row.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCells {
    /// Merge passes.
    pub passes: Option<u64>,
    /// Merge order of each pass (`19, 4`).
    pub orders: String,
    /// Median merge time, seconds.
    pub merge_s: Option<f64>,
    /// Median streaming rate, MiB/s.
    pub rate: Option<f64>,
    /// ν of each pass (`1.012, 1.030`); empty for DSM.
    pub nu: String,
}

/// One row: a value of N (or of D in a sweep) with both methods.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// N (`1e6`) or D (`6`).
    pub label: String,
    /// Runs U.
    pub runs: Option<u64>,
    /// DSM's cells, when measured.
    pub dsm: Option<MethodCells>,
    /// SRM's cells, when measured.
    pub srm: Option<MethodCells>,
}

impl TableRow {
    /// SRM's merge time / DSM's.
    pub fn ratio(&self) -> Option<f64> {
        let s = self.srm.as_ref()?.merge_s?;
        let d = self.dsm.as_ref()?.merge_s?;
        (d > 0.0).then(|| s / d)
    }
}

/// One table.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// What the table holds fixed (`M = 15M, D = 6, B = 256K, rec:104:0:8, disks as they are`).
    pub title: String,
    /// The first column's name: `N` or `D`.
    pub varies: &'static str,
    /// The rows, by increasing N or D.
    pub rows: Vec<TableRow>,
}

fn cells(r: &SummaryRow) -> MethodCells {
    let orders = r.merge_orders.split(';').filter(|s| !s.is_empty()).collect::<Vec<_>>().join(", ");
    let nu = r.nu_values().iter().map(|v| format!("{v:.3}")).collect::<Vec<_>>().join(", ");
    MethodCells { passes: r.passes, orders, merge_s: r.merge_s, rate: r.merge_mib_s, nu }
}

fn disks_text(emulate: &str) -> String {
    if emulate.is_empty() {
        "disks as they are".to_string()
    } else {
        format!("emulated disks of {emulate} each")
    }
}

/// A table row from the summary rows of one N (or D).
fn row_of(label: String, members: &[&SummaryRow]) -> TableRow {
    let find = |m: &str| members.iter().find(|r| r.method == m).copied();
    let (dsm, srm) = (find("dsm"), find("srm"));
    TableRow {
        label,
        runs: dsm.or(srm).or(members.first().copied()).and_then(|r| r.runs),
        dsm: dsm.map(cells),
        srm: srm.map(cells),
    }
}

/// The tables of a summary (see the module docs).
pub fn sections(rows: &[SummaryRow]) -> Vec<Section> {
    let rows: Vec<&SummaryRow> = rows.iter().filter(|r| r.method == "dsm" || r.method == "srm").collect();
    // D sweeps: (format, emulate, M, B, N) → D → rows.
    type SweepKey = (String, String, u64, u64, u64);
    let mut sweeps: BTreeMap<SweepKey, BTreeMap<usize, Vec<&SummaryRow>>> = BTreeMap::new();
    for r in &rows {
        let k = (r.format.clone(), r.emulate.clone(), r.memory, r.block_size, r.items);
        sweeps.entry(k).or_default().entry(r.disks).or_default().push(r);
    }
    sweeps.retain(|_, by_d| by_d.len() >= 2);
    // By N: (format, emulate, M, B, D) → N → rows.
    type MainKey = (String, String, u64, u64, usize);
    let mut mains: BTreeMap<MainKey, BTreeMap<u64, Vec<&SummaryRow>>> = BTreeMap::new();
    for r in &rows {
        let k = (r.format.clone(), r.emulate.clone(), r.memory, r.block_size, r.disks);
        mains.entry(k).or_default().entry(r.items).or_default().push(r);
    }
    let mut out = Vec::new();
    for ((format, emulate, memory, block, disks), by_n) in mains {
        if by_n.len() == 1 {
            let n = *by_n.keys().next().expect("one N");
            if sweeps.contains_key(&(format.clone(), emulate.clone(), memory, block, n)) {
                continue;
            }
        }
        out.push(Section {
            title: format!(
                "M = {}, D = {disks}, B = {}, {format}, {}",
                format_size(memory),
                format_size(block),
                disks_text(&emulate)
            ),
            varies: "N",
            rows: by_n.iter().map(|(n, m)| row_of(format_count(*n), m)).collect(),
        });
    }
    for ((format, emulate, memory, block, n), by_d) in sweeps {
        out.push(Section {
            title: format!(
                "D sweep: N = {}, M = {}, B = {}, {format}, {}",
                format_count(n),
                format_size(memory),
                format_size(block),
                disks_text(&emulate)
            ),
            varies: "D",
            rows: by_d.iter().map(|(d, m)| row_of(d.to_string(), m)).collect(),
        });
    }
    out
}

const HEADER: [&str; 11] = [
    "U",
    "DSM passes",
    "DSM R",
    "DSM merge s",
    "DSM MiB/s",
    "SRM passes",
    "SRM R",
    "SRM merge s",
    "SRM MiB/s",
    "SRM ν",
    "SRM/DSM",
];

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "–".into())
}

fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite()).map(|x| format!("{x:.decimals$}")).unwrap_or_else(|| "–".into())
}

/// The cells of a section: the header, then one line per row.
fn grid(s: &Section) -> Vec<Vec<String>> {
    let mut head = vec![s.varies.to_string()];
    head.extend(HEADER.iter().map(|h| h.to_string()));
    let mut g = vec![head];
    for r in &s.rows {
        let mut line = vec![r.label.clone(), opt(r.runs)];
        for (m, with_nu) in [(&r.dsm, false), (&r.srm, true)] {
            match m {
                Some(c) => {
                    line.extend([
                        opt(c.passes),
                        if c.orders.is_empty() { "–".into() } else { c.orders.clone() },
                        fixed(c.merge_s, 2),
                        fixed(c.rate, 1),
                    ]);
                    if with_nu {
                        line.push(if c.nu.is_empty() { "–".into() } else { c.nu.clone() });
                    }
                }
                None => line.extend(std::iter::repeat_n("–".to_string(), if with_nu { 5 } else { 4 })),
            }
        }
        line.push(fixed(r.ratio(), 2));
        g.push(line);
    }
    g
}

/// Barve & Vitter's conclusions judged over every setting (format, N, M,
/// B, D, disks) that both methods ran: SRM merges in no more passes than
/// DSM, and in fewer somewhere (their Table 1: SRM's larger merge order
/// saves passes); and SRM's merge is faster, setting by setting, with the
/// runs' spread ([`crate::claims::faster`]). Empty without such a setting.
pub fn claims(rows: &[SummaryRow]) -> Vec<Claim> {
    type Key<'a> = (&'a str, u64, u64, u64, usize, &'a str);
    let mut pairs: BTreeMap<Key<'_>, (Option<&SummaryRow>, Option<&SummaryRow>)> = BTreeMap::new();
    for r in rows {
        let k = (r.format.as_str(), r.items, r.memory, r.block_size, r.disks, r.emulate.as_str());
        let e = pairs.entry(k).or_default();
        match r.method.as_str() {
            "dsm" => e.0 = Some(r),
            "srm" => e.1 = Some(r),
            _ => {}
        }
    }
    let both: Vec<(&SummaryRow, &SummaryRow)> =
        pairs.into_values().filter_map(|(d, s)| Some((d?, s?))).collect();
    if both.is_empty() {
        return Vec::new();
    }
    let n = both.len();
    let passes: Vec<(u64, u64)> = both.iter().filter_map(|(d, s)| Some((d.passes?, s.passes?))).collect();
    let fewer = passes.iter().filter(|(d, s)| s < d).count();
    let more = passes.iter().filter(|(d, s)| s > d).count();
    let timing = |r: &SummaryRow| Some((r.merge_s?, r.merge_s_min?, r.merge_s_max?));
    let verdicts: Vec<Verdict> =
        both.iter().filter_map(|(d, s)| Some(faster(timing(s)?, timing(d)?))).collect();
    let count = |v: Verdict| verdicts.iter().filter(|&&x| x == v).count();
    let (won, lost, noise) = (count(Verdict::Holds), count(Verdict::Differs), count(Verdict::Noise));
    let ratios: Vec<f64> = both.iter().filter_map(|(d, s)| Some(s.merge_s? / d.merge_s?)).collect();
    // Passes are counts, the same in every run; times need more than one.
    let reps = both.iter().map(|(d, s)| d.reps.min(s.reps)).min().unwrap_or(0);
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    vec![
        Claim {
            claim: "Barve & Vitter (Table 1): SRM merges in fewer passes than DSM".into(),
            measurement: format!(
                "of {} settings both ran: SRM fewer passes in {fewer}, as many in {}, more in {more}",
                passes.len(),
                passes.len() - fewer - more
            ),
            verdict: Verdict::of(fewer > 0 && more == 0),
        },
        Claim {
            claim: "Barve & Vitter: SRM's merge takes less time than DSM's".into(),
            measurement: format!(
                "of {n} settings: SRM faster in {won}, slower in {lost}, within the noise in {noise} \
                 (SRM/DSM merge time {lo:.2}–{hi:.2})"
            ),
            verdict: if lost == 0 && won > 0 {
                Verdict::Holds
            } else if lost > won {
                Verdict::Differs
            } else {
                Verdict::Noise
            }
            .from_reps(reps),
        },
    ]
}

/// `table.md`: a Markdown table per section, with a short legend.
pub fn table_markdown(rows: &[SummaryRow]) -> String {
    let mut out = String::from(
        "# SRM versus DSM (experiment 3)\n\n\
         Per table: U = runs formed (the same for both methods); for each method the merge \
         passes, the merge order R of each pass, the merge time in seconds (median of the \
         repetitions) and the streaming rate (bytes read + written while merging / merge time, \
         MiB/s); for SRM the I/O overhead ν = parallel reads / (N / (D·B)) of each pass; \
         SRM/DSM = SRM's merge time / DSM's (below 1: SRM is faster).\n",
    );
    for s in sections(rows) {
        out.push_str(&format!("\n## {}\n\n", s.title));
        let g = grid(&s);
        for (i, line) in g.iter().enumerate() {
            out.push_str(&format!("| {} |\n", line.join(" | ")));
            if i == 0 {
                out.push_str(&format!("|{}\n", "---:|".repeat(line.len())));
            }
        }
    }
    let claims = crate::claims::table(&claims(rows));
    if !claims.is_empty() {
        out.push_str(&format!(
            "\n## Beside Barve & Vitter's conclusions\n\nA comparison whose runs' ranges overlap is \
             *within the noise*; a comparison of times judged from one repetition says *one run: no \
             verdict* (the passes, counts, are judged from one).\n\n{claims}"
        ));
    }
    out
}

/// The terminal summary: each section's title and its rows as aligned
/// columns; empty when there is no DSM or SRM point.
pub fn format_table(rows: &[SummaryRow]) -> String {
    let mut out = String::new();
    for s in sections(rows) {
        let g = grid(&s);
        let cols = g[0].len();
        let width: Vec<usize> =
            (0..cols).map(|c| g.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&s.title);
        out.push('\n');
        for line in &g {
            let cells: Vec<String> =
                line.iter().zip(&width).map(|(c, w)| format!("{c:>w$}", w = *w)).collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srm::record::summarise;
    use crate::srm::record::tests::row;

    fn summary() -> Vec<SummaryRow> {
        let mut raw = Vec::new();
        for n in [1_000_000, 2_000_000] {
            raw.push(row("dsm", n, 15 << 20, 6, 1, 4.0));
            raw.push(row("srm", n, 15 << 20, 6, 1, 3.0));
        }
        for d in [1, 2, 6] {
            raw.push(row("dsm", 4_000_000, 24 << 20, d, 1, 8.0));
            raw.push(row("srm", 4_000_000, 24 << 20, d, 1, 6.0));
        }
        raw.push(row("plain", 4_000_000, 24 << 20, 1, 1, 6.0));
        summarise(&raw)
    }

    #[test]
    fn a_table_per_memory_and_a_d_sweep() {
        let s = sections(&summary());
        assert_eq!(s.len(), 2, "{s:#?}");
        assert_eq!(s[0].title, "M = 15M, D = 6, B = 256K, rec:104:0:8, disks as they are");
        assert_eq!(s[0].varies, "N");
        assert_eq!(s[0].rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["1e6", "2e6"]);
        let r = &s[0].rows[0];
        assert_eq!(r.runs, Some(10));
        assert_eq!(r.dsm.as_ref().unwrap().orders, "4, 3");
        assert_eq!(r.srm.as_ref().unwrap().nu, "1.010");
        assert_eq!(r.ratio(), Some(0.75));
        assert!(s[1].title.starts_with("D sweep: N = 4e6, M = 24M"), "{}", s[1].title);
        assert_eq!(s[1].rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["1", "2", "6"]);
    }

    /// The settings of [`summary`], each run twice with the same times.
    fn summary_of_two_reps() -> Vec<SummaryRow> {
        let mut raw = Vec::new();
        for rep in [1, 2] {
            for n in [1_000_000, 2_000_000] {
                raw.push(row("dsm", n, 15 << 20, 6, rep, 4.0));
                raw.push(row("srm", n, 15 << 20, 6, rep, 3.0));
            }
            for d in [1, 2, 6] {
                raw.push(row("dsm", 4_000_000, 24 << 20, d, rep, 8.0));
                raw.push(row("srm", 4_000_000, 24 << 20, d, rep, 6.0));
            }
        }
        summarise(&raw)
    }

    #[test]
    fn barve_and_vitter_judged_over_every_setting() {
        let c = claims(&summary_of_two_reps());
        assert_eq!(c.len(), 2, "{c:#?}");
        assert_eq!(c[0].verdict, Verdict::Holds, "{c:#?}");
        assert_eq!(
            c[0].measurement,
            "of 5 settings both ran: SRM fewer passes in 5, as many in 0, more in 0"
        );
        assert_eq!(c[1].verdict, Verdict::Holds);
        assert!(
            c[1].measurement.contains("SRM faster in 5, slower in 0")
                && c[1].measurement.ends_with("0.75–0.75)")
        );
        // One repetition: the passes (counts) are judged, the times are not.
        let c = claims(&summary());
        assert_eq!((c[0].verdict, c[1].verdict), (Verdict::Holds, Verdict::OneRun), "{c:#?}");
        assert!(table_markdown(&summary()).contains("| one run: no verdict |"));
        // DSM faster in one setting, SRM in the rest: not borne out.
        let mut raw = Vec::new();
        for rep in [1, 2] {
            raw.push(row("dsm", 1_000_000, 15 << 20, 6, rep, 2.0));
            raw.push(row("srm", 1_000_000, 15 << 20, 6, rep, 3.0));
            raw.push(row("dsm", 2_000_000, 15 << 20, 6, rep, 5.0));
            raw.push(row("srm", 2_000_000, 15 << 20, 6, rep, 4.0));
        }
        assert_eq!(claims(&summarise(&raw))[1].verdict, Verdict::Noise);
        assert!(table_markdown(&summarise(&raw)).contains("## Beside Barve & Vitter's conclusions"));
        assert!(claims(&[]).is_empty());
    }

    #[test]
    fn markdown_and_text() {
        let md = table_markdown(&summary());
        assert!(md.contains("## M = 15M, D = 6"), "{md}");
        assert!(
            md.contains("| N | U | DSM passes | DSM R | DSM merge s | DSM MiB/s | SRM passes | SRM R |"),
            "{md}"
        );
        assert!(md.contains("| 1e6 | 10 | 2 | 4, 3 | 4.00 |"), "{md}");
        assert!(md.contains("| 1.010 | 0.75 |"), "{md}");
        assert!(md.contains("|---:|---:|"), "{md}");
        let text = format_table(&summary());
        assert!(text.lines().any(|l| l.trim_start().starts_with("N  ")), "{text}");
        assert!(text.contains("D sweep"), "{text}");
        // A method missing from a point: dashes, no ratio.
        let only_srm: Vec<SummaryRow> = summary().into_iter().filter(|r| r.method == "srm").collect();
        let md = table_markdown(&only_srm);
        assert!(md.contains("| 1e6 | 10 | – | – | – | – | 1 | 10 |"), "{md}");
    }
}
