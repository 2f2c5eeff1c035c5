//! The trace campaign's texts, made from its summary (and `machine.json`):
//! the terminal table, the Chalmers thesis' claims beside our measurement, and
//! `README.md`.
//!
//! The claims are the Chalmers thesis' (Bäckemo and Olsson, "Minimizing
//! read bottlenecks in I/O bound systems", 2022, chapter 5). Its
//! concrete claims about the traces, each judged per trace ([`claims`]):
//!
//! 1. §5.4: "*AdaptiveReader* was always at least as good as the best
//!    non-adaptive reader": the adaptive reader's median time is at most
//!    [`AS_FAST`] × the best fixed reader's (within 5 %, issue 5 §5's
//!    target), on every trace;
//! 2. §5.2.1 and §5.3: on `ct` and `im`, "*MappedReader* and
//!    *AdaptiveReader*" are the fastest: `mmap` and `adaptive` are the two
//!    readers of least median time;
//! 3. §5.2.2: on `am`, *BufferedReader4MB* beats *MappedReader*: `pread`
//!    with B = 4 MiB (reads in pieces of at most B, the thesis' buffered
//!    read with a 4 MB block) takes less time than `mmap`;
//! 4. §5.4: only a workload that mixes small and large requests lets the
//!    adaptive reader be "significantly" faster than the best fixed one:
//!    below [`SIGNIFICANT`] × its time on `mixed`, not below on `ct`, `am`
//!    and `im`.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::plots::describe_plot;
use super::record::{is_fixed, SummaryRow};
use crate::chart::format_seconds;
use crate::claims::{Claim, Verdict};

/// "At least as fast": a median time at most this many times the other's.
pub const AS_FAST: f64 = 1.05;

/// "Significantly faster": a median time below this many times the other's.
pub const SIGNIFICANT: f64 = 0.95;

fn find<'a>(rows: &'a [SummaryRow], trace: &str, reader: &str) -> Option<&'a SummaryRow> {
    rows.iter().find(|r| r.trace == trace && r.reader == reader)
}

/// The fewest rounds of the rows on `traces` (see [`Verdict::from_reps`]).
fn rounds(rows: &[SummaryRow], traces: &[&str]) -> usize {
    rows.iter().filter(|r| traces.contains(&r.trace.as_str())).map(|r| r.rounds).min().unwrap_or(0)
}

fn traces(rows: &[SummaryRow]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        if !v.contains(&r.trace) {
            v.push(r.trace.clone());
        }
    }
    v
}

fn x(v: f64) -> String {
    format!("{v:.2}×")
}

/// The adaptive reader against the best fixed one on `trace`, in words:
/// `0.85× pread (paired 0.81×, faster in 39 of 45 rounds)`.
fn adaptive_vs_best(a: &SummaryRow) -> String {
    let mut s = format!("{} {}", a.ratio_to_best_fixed.map_or("-".into(), x), a.best_fixed);
    if let (Some(p), Some(w)) = (a.paired_to_best_fixed, a.rounds_faster) {
        if a.rounds > 1 {
            let _ = write!(s, " (paired {}, faster in {w} of {} rounds)", x(p), a.rounds);
        }
    }
    s
}

/// The thesis' claims (see the module docs) that the summary's traces can
/// judge, in order.
pub fn claims(rows: &[SummaryRow]) -> Vec<Claim> {
    let mut out = Vec::new();
    for t in traces(rows) {
        if let Some(a) = find(rows, &t, "adaptive").filter(|a| a.ratio_to_best_fixed.is_some()) {
            let r = a.ratio_to_best_fixed.unwrap_or(f64::NAN);
            out.push(Claim {
                claim: format!(
                    "§5.4: the adaptive reader is at least as fast as the best fixed reader — `{t}`"
                ),
                measurement: format!(
                    "adaptive {} vs {} {}: {}",
                    format_seconds(a.median_s),
                    a.best_fixed,
                    format_seconds(a.median_s / r),
                    adaptive_vs_best(a)
                ),
                verdict: Verdict::of(r <= AS_FAST).from_reps(rounds(rows, &[&t])),
            });
        }
    }
    for (t, section) in [("ct", "§5.2.1"), ("im", "§5.3")] {
        let mut on: Vec<&SummaryRow> = rows.iter().filter(|r| r.trace == t).collect();
        if on.len() < 3 || find(rows, t, "mmap").is_none() || find(rows, t, "adaptive").is_none() {
            continue;
        }
        on.sort_by(|a, b| a.median_s.total_cmp(&b.median_s));
        let two = [on[0].reader.as_str(), on[1].reader.as_str()];
        out.push(Claim {
            claim: format!("{section}: on `{t}`, mmap and the adaptive reader are the fastest readers"),
            measurement: format!(
                "fastest {} {}, {} {}; next {} {}",
                on[0].reader,
                format_seconds(on[0].median_s),
                on[1].reader,
                format_seconds(on[1].median_s),
                on[2].reader,
                format_seconds(on[2].median_s)
            ),
            verdict: Verdict::of(two.contains(&"mmap") && two.contains(&"adaptive"))
                .from_reps(rounds(rows, &[t])),
        });
    }
    if let (Some(p), Some(m)) = (find(rows, "am", "pread"), find(rows, "am", "mmap")) {
        out.push(Claim {
            claim: "§5.2.2: on `am`, buffered reads of 4 MB blocks (pread, B = 4M) beat mmap".into(),
            measurement: format!(
                "pread {}, mmap {} (pread {} mmap's time)",
                format_seconds(p.median_s),
                format_seconds(m.median_s),
                x(p.median_s / m.median_s)
            ),
            verdict: crate::claims::faster((p.median_s, p.min_s, p.max_s), (m.median_s, m.min_s, m.max_s))
                .from_reps(p.rounds.min(m.rounds)),
        });
    }
    let ratio = |t: &str| find(rows, t, "adaptive").and_then(|a| a.ratio_to_best_fixed);
    let pure: Vec<(&str, f64)> =
        ["ct", "am", "im"].into_iter().filter_map(|t| Some((t, ratio(t)?))).collect();
    if let Some(mixed) = ratio("mixed").filter(|_| !pure.is_empty()) {
        let others: Vec<String> = pure.iter().map(|(t, r)| format!("{t} {}", x(*r))).collect();
        out.push(Claim {
            claim: "§5.4: only a mix of small and large requests lets the adaptive reader beat the best \
                    fixed reader significantly"
                .into(),
            measurement: format!("adaptive ÷ best fixed reader: mixed {}; {}", x(mixed), others.join(", ")),
            verdict: Verdict::of(mixed < SIGNIFICANT && pure.iter().all(|&(_, r)| r >= SIGNIFICANT))
                .from_reps(rounds(rows, &["mixed", "ct", "am", "im"])),
        });
    }
    out
}

/// Per trace: the best fixed reader, the adaptive reader's time and its
/// ratios, as an aligned text table (the terminal's headline).
pub fn format_table(rows: &[SummaryRow]) -> String {
    let mut s = format!(
        "{:<7} {:>9} {:>10} {:>10} {:>10} {:>14} {:>13}\n",
        "trace", "best fixed", "its time", "adaptive", "÷ best", "paired ÷ best", "÷ mmap"
    );
    for t in traces(rows) {
        let Some(a) = find(rows, &t, "adaptive") else { continue };
        let best = find(rows, &t, &a.best_fixed);
        let _ = writeln!(
            s,
            "{:<7} {:>9} {:>10} {:>10} {:>10} {:>14} {:>13}",
            t,
            a.best_fixed,
            best.map_or("-".into(), |b| format_seconds(b.median_s)),
            format_seconds(a.median_s),
            a.ratio_to_best_fixed.map_or("-".into(), x),
            a.paired_to_best_fixed.filter(|_| a.rounds > 1).map_or("-".into(), x),
            a.ratio_to_mmap.map_or("-".into(), x),
        );
    }
    s
}

/// A field of `machine.json` as text (`unknown` when missing).
pub(crate) fn fact(m: &serde_json::Value, key: &str) -> String {
    match m.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "unknown".into(),
        Some(v) => v.to_string(),
    }
}

/// `README.md`: the command, the machine, the headline per trace, every
/// reader's times, the thesis' claims beside our measurement, the files.
/// Made from the summary, the machine facts and the plots' names alone,
/// so `--plot-only` writes the same text.
pub fn readme_text(
    rows: &[SummaryRow],
    machine: &serde_json::Value,
    calibration: Option<&str>,
    plots: &[PathBuf],
) -> String {
    let mut s = String::new();
    let rounds = rows.iter().map(|r| r.rounds).max().unwrap_or(0);
    let _ = writeln!(s, "# Readers on the thesis' traces: trace replays\n");
    let _ = writeln!(
        s,
        "Written by `emsort bench readers --traces` from `raw.csv` and `machine.json`; \
         `emsort bench readers --plot-only DIR` writes it again (with `summary.csv` and `plots/`) \
         from those files alone.\n"
    );
    let _ = writeln!(s, "```sh\n{}\n```\n", fact(machine, "command_line"));
    let scales: Vec<String> = traces(rows)
        .iter()
        .filter_map(|t| rows.iter().find(|r| &r.trace == t).map(|r| format!("{t} {}", r.scale)))
        .collect();
    let _ = writeln!(
        s,
        "Each trace (`emsort gen-trace`, scales {}) replayed by every reader, {rounds} round{} \
         (each round every reader once, in a Williams order), every run on a cold cache \
         (`{}`); the adaptive reader with the calibration measured first into `calibration` \
         (`emsort calibrate{}`). emsort {}, {}; {} ({} cores), {}; data on {} (`{}`) with \
         `read_ahead_kb` {} (`{}`); free page reporting order {}.\n",
        scales.join(", "),
        if rounds == 1 { "" } else { "s" },
        fact(machine, "cache_method"),
        if machine.get("quick").and_then(|q| q.as_bool()) == Some(true) { " --quick" } else { "" },
        fact(machine, "emsort_version"),
        fact(machine, "date"),
        fact(machine, "cpu_model"),
        fact(machine, "cores"),
        fact(machine, "kernel"),
        fact(machine, "fs_type"),
        fact(machine, "device"),
        fact(machine, "read_ahead_kb"),
        fact(machine, "read_ahead_kb_file"),
        fact(machine, "page_reporting_order"),
    );
    if machine.get("quick").and_then(|q| q.as_bool()) == Some(true) {
        let _ = writeln!(
            s,
            "**A `--quick` run**: tiny traces, one round, a rough calibration. It checks that the \
             experiment runs; its times say little.\n"
        );
    }
    let _ = writeln!(s, "## Headline: the adaptive reader against the best fixed reader and mmap\n");
    let _ = writeln!(
        s,
        "Medians of the rounds; \"paired\" is the median over the rounds of the adaptive reader's \
         time over the best fixed reader's in the same round.\n"
    );
    let _ = writeln!(
        s,
        "| trace | requests | bytes | best fixed reader | its time | adaptive | adaptive ÷ best fixed | adaptive ÷ mmap |"
    );
    let _ = writeln!(s, "|---|---:|---:|---|---:|---:|---|---:|");
    for t in traces(rows) {
        let Some(a) = find(rows, &t, "adaptive") else { continue };
        let best = find(rows, &t, &a.best_fixed);
        let _ = writeln!(
            s,
            "| {t} | {} | {} | {} | {} | {} | {} | {} |",
            a.requests,
            crate::replay::human_bytes(a.bytes_read),
            a.best_fixed,
            best.map_or("-".into(), |b| format_seconds(b.median_s)),
            format_seconds(a.median_s),
            adaptive_vs_best(a),
            a.ratio_to_mmap.map_or("-".into(), x)
        );
    }
    let _ = writeln!(s, "\nWhat the adaptive reader did with the bytes (all rounds):\n");
    let _ = writeln!(s, "| trace | mmap | pread | io_uring | direct read-ahead |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    for t in traces(rows) {
        let Some(a) = find(rows, &t, "adaptive") else { continue };
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1} %", v * 100.0));
        let _ = writeln!(
            s,
            "| {t} | {} | {} | {} | {} |",
            pct(a.mmap_share),
            pct(a.pread_share),
            pct(a.uring_share),
            pct(a.direct_share)
        );
    }
    let _ = writeln!(s, "\n## Every reader (median; fastest – slowest round)\n");
    let mut readers: Vec<String> = Vec::new();
    for r in rows {
        if !readers.contains(&r.reader) {
            readers.push(r.reader.clone());
        }
    }
    readers.sort_by_key(|r| super::record::reader_rank(r));
    let _ = writeln!(s, "| trace | {} |", readers.join(" | "));
    let _ = writeln!(s, "|---|{}", "---:|".repeat(readers.len()));
    for t in traces(rows) {
        let cells: Vec<String> = readers
            .iter()
            .map(|rd| match find(rows, &t, rd) {
                Some(r) if r.rounds > 1 => format!(
                    "{} ({} – {})",
                    format_seconds(r.median_s),
                    format_seconds(r.min_s),
                    format_seconds(r.max_s)
                ),
                Some(r) => format_seconds(r.median_s),
                None => "-".into(),
            })
            .collect();
        let _ = writeln!(s, "| {t} | {} |", cells.join(" | "));
    }
    let fixed: Vec<&str> = readers.iter().map(String::as_str).filter(|r| is_fixed(r)).collect();
    let _ = writeln!(s, "\nFixed readers: {}.", fixed.join(", "));
    let _ = writeln!(
        s,
        "\n## Beside the Chalmers thesis (Bäckemo & Olsson, \"Minimizing read bottlenecks in I/O bound \
         systems\", 2022, chapter 5)\n"
    );
    let _ = writeln!(
        s,
        "\"At least as fast\" is a median time at most {AS_FAST}× the other's (within 5 %); \
         \"significantly faster\" is below {SIGNIFICANT}×. The thesis measured on Windows and \
         NVMe with the engine's own logs; these traces are synthetic ones with the logs' \
         published shares of large requests. A claim judged from one round says *one run: no \
         verdict*.\n"
    );
    s.push_str(&crate::claims::table(&claims(rows)));
    if let Some(c) = calibration {
        let values: Vec<&str> = c.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
        let _ = writeln!(s, "\n## The calibration the adaptive reader used (`calibration`)\n");
        let _ = writeln!(s, "```\n{}\n```", values.join("\n"));
    }
    let _ = writeln!(s, "\n## Files\n");
    let _ = writeln!(
        s,
        "- `raw.csv`: a row per trace × reader × round (seconds, bytes read, MiB/s, latency \
         percentiles, the adaptive reader's choices)\n\
         - `summary.csv`: per trace × reader the median, fastest and slowest time and the ratios \
         to the best fixed reader and to mmap (of medians, and paired by round)\n\
         - `machine.json`: the command line, emsort's version, the machine (CPU, memory, kernel, \
         file system, device and its `read_ahead_kb`, free page reporting), the traces\n\
         - `calibration`, `calibrate.txt`: the adaptive reader's calibration and the measurements \
         it rests on"
    );
    for p in plots {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let _ = writeln!(s, "- `plots/{name}`: {}", describe_plot(&name));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: &str, reader: &str, median_s: f64, best: (&str, f64)) -> SummaryRow {
        SummaryRow {
            trace: trace.into(),
            scale: 1.0,
            reader: reader.into(),
            rounds: 5,
            requests: 100,
            bytes_read: 1 << 20,
            median_s,
            min_s: median_s * 0.9,
            max_s: median_s * 1.1,
            median_mib_s: 1.0 / median_s,
            best_fixed: best.0.into(),
            ratio_to_best_fixed: Some(median_s / best.1),
            ratio_to_mmap: None,
            paired_to_best_fixed: Some(median_s / best.1),
            paired_min: None,
            paired_max: None,
            rounds_faster: Some(if median_s < best.1 { 5 } else { 0 }),
            mmap_share: (reader == "adaptive").then_some(0.25),
            pread_share: (reader == "adaptive").then_some(0.75),
            uring_share: (reader == "adaptive").then_some(0.0),
            direct_share: (reader == "adaptive").then_some(0.0),
        }
    }

    #[test]
    fn claims_are_judged_per_trace() {
        let rows = vec![
            row("ct", "mmap", 1.0, ("mmap", 1.0)),
            row("ct", "pread", 2.0, ("mmap", 1.0)),
            row("ct", "adaptive", 1.04, ("mmap", 1.0)),
            row("am", "mmap", 3.0, ("pread", 2.0)),
            row("am", "pread", 2.0, ("pread", 2.0)),
            row("am", "adaptive", 2.2, ("pread", 2.0)),
            row("mixed", "mmap", 1.0, ("mmap", 1.0)),
            row("mixed", "adaptive", 0.6, ("mmap", 1.0)),
        ];
        let c = claims(&rows);
        let got: Vec<(&str, bool)> =
            c.iter().map(|c| (c.claim.as_str(), c.verdict == Verdict::Holds)).collect();
        assert_eq!(got.len(), 6, "{c:#?}");
        // ct 1.04× holds (within 5 %), am 1.10× differs, mixed 0.6× holds.
        assert!(got[0].0.ends_with("`ct`") && got[0].1);
        assert!(got[1].0.ends_with("`am`") && !got[1].1);
        assert!(got[2].0.ends_with("`mixed`") && got[2].1);
        assert!(
            c[1].measurement.starts_with(
                "adaptive 2.2 s vs pread 2 s: 1.10× pread (paired 1.10×, faster in 0 of 5 rounds)"
            ),
            "{}",
            c[1].measurement
        );
        // ct: mmap and adaptive fastest.
        assert!(got[3].0.contains("on `ct`") && got[3].1, "{c:#?}");
        assert_eq!(c[3].measurement, "fastest mmap 1 s, adaptive 1.04 s; next pread 2 s");
        // am: pread beats mmap.
        assert!(got[4].1 && c[4].measurement.contains("0.67×"), "{c:#?}");
        // Only the mix: ct 1.04 and am 1.10 are not significant, mixed 0.6 is.
        assert!(
            got[5].1 && c[5].measurement == "adaptive ÷ best fixed reader: mixed 0.60×; ct 1.04×, am 1.10×"
        );
        let t = format_table(&rows);
        assert_eq!(t.lines().count(), 4, "{t}");
        assert!(t.lines().nth(3).unwrap().starts_with("mixed"), "{t}");
        let m = serde_json::json!({"command_line": "emsort bench readers --traces", "quick": true});
        let cal = "# measured by: x\nmax_block = 256K\n";
        let r = readme_text(&rows, &m, Some(cal), &[PathBuf::from("x/plots/traces_time.svg")]);
        assert!(r.contains("| ct | 25.0 % | 75.0 % | 0.0 % | 0.0 % |"), "{r}");
        assert!(r.contains("(`calibration`)\n\n```\nmax_block = 256K\n```"), "{r}");
        assert!(r.contains("```sh\nemsort bench readers --traces\n```"), "{r}");
        assert!(r.contains("| mixed | 100 | 1.0 MiB | mmap | 1 s | 600 ms | 0.60× mmap (paired 0.60×, faster in 5 of 5 rounds) | - |"), "{r}");
        assert!(r.contains("| published claim | our measurement | verdict |") && r.contains("| differs |"));
        assert!(r.contains("- `plots/traces_time.svg`: time per replay"), "{r}");
        assert!(r.contains("A `--quick` run"));
    }
}
