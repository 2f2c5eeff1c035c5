//! `emsort gen`: write a seeded data file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use emsort_sort::gen::{generate, Distribution, GenSpec, Text};
use emsort_sort::Format;

use crate::progress::Bar;

/// Generate a seeded data file. The same seed always gives the same bytes.
///
/// Binary formats are native-endian; records get a random key and their
/// index (in hex) as payload; text lines are printable ASCII; `csv` makes
/// typed CSV lines `id,category,amount,date` (e.g.
/// `5419032,electronics,1234.56,2024-03-17`) to sort by key
/// (`emsort sort -t, -k3,3n`): ids from 1 to 0.9 x the line count (some
/// repeat), 20 categories, amounts with two decimals (1 in 32 negative),
/// dates from 2015 to 2024. A csv file is sorted and verified as `lines`.
/// `csv-export` makes a CSV export with a header `id,name,city,amount,date,note`
/// whose quoted fields hold commas, doubled quotes and newlines (one record in 8
/// spans two lines), to sort with `emsort sort --csv --header -k amount:n`.
/// `jsonl` makes JSON events, one a line, for `emsort sort --jsonl`
/// (`{"ts":…,"event":…,"user":{"id":…,"name":…,"country":…},"amount":…,"tags":[…],"ok":…}`),
/// with nulls, missing fields, `\u` escapes, repeated timestamps and
/// repeated lines. `words` makes natural-language-like words, one a line
/// (about 10 bytes), to sort in a locale (`LC_ALL=en_US.UTF-8 emsort sort`):
/// Zipf-distributed, so many repeat; lower case, capitalised or upper case;
/// accented letters in UTF-8; some lines with a space, a hyphen or an
/// apostrophe.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
    emsort gen --format u32 --count 268435456 -o data.u32        # 1 GiB of random u32\n  \
    emsort gen --format rec:100:0:10 --count 1e7 -o recs.bin     # Sort Benchmark-like records\n  \
    emsort gen --format lines --bytes 1G --line-len 5..80 -o text.txt\n  \
    emsort gen --format csv --bytes 1G -o sales.csv              # about 1 GiB of CSV lines\n  \
    emsort gen --format csv-export --bytes 1G -o export.csv      # quoted fields, a header\n  \
    emsort gen --format jsonl --count 1e6 -o events.jsonl        # a million JSON events\n  \
    emsort gen --format words --bytes 1G -o words.txt            # words to sort in a locale")]
pub struct GenArgs {
    /// u32, i32, u64, i64, f32, f64, rec:SIZE:KEY_OFFSET:KEY_LEN, lines, csv, csv-export, jsonl or
    /// words.
    #[arg(long, short = 'f', default_value = "u32", value_parser = parse_kind)]
    format: Kind,
    /// Number of items (fixed-size formats) or of lines (csv, jsonl, words); accepts 1e6, 1000000,
    /// 1M (= 2^20).
    #[arg(long, short = 'n', value_parser = emsort_io::parse_count)]
    count: Option<u64>,
    /// Total size for `--format lines` (exact) or `csv`, `jsonl`, `words` (about: whole lines), with
    /// K/M/G suffixes.
    #[arg(long, value_parser = parse_bytes)]
    bytes: Option<u64>,
    /// Line length range without the newline, MIN..MAX (`lines`).
    #[arg(long, default_value = "10..100", value_parser = parse_range)]
    line_len: (usize, usize),
    /// uniform, sorted, reverse, few-distinct (16 values) or zipf (s = 1.1 over 10^6 values);
    /// csv, csv-export, jsonl and words have their own distributions only.
    #[arg(long, default_value = "uniform", value_parser = clap::value_parser!(Distribution))]
    dist: Distribution,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// How to write: a stream kind (syscall, stdio, buffered, mmap, direct, uring).
    /// O_DIRECT by default: on many virtual machines the page cache's write-back
    /// is slower than the device.
    #[arg(long, default_value = "direct", value_parser = clap::value_parser!(emsort_io::StreamKind))]
    io: emsort_io::StreamKind,
    /// Block size for --io, with K/M/G suffixes.
    #[arg(long, default_value = "8M", value_parser = parse_bytes)]
    block_size: u64,
    /// The file to write (written beside and renamed when complete).
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    quiet: bool,
}

/// What `--format` names: a format emsort sorts, or `csv` (text lines made
/// by the CSV generator).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Format(Format),
    Csv,
    CsvExport,
    Jsonl,
    Words,
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "csv" => return Ok(Kind::Csv),
        "csv-export" => return Ok(Kind::CsvExport),
        "jsonl" => return Ok(Kind::Jsonl),
        "words" => return Ok(Kind::Words),
        _ => {}
    }
    s.parse::<Format>().map(Kind::Format).map_err(|e| {
        format!(
            "{e} (or csv, typed CSV lines; csv-export, a quoted CSV with a header; jsonl, JSON events; \
             words, words to sort in a locale)"
        )
    })
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    emsort_io::parse_size(s)
}

fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("invalid range '{s}' (expected MIN..MAX, e.g. 10..100)");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a > b {
        return Err(format!("invalid range '{s}': MIN is larger than MAX"));
    }
    Ok((a, b))
}

pub fn run(a: GenArgs) -> anyhow::Result<ExitCode> {
    let mut spec = match (a.format, a.count, a.bytes) {
        (Kind::Csv, Some(n), None) => GenSpec::csv(n),
        (Kind::Csv, None, Some(b)) => GenSpec::csv_bytes(b),
        (Kind::Csv, _, _) => bail!("--format csv needs either --count LINES or --bytes SIZE"),
        (Kind::CsvExport, Some(n), None) => GenSpec::csv_export(n),
        (Kind::CsvExport, None, Some(b)) => GenSpec::csv_export_bytes(b),
        (Kind::CsvExport, _, _) => bail!("--format csv-export needs either --count RECORDS or --bytes SIZE"),
        (Kind::Jsonl, Some(n), None) => GenSpec::jsonl(n),
        (Kind::Jsonl, None, Some(b)) => GenSpec::jsonl_bytes(b),
        (Kind::Jsonl, _, _) => bail!("--format jsonl needs either --count LINES or --bytes SIZE"),
        (Kind::Words, Some(n), None) => GenSpec::words(n),
        (Kind::Words, None, Some(b)) => GenSpec::words_bytes(b),
        (Kind::Words, _, _) => bail!("--format words needs either --count LINES or --bytes SIZE"),
        (Kind::Format(Format::Lines), None, Some(b)) => GenSpec::lines(b),
        (Kind::Format(Format::Lines), _, _) => bail!("--format lines needs --bytes SIZE (and no --count)"),
        (Kind::Format(f), Some(n), None) => GenSpec::items(f, n),
        (Kind::Format(f), _, _) => bail!("--format {f} needs --count N (and no --bytes)"),
    };
    if spec.text != Text::Printable && a.dist != Distribution::Uniform {
        bail!(
            "--format csv, csv-export, jsonl and words draw their values their own way: --dist {} does \
             not apply",
            a.dist
        );
    }
    let name = match a.format {
        Kind::Csv => "csv".to_string(),
        Kind::CsvExport => "csv-export".to_string(),
        Kind::Jsonl => "jsonl".to_string(),
        Kind::Words => "words".to_string(),
        Kind::Format(f) => f.to_string(),
    };
    spec.line_len = a.line_len;
    spec.dist = a.dist;
    spec.seed = a.seed;
    spec.io = emsort_io::StreamConfig::new(a.io).block_size(a.block_size as usize);
    let bar = Bar::new(a.quiet);
    let t = Instant::now();
    let stats = generate(&spec, &a.output, &bar, crate::interrupt::flag())
        .with_context(|| format!("cannot generate {}", a.output.display()))?;
    if !a.quiet {
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "wrote {} items, {} bytes of {} ({}) to {} in {:.2} s ({:.0} MiB/s)",
            stats.items,
            stats.bytes,
            name,
            a.dist,
            a.output.display(),
            secs,
            stats.bytes as f64 / (1 << 20) as f64 / secs.max(1e-9)
        );
    }
    Ok(ExitCode::SUCCESS)
}
