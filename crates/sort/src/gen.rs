//! Seeded data generation for every format.
//!
//! [`generate`] writes a file of items drawn from a [`Distribution`]. The
//! file is cut into chunks of 1 Mi items (4 MiB of text for `lines`); chunk
//! *c* draws from its own generator seeded by `(seed, c)`, so chunks are made
//! in parallel on all cores and the same seed gives the same bytes whatever
//! the thread count. A writer thread drains finished chunks while the next
//! batch is generated, so the disk rarely waits.
//!
//! How a distribution becomes items: every fixed-size item is the image of a
//! 64-bit *position* p under a monotone map of its format (u32: the top 32
//! bits; i32/i64: the sign bit flipped; floats: a point of [−1e9, 1e9);
//! records: the key's first 8 bytes hold p big-endian). `uniform` draws p at
//! random; `sorted` makes p strictly increase with the item's index
//! (p_i ∈ [i·2⁶⁴/N, (i+1)·2⁶⁴/N)); `reverse` is `sorted` backwards;
//! `few-distinct` picks one of 16 random positions; `zipf` picks a rank
//! from Zipf(10⁶ values, s = 1.1) and hashes it to a position. Text lines
//! take printable ASCII (0x20–0x7E); `sorted`/`reverse` lines start with 16
//! hex digits that increase (decrease) from line to line, so they are at
//! least 16 bytes long.
//!
//! CSV lines ([`Text::Csv`], `emsort gen --format csv`) are typed rows
//! `id,category,amount,date` for sorts by key (`sort -t, -k3,3n`):
//!
//! ```text
//! 5419032,electronics,1234.56,2024-03-17
//! 211807,pets,-87.10,2016-11-02
//! ```
//!
//! - `id`: an integer drawn uniformly from 1..=R with R = 0.9 × the line
//!   count (at least 1), so some ids repeat (`-k1,1n -u` drops about a
//!   third of the lines) and the lines are not in id order;
//! - `category`: one of 20 words of 4 to 16 letters ([`CSV_CATEGORIES`]);
//! - `amount`: a decimal with two places, up to 2 to 6 integer digits
//!   (the digit count drawn first, then the value), negative one time in
//!   32;
//! - `date`: an ISO date from 2015-01-01 to 2024-12-31.
//!
//! A CSV export ([`Text::CsvExport`], `emsort gen --format csv-export`) is
//! what spreadsheets and databases write: a header, then records
//!
//! ```text
//! id,name,city,amount,date,note
//! 81,"Garcia, Maria",New York,1234.56,2019-06-30,
//! 7,"Smith, John",Paris,-8.10,2024-01-02,"said ""call me""
//! back, twice"
//! ```
//!
//! with `id`, `amount` and `date` as above; `name` always quoted (`"Last,
//! First"` of 24 × 24 names); `city` one of 16, some with a space; `note`
//! empty half the time, else a word, a quoted phrase with a comma, or a
//! quoted text with doubled quotes and a newline (one record in 8 spans
//! two lines). `--bytes SIZE` takes the mean record length from the first
//! chunk.
//!
//! The file is cut into chunks of 64 Ki lines (records), each from its own
//! seeded generator as above. `--count N` gives N lines; `--bytes SIZE` gives
//! about SIZE bytes of whole lines (N = SIZE / the expected line length,
//! [`GenSpec::csv_bytes`]). The sort side reads the file as `lines`.
//!
//! JSON lines ([`Text::Jsonl`], `emsort gen --format jsonl`) are events
//! for `sort --jsonl` (one object a line, about 125 bytes):
//!
//! ```text
//! {"ts":1732869375836,"event":"view","user":{"id":11889,"name":"o'brien","country":"US"},"amount":-17.49,"tags":["vip"],"ok":true}
//! ```
//!
//! - `ts`: milliseconds in a span of 10⁹ from 1.7·10¹²; one line in 8
//!   repeats the previous line's, one in 64 is a string of digits;
//! - `user`: missing one time in 32, `null` one in 32, else an object
//!   `id` (1..=10⁵), `name` (one of [`JSONL_NAMES`], some written with
//!   `\u` escapes and surrogate pairs, some as raw UTF-8), `country`
//!   (missing one time in 8);
//! - `amount`: two decimals, negative one time in 16, in exponent form one
//!   in 32, `null` one in 32;
//! - `tags`: 0 to 3 words, missing one time in 8;
//! - `ok`: a boolean; one line in 16 has `ts` after `user`, and one in 50
//!   repeats the previous line whole.
//!
//! Chunks of 64 Ki lines as for CSV; `--count N` gives N lines, `--bytes
//! SIZE` about SIZE bytes (N from the mean length of a sample).
//!
//! Words ([`Text::Words`], `emsort gen --format words`) are text to sort
//! in a locale (`LC_ALL=en_US.UTF-8 sort`), one a line, about 10 bytes:
//!
//! ```text
//! châonch
//! onravianße
//! ISMALANNOËMÜ
//! Stögäpo
//! d'vistögessømo
//! çaunlystö-cefamoœu
//! Noëbristölà Châderßefa
//! ```
//!
//! - a vocabulary of 60 000 words made of 64 syllables, some with
//!   accented letters in UTF-8 (é è ê ë à â ä ö ü ß ç ñ å ø æ œ); word *r*
//!   (from 0) has 1 + ⌊log₄(r + 1)⌋ / 2 syllables and 0 to 2 more, so
//!   frequent words are short;
//! - each word drawn by its rank from Zipf(60 000, s = 1.05), as words
//!   occur in text: a few very frequent, most rare, many lines repeated;
//! - lower case three times in four, else capitalised, or upper case one
//!   time in 25;
//! - one line in 16 holds two words and a space, one in 24 two joined by a
//!   hyphen, one in 48 an elision (`l'`, `d'`, `o'`, `L'`) and one in 96 a
//!   possessive `'s`.
//!
//! Chunks of 64 Ki lines as for CSV; `--count N` gives N lines, `--bytes
//! SIZE` about SIZE bytes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;

use emsort_io::{
    create_output_in, AtomicFile, Dest, Error, ErrorKind, OutputStream, Progress, StreamConfig, StreamKind,
};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution as _, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::format::{Format, RecordFormat};
use crate::method::cli_names;

/// How item values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Distribution {
    /// Independent uniform values.
    #[default]
    Uniform,
    /// Already in ascending order.
    Sorted,
    /// In descending order.
    Reverse,
    /// Only 16 distinct values, uniformly mixed.
    FewDistinct,
    /// Zipf-distributed over a million values (a few values very frequent).
    Zipf,
}

cli_names!(Distribution, "distribution", "uniform, sorted, reverse, few-distinct or zipf", {
    Uniform => "uniform",
    Sorted => "sorted",
    Reverse => "reverse",
    FewDistinct => "few-distinct",
    Zipf => "zipf",
});

/// What the lines of a `lines` file hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Text {
    /// Printable ASCII, lengths from [`GenSpec::line_len`], drawn by the
    /// distribution; [`GenSpec::bytes`] bytes.
    #[default]
    Printable,
    /// Typed CSV rows `id,category,amount,date` (see the module docs),
    /// [`GenSpec::count`] lines; uniform whatever the distribution.
    Csv,
    /// A CSV export as spreadsheets and databases write them: a header
    /// `id,name,city,amount,date,note`, then [`GenSpec::count`] records
    /// whose quoted fields hold separators, doubled quotes and newlines
    /// (see the module docs); uniform whatever the distribution.
    CsvExport,
    /// JSON events, one a line (see the module docs), [`GenSpec::count`]
    /// lines; uniform whatever the distribution.
    Jsonl,
    /// Words of a natural-language-like vocabulary, one a line (see the
    /// module docs), [`GenSpec::count`] lines; Zipf-distributed words
    /// whatever the distribution.
    Words,
}

/// The user names of JSON lines, as written in the JSON text: plain,
/// escaped (`\u00e9`, a surrogate pair), raw UTF-8, with a quote.
pub const JSONL_NAMES: [&str; 10] = [
    "ana",
    "bob",
    r"chlo\u00e9",
    "chloé",
    "dmitri",
    "eve",
    r"\u674e",
    r"\ud83d\ude00 smile",
    "o'brien",
    r#"say \"hi\""#,
];

/// The categories of CSV lines: 20 words of 4 to 16 letters.
pub const CSV_CATEGORIES: [&str; 20] = [
    "electronics",
    "books",
    "garden",
    "toys",
    "groceries",
    "clothing",
    "shoes",
    "jewelry",
    "sports",
    "automotive",
    "health",
    "beauty",
    "music",
    "movies",
    "software",
    "office-supplies",
    "pets",
    "baby",
    "tools",
    "home-improvement",
];

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenSpec {
    /// The format.
    pub format: Format,
    /// Number of items (fixed-size formats), of lines ([`Text::Csv`]).
    pub count: u64,
    /// Total size in bytes (`lines` of [`Text::Printable`]); the last line
    /// is cut to fit exactly.
    pub bytes: u64,
    /// What `lines` hold (ignored by the other formats).
    pub text: Text,
    /// Line length range without the newline, inclusive (`lines`).
    pub line_len: (usize, usize),
    /// The distribution.
    pub dist: Distribution,
    /// The seed: same seed, same bytes.
    pub seed: u64,
    /// How the file is written (default: `direct`, O_DIRECT with 8 MiB
    /// blocks: on this project's machines the page cache's write-back is
    /// several times slower than the device).
    pub io: StreamConfig,
}

impl GenSpec {
    /// `count` items of a fixed-size `format`, uniform, seed 42.
    pub fn items(format: Format, count: u64) -> GenSpec {
        GenSpec {
            format,
            count,
            bytes: 0,
            text: Text::Printable,
            line_len: (10, 100),
            dist: Distribution::Uniform,
            seed: 42,
            io: Self::default_io(),
        }
    }

    /// `bytes` bytes of text lines, uniform, seed 42.
    pub fn lines(bytes: u64) -> GenSpec {
        GenSpec { format: Format::Lines, bytes, ..GenSpec::items(Format::Lines, 0) }
    }

    /// `count` CSV lines ([`Text::Csv`]), seed 42.
    pub fn csv(count: u64) -> GenSpec {
        GenSpec { format: Format::Lines, count, text: Text::Csv, ..GenSpec::items(Format::Lines, 0) }
    }

    /// About `bytes` bytes of CSV lines: as many whole lines as `bytes`
    /// holds at the expected line length (within a fraction of a percent
    /// for a few MiB and more), seed 42.
    pub fn csv_bytes(bytes: u64) -> GenSpec {
        let mut n = (bytes / 36).max(1);
        for _ in 0..3 {
            n = ((bytes as f64 / csv_mean_line_len(n)).round() as u64).max(1);
        }
        GenSpec::csv(n)
    }

    /// `count` records of a CSV export after its header
    /// ([`Text::CsvExport`]), seed 42.
    pub fn csv_export(count: u64) -> GenSpec {
        GenSpec { text: Text::CsvExport, ..GenSpec::csv(count) }
    }

    /// About `bytes` bytes of a CSV export (whole records; the mean
    /// record length measured on the first chunk), seed 42.
    pub fn csv_export_bytes(bytes: u64) -> GenSpec {
        let spec = GenSpec::csv_export(CHUNK_CSV_LINES);
        let n = (bytes as f64 / export_mean_len(&spec)).round() as u64;
        GenSpec::csv_export(n.max(1))
    }

    /// `count` JSON lines ([`Text::Jsonl`]), seed 42.
    pub fn jsonl(count: u64) -> GenSpec {
        GenSpec { format: Format::Lines, count, text: Text::Jsonl, ..GenSpec::items(Format::Lines, 0) }
    }

    /// About `bytes` bytes of JSON lines (the count from the mean length
    /// of a sample of lines), seed 42.
    pub fn jsonl_bytes(bytes: u64) -> GenSpec {
        GenSpec::jsonl(((bytes as f64 / jsonl_mean_line_len()).round() as u64).max(1))
    }

    /// `count` lines of words ([`Text::Words`]), seed 42.
    pub fn words(count: u64) -> GenSpec {
        GenSpec { text: Text::Words, ..GenSpec::jsonl(count) }
    }

    /// About `bytes` bytes of words (the count from the mean length of a
    /// sample of lines), seed 42.
    pub fn words_bytes(bytes: u64) -> GenSpec {
        GenSpec::words(((bytes as f64 / words_mean_line_len()).round() as u64).max(1))
    }

    /// The default way to write: `direct` with 8 MiB blocks.
    pub fn default_io() -> StreamConfig {
        StreamConfig::new(StreamKind::Direct).block_size(8 << 20)
    }

    /// Total size of the file this spec makes (for CSV lines, the
    /// expected size).
    pub fn total_bytes(&self) -> u64 {
        match (self.format.item_size(), self.text) {
            (Some(s), _) => self.count * s as u64,
            (None, Text::Csv) => (self.count as f64 * csv_mean_line_len(self.count)).round() as u64,
            (None, Text::CsvExport) => {
                (EXPORT_HEADER.len() as f64 + self.count as f64 * export_mean_len(self)).round() as u64
            }
            (None, Text::Jsonl) => (self.count as f64 * jsonl_mean_line_len()).round() as u64,
            (None, Text::Words) => (self.count as f64 * words_mean_line_len()).round() as u64,
            (None, Text::Printable) => self.bytes,
        }
    }
}

const CHUNK_ITEMS: u64 = 1 << 20;
const CHUNK_TEXT: u64 = 4 << 20;
const ZIPF_VALUES: f64 = 1e6;
const ZIPF_S: f64 = 1.1;
const FEW: u64 = 16;

/// splitmix64: its step, then its finalizer.
fn mix(z: u64) -> u64 {
    crate::fingerprint::mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

fn chunk_rng(seed: u64, chunk: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(mix(seed ^ mix(chunk.wrapping_add(1))))
}

/// Draws the 64-bit position of item `i` of `n`.
fn position(dist: Distribution, i: u64, n: u64, seed: u64, rng: &mut impl Rng, zipf: &Zipf<f64>) -> u64 {
    match dist {
        Distribution::Uniform => rng.next_u64(),
        Distribution::Sorted | Distribution::Reverse => {
            let j = if dist == Distribution::Sorted { i } else { n - 1 - i };
            let lo = ((j as u128) << 64) / n as u128;
            let hi = (((j + 1) as u128) << 64) / n as u128;
            let width = (hi - lo) as u64; // ≥ 1 while n ≤ 2⁶⁴
            lo as u64 + if width > 1 { rng.next_u64() % width } else { 0 }
        }
        Distribution::FewDistinct => mix(seed ^ mix(rng.random_range(0..FEW))),
        Distribution::Zipf => mix(seed ^ mix(zipf.sample(rng) as u64)),
    }
}

/// Appends the item at position `p` in a fixed-size format.
fn emit(format: Format, p: u64, i: u64, rng: &mut impl Rng, exact_order: bool, out: &mut Vec<u8>) {
    match format {
        Format::U32 => out.extend_from_slice(&((p >> 32) as u32).to_ne_bytes()),
        Format::I32 => out.extend_from_slice(&(((p >> 32) as u32 ^ (1 << 31)) as i32).to_ne_bytes()),
        Format::U64 => out.extend_from_slice(&p.to_ne_bytes()),
        Format::I64 => out.extend_from_slice(&((p ^ (1 << 63)) as i64).to_ne_bytes()),
        Format::F32 => out.extend_from_slice(&(float_of(p) as f32).to_ne_bytes()),
        Format::F64 => out.extend_from_slice(&float_of(p).to_ne_bytes()),
        Format::Rec(r) => emit_record(r, p, i, rng, exact_order, out),
        Format::Lines => unreachable!("lines are generated by gen_lines"),
    }
}

fn float_of(p: u64) -> f64 {
    (p >> 11) as f64 / (1u64 << 53) as f64 * 2e9 - 1e9
}

/// A record: key = p big-endian (then random bytes, or zeros when the
/// order must be exact), payload = the item index in hex, padded with '.'.
fn emit_record(r: RecordFormat, p: u64, i: u64, rng: &mut impl Rng, exact_order: bool, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + r.size, b'.');
    let rec = &mut out[start..];
    let label = format!("{i:016x}");
    for (dst, src) in rec.iter_mut().zip(label.bytes()) {
        *dst = src;
    }
    let key = &mut rec[r.key_offset..r.key_offset + r.key_len];
    let pb = p.to_be_bytes();
    let n = key.len().min(8);
    key[..n].copy_from_slice(&pb[..n]);
    if exact_order {
        key[n..].fill(0);
    } else {
        rng.fill_bytes(&mut key[n..]);
    }
}

fn gen_fixed_chunk(spec: &GenSpec, chunk: u64, zipf: &Zipf<f64>) -> Vec<u8> {
    let size = spec.format.item_size().expect("fixed format");
    let first = chunk * CHUNK_ITEMS;
    let last = (first + CHUNK_ITEMS).min(spec.count);
    let mut rng = chunk_rng(spec.seed, chunk);
    let mut out = Vec::with_capacity((last - first) as usize * size);
    let exact = matches!(spec.dist, Distribution::Sorted | Distribution::Reverse);
    for i in first..last {
        let p = position(spec.dist, i, spec.count, spec.seed, &mut rng, zipf);
        emit(spec.format, p, i, &mut rng, exact, &mut out);
    }
    out
}

fn random_line(rng: &mut impl Rng, len: usize, out: &mut Vec<u8>) {
    out.extend((0..len).map(|_| rng.random_range(0x20u8..=0x7e)));
}

fn gen_text_chunk(spec: &GenSpec, chunk: u64, zipf: &Zipf<f64>) -> Vec<u8> {
    let start = chunk * CHUNK_TEXT;
    let size = (spec.bytes - start).min(CHUNK_TEXT) as usize;
    let mut rng = chunk_rng(spec.seed, chunk);
    let (lo, hi) = spec.line_len;
    let mut out = Vec::with_capacity(size + hi + 32);
    let mut j: u64 = 0;
    while out.len() < size {
        let len = rng.random_range(lo..=hi);
        let line_start = out.len();
        match spec.dist {
            Distribution::Uniform => random_line(&mut rng, len, &mut out),
            Distribution::Sorted | Distribution::Reverse => {
                let key = (chunk << 32) | j;
                let key = if spec.dist == Distribution::Sorted { key } else { !key };
                out.extend_from_slice(format!("{key:016x}").as_bytes());
                random_line(&mut rng, len.saturating_sub(16), &mut out);
            }
            Distribution::FewDistinct | Distribution::Zipf => {
                let v = if spec.dist == Distribution::Zipf {
                    zipf.sample(&mut rng) as u64
                } else {
                    rng.random_range(0..FEW)
                };
                // The line for value v is the same wherever it is drawn.
                let mut vr = chunk_rng(spec.seed ^ 0x11AE, v);
                let vlen = vr.random_range(lo..=hi);
                random_line(&mut vr, vlen, &mut out);
            }
        }
        j += 1;
        if out.len() >= size {
            // Cut the last line so the chunk is exactly `size` bytes.
            out.truncate(size.max(line_start + 1) - 1);
            if out.len() < line_start {
                out.truncate(line_start);
            }
        }
        out.push(b'\n');
    }
    debug_assert_eq!(out.len(), size);
    out
}

const CHUNK_CSV_LINES: u64 = 1 << 16;
/// First day of CSV dates (2015-01-01, days since 1970-01-01) and how many.
const CSV_DAY0: i64 = 16_436;
const CSV_DAYS: i64 = 3653;

/// The largest CSV id for `count` lines: 0.9 × count, at least 1.
fn csv_max_id(count: u64) -> u64 {
    (count / 10 * 9 + count % 10 * 9 / 10).max(1)
}

/// Mean decimal digits of the integers lo..=hi (0 has one digit).
fn mean_digits(lo: u64, hi: u64) -> f64 {
    let mut sum = 0.0;
    let mut start = 0u64;
    for d in 1..=20u32 {
        let end = if d == 20 { u64::MAX } else { 10u64.pow(d) - 1 };
        let (a, b) = (start.max(lo), end.min(hi));
        if a <= b {
            sum += (b - a + 1) as f64 * d as f64;
        }
        if end >= hi {
            break;
        }
        start = end + 1;
    }
    sum / (hi - lo + 1) as f64
}

/// The expected length of a CSV line (with its newline) in a file of
/// `count` lines.
fn csv_mean_line_len(count: u64) -> f64 {
    let id = mean_digits(1, csv_max_id(count));
    let category = CSV_CATEGORIES.iter().map(|c| c.len()).sum::<usize>() as f64 / CSV_CATEGORIES.len() as f64;
    let amount = (2..=6).map(|k| mean_digits(0, 10u64.pow(k) - 1)).sum::<f64>() / 5.0 + 3.0 + 1.0 / 32.0;
    id + category + amount + 10.0 + 3.0 + 1.0
}

/// Appends `v` in decimal, at least `width` digits (zero-padded).
fn push_uint(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 && buf.len() - i >= width {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// The civil date (year, month, day) of a day number since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u64, u64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Appends one CSV line `id,category,amount,date\n`.
fn csv_line(rng: &mut impl Rng, max_id: u64, out: &mut Vec<u8>) {
    push_uint(out, rng.random_range(1..=max_id), 1);
    out.push(b',');
    out.extend_from_slice(CSV_CATEGORIES[rng.random_range(0..CSV_CATEGORIES.len())].as_bytes());
    out.push(b',');
    push_amount_date(rng, out);
    out.push(b'\n');
}

/// Appends `amount,date` of a CSV line (module docs).
fn push_amount_date(rng: &mut impl Rng, out: &mut Vec<u8>) {
    let k = rng.random_range(2..=6u32);
    let cents = rng.random_range(0..10u64.pow(k + 2));
    if rng.random_range(0..32u32) == 0 && cents > 0 {
        out.push(b'-');
    }
    push_uint(out, cents / 100, 1);
    out.push(b'.');
    push_uint(out, cents % 100, 2);
    out.push(b',');
    let (y, m, d) = civil_from_days(CSV_DAY0 + rng.random_range(0..CSV_DAYS));
    push_uint(out, y as u64, 4);
    out.push(b'-');
    push_uint(out, m, 2);
    out.push(b'-');
    push_uint(out, d, 2);
}

fn gen_csv_chunk(spec: &GenSpec, chunk: u64, _: &Zipf<f64>) -> Vec<u8> {
    rows_chunk(spec, chunk, "", csv_line)
}

/// Chunk `chunk` of `spec.count` rows made by `row` (ids up to
/// [`csv_max_id`]), `header` first in the first chunk.
fn rows_chunk(
    spec: &GenSpec,
    chunk: u64,
    header: &str,
    row: fn(&mut Xoshiro256PlusPlus, u64, &mut Vec<u8>),
) -> Vec<u8> {
    let first = chunk * CHUNK_CSV_LINES;
    let rows = (spec.count - first).min(CHUNK_CSV_LINES);
    let mut rng = chunk_rng(spec.seed, chunk);
    let max_id = csv_max_id(spec.count);
    let mut out = Vec::with_capacity(rows as usize * 64);
    if chunk == 0 {
        out.extend_from_slice(header.as_bytes());
    }
    for _ in 0..rows {
        row(&mut rng, max_id, &mut out);
    }
    out
}

/// The header of a CSV export.
const EXPORT_HEADER: &str = "id,name,city,amount,date,note\n";

const EXPORT_LAST: [&str; 24] = [
    "Smith",
    "Garcia",
    "Müller",
    "Johnson",
    "Nguyen",
    "Kowalski",
    "Rossi",
    "Dubois",
    "Silva",
    "Kim",
    "O'Brien",
    "Jansen",
    "Novak",
    "Ivanova",
    "Sato",
    "Hansen",
    "López",
    "Brown",
    "Wang",
    "Cohen",
    "Fischer",
    "Andersson",
    "Costa",
    "Yilmaz",
];
const EXPORT_FIRST: [&str; 24] = [
    "John", "Maria", "Wei", "Anna", "José", "Fatima", "Li", "Olga", "Ahmed", "Emma", "Lukas", "Sofia",
    "Mateo", "Yuki", "Noah", "Chloé", "Ivan", "Aisha", "Pablo", "Ingrid", "Omar", "Zoe", "Raj", "Mia",
];
const EXPORT_CITIES: [&str; 16] = [
    "New York",
    "Paris",
    "Berlin",
    "Tokyo",
    "Lagos",
    "São Paulo",
    "Mumbai",
    "Sydney",
    "Toronto",
    "Madrid",
    "Seoul",
    "Cairo",
    "Lima",
    "Oslo",
    "Rome",
    "Mexico City",
];
const EXPORT_WORDS: [&str; 12] = [
    "urgent", "gift", "returned", "late", "paid", "call", "fragile", "express", "back", "twice", "ok",
    "later",
];

/// One of `words`, drawn uniformly.
fn pick(rng: &mut impl Rng, words: &[&'static str]) -> &'static str {
    words[rng.random_range(0..words.len())]
}

/// Appends one record of a CSV export (module docs).
fn export_row(rng: &mut impl Rng, max_id: u64, out: &mut Vec<u8>) {
    push_uint(out, rng.random_range(1..=max_id), 1);
    out.extend_from_slice(b",\"");
    out.extend_from_slice(pick(rng, &EXPORT_LAST).as_bytes());
    out.extend_from_slice(b", ");
    out.extend_from_slice(pick(rng, &EXPORT_FIRST).as_bytes());
    out.extend_from_slice(b"\",");
    out.extend_from_slice(pick(rng, &EXPORT_CITIES).as_bytes());
    out.push(b',');
    push_amount_date(rng, out);
    out.push(b',');
    match rng.random_range(0..8u32) {
        0..=3 => {}
        4 | 5 => out.extend_from_slice(pick(rng, &EXPORT_WORDS).as_bytes()),
        6 => {
            let (a, b) = (pick(rng, &EXPORT_WORDS), pick(rng, &EXPORT_WORDS));
            out.extend_from_slice(format!("\"{a}, {b}\"").as_bytes());
        }
        _ => {
            let (a, b, c) = (pick(rng, &EXPORT_WORDS), pick(rng, &EXPORT_WORDS), pick(rng, &EXPORT_WORDS));
            out.extend_from_slice(format!("\"said \"\"{a}\"\"\n{b}, {c}\"").as_bytes());
        }
    }
    out.push(b'\n');
}

fn gen_export_chunk(spec: &GenSpec, chunk: u64, _: &Zipf<f64>) -> Vec<u8> {
    rows_chunk(spec, chunk, EXPORT_HEADER, export_row)
}

/// The mean length of a JSON line (with its newline), from a sample.
fn jsonl_mean_line_len() -> f64 {
    const SAMPLE: u64 = 1 << 14;
    let mut rng = chunk_rng(0x5eed, 0);
    let mut out = Vec::new();
    for _ in 0..SAMPLE {
        jsonl_line(&mut rng, &mut out);
    }
    out.len() as f64 / SAMPLE as f64
}

/// Appends one JSON event and its newline (see the module docs); one time
/// in 50, a copy of the line before it in `out`.
fn jsonl_line(rng: &mut impl Rng, out: &mut Vec<u8>) {
    const EVENTS: [&str; 4] = ["click", "view", "buy", "login"];
    const COUNTRIES: [&str; 5] = ["FR", "DE", "CN", "US", "BR"];
    const TAGS: [&str; 5] = ["a", "b", "new", "vip", "x"];
    let start = out.len();
    let prev = out[..start.saturating_sub(1)].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    if start > 0 && rng.random_range(0..50u32) == 0 {
        out.extend_from_within(prev..start);
        return;
    }
    // The previous line's ts, for repeats.
    let prev_ts = {
        let line = &out[prev..start];
        memchr::memmem::find(line, b"\"ts\":").map(|p| {
            let t = &line[p + 5..];
            t[..t.iter().position(|&b| b == b',' || b == b'}').unwrap_or(t.len())].to_vec()
        })
    };
    let ts = match prev_ts {
        Some(t) if rng.random_range(0..8u32) == 0 => t,
        _ => {
            let v = 1_700_000_000_000 + rng.random_range(0..1_000_000_000u64);
            if rng.random_range(0..64u32) == 0 {
                format!("\"{v}\"").into_bytes()
            } else {
                v.to_string().into_bytes()
            }
        }
    };
    let ts_after_user = rng.random_range(0..16u32) == 0;
    out.push(b'{');
    if !ts_after_user {
        out.extend_from_slice(b"\"ts\":");
        out.extend_from_slice(&ts);
        out.push(b',');
    }
    out.extend_from_slice(b"\"event\":\"");
    out.extend_from_slice(EVENTS[rng.random_range(0..EVENTS.len())].as_bytes());
    out.extend_from_slice(b"\",");
    match rng.random_range(0..32u32) {
        0 => {}
        1 => out.extend_from_slice(b"\"user\":null,"),
        _ => {
            out.extend_from_slice(b"\"user\":{\"id\":");
            push_uint(out, rng.random_range(1..=100_000), 1);
            out.extend_from_slice(b",\"name\":\"");
            out.extend_from_slice(JSONL_NAMES[rng.random_range(0..JSONL_NAMES.len())].as_bytes());
            out.push(b'"');
            if rng.random_range(0..8u32) != 0 {
                out.extend_from_slice(b",\"country\":\"");
                out.extend_from_slice(COUNTRIES[rng.random_range(0..COUNTRIES.len())].as_bytes());
                out.push(b'"');
            }
            out.extend_from_slice(b"},");
        }
    }
    if ts_after_user {
        out.extend_from_slice(b"\"ts\":");
        out.extend_from_slice(&ts);
        out.push(b',');
    }
    out.extend_from_slice(b"\"amount\":");
    let cents = rng.random_range(0..1_000_000u64);
    match rng.random_range(0..32u32) {
        0 => out.extend_from_slice(b"null"),
        1 => out.extend_from_slice(format!("{}e{}", cents / 100, rng.random_range(-2..4i32)).as_bytes()),
        _ => {
            if rng.random_range(0..16u32) == 0 {
                out.push(b'-');
            }
            push_uint(out, cents / 100, 1);
            out.push(b'.');
            push_uint(out, cents % 100, 2);
        }
    }
    if rng.random_range(0..8u32) != 0 {
        out.extend_from_slice(b",\"tags\":[");
        for i in 0..rng.random_range(0..4usize) {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(TAGS[rng.random_range(0..TAGS.len())].as_bytes());
            out.push(b'"');
        }
        out.push(b']');
    }
    out.extend_from_slice(if rng.random_bool(0.9) { b",\"ok\":true}\n" } else { b",\"ok\":false}\n" });
}

fn gen_jsonl_chunk(spec: &GenSpec, chunk: u64, _: &Zipf<f64>) -> Vec<u8> {
    let first = chunk * CHUNK_CSV_LINES;
    let lines = (spec.count - first).min(CHUNK_CSV_LINES);
    let mut rng = chunk_rng(spec.seed, chunk);
    let mut out = Vec::with_capacity(lines as usize * 160);
    for _ in 0..lines {
        jsonl_line(&mut rng, &mut out);
    }
    out
}

/// The mean length of a CSV export's record, measured on the first chunk
/// of `spec`'s seed.
fn export_mean_len(spec: &GenSpec) -> f64 {
    let sample = GenSpec { count: CHUNK_CSV_LINES, ..spec.clone() };
    let chunk = gen_export_chunk(&sample, 0, &Zipf::new(ZIPF_VALUES, ZIPF_S).expect("valid Zipf parameters"));
    (chunk.len() - EXPORT_HEADER.len()) as f64 / CHUNK_CSV_LINES as f64
}

/// Syllables of the words generator: Latin-script onsets and rhymes, a
/// few with the accented letters of French, German, Spanish and the
/// Nordic languages (é è ê ë à â ä ö ü ß ç ñ å ø æ œ), so that a
/// locale's collation has ties to break (`é` after `e`, `ß` as `ss`).
const WORD_SYLLABLES: [&str; 64] = [
    "a", "ka", "re", "mo", "ti", "lan", "der", "so", "ven", "ha", "ri", "tor", "el", "ma", "nu", "ber", "sa",
    "le", "in", "go", "pe", "ra", "un", "ste", "lo", "ne", "ch", "mar", "is", "de", "fa", "wo", "é", "tè",
    "rê", "noë", "là", "châ", "gä", "stö", "mü", "ße", "ça", "ño", "kå", "sø", "læ", "œu", "bri", "to", "on",
    "ges", "qui", "ta", "ur", "vi", "es", "ly", "po", "dra", "ce", "jo", "an", "hel",
];

/// Distinct words the words generator draws from, by rank.
const WORD_VOCABULARY: usize = 60_000;
/// The exponent of the words' Zipf law (natural text is near 1).
const WORD_ZIPF_S: f64 = 1.05;

/// The words generator's vocabulary: word *r* has 1 + ⌊log₄(r + 1)⌋ / 2
/// syllables and 0 to 2 more, so frequent words are short as in natural
/// text; drawn from
/// a fixed seed, the same for every spec (the spec's seed draws the
/// lines). Words may repeat in the list; a repeat only shifts the
/// frequencies a little.
fn word_vocabulary() -> &'static [String] {
    static WORDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        let mut rng = chunk_rng(0x0057_04d5, 0);
        (0..WORD_VOCABULARY)
            .map(|r| {
                let syllables = 1 + ((r + 1) as f64).log(4.0) as usize / 2 + rng.random_range(0..3usize);
                (0..syllables).map(|_| pick(&mut rng, &WORD_SYLLABLES)).collect()
            })
            .collect()
    })
}

/// A word of the vocabulary at a Zipf-drawn rank, lower case three
/// times in four, else capitalised or (one time in 25) upper case.
fn push_word(rng: &mut impl Rng, zipf: &Zipf<f64>, out: &mut Vec<u8>) {
    let words = word_vocabulary();
    let w = &words[(zipf.sample(rng) as usize).clamp(1, words.len()) - 1];
    match rng.random_range(0..100u32) {
        0..=74 => out.extend_from_slice(w.as_bytes()),
        75..=95 => {
            let mut c = w.chars();
            if let Some(first) = c.next() {
                out.extend(first.to_uppercase().to_string().bytes());
                out.extend_from_slice(c.as_str().as_bytes());
            }
        }
        _ => out.extend_from_slice(w.to_uppercase().as_bytes()),
    }
}

/// Appends one line of words (module docs): one word, or two joined by a
/// space (one line in 16), a hyphen (one in 24) or an elision with an
/// apostrophe (one in 32: `l'`, `d'`, `o'` before, `'s` after).
fn word_line(rng: &mut Xoshiro256PlusPlus, zipf: &Zipf<f64>, out: &mut Vec<u8>) {
    match rng.random_range(0..96u32) {
        0..=5 => {
            push_word(rng, zipf, out);
            out.push(b' ');
            push_word(rng, zipf, out);
        }
        6..=9 => {
            push_word(rng, zipf, out);
            out.push(b'-');
            push_word(rng, zipf, out);
        }
        10 | 11 => {
            out.extend_from_slice(pick(rng, &["l'", "d'", "o'", "L'"]).as_bytes());
            push_word(rng, zipf, out);
        }
        12 => {
            push_word(rng, zipf, out);
            out.extend_from_slice(b"'s");
        }
        _ => push_word(rng, zipf, out),
    }
    out.push(b'\n');
}

fn gen_words_chunk(spec: &GenSpec, chunk: u64, _: &Zipf<f64>) -> Vec<u8> {
    let first = chunk * CHUNK_CSV_LINES;
    let lines = (spec.count - first).min(CHUNK_CSV_LINES);
    let mut rng = chunk_rng(spec.seed, chunk);
    let zipf = Zipf::new(WORD_VOCABULARY as f64, WORD_ZIPF_S).expect("valid Zipf parameters");
    let mut out = Vec::with_capacity(lines as usize * 12);
    for _ in 0..lines {
        word_line(&mut rng, &zipf, &mut out);
    }
    out
}

/// The mean length of a line of words (with its newline), from a sample.
fn words_mean_line_len() -> f64 {
    let unused = Zipf::new(ZIPF_VALUES, ZIPF_S).expect("valid Zipf parameters");
    let sample = gen_words_chunk(&GenSpec::words(CHUNK_CSV_LINES), 0, &unused);
    sample.len() as f64 / CHUNK_CSV_LINES as f64
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenStats {
    /// Bytes written.
    pub bytes: u64,
    /// Items written (lines for `lines`).
    pub items: u64,
}

/// Makes chunk `c` of a spec's file.
type ChunkFn = fn(&GenSpec, u64, &Zipf<f64>) -> Vec<u8>;

/// Generates the file `spec` describes at `out`: written beside it and
/// renamed when complete, removed on error or when `cancel` is set.
///
/// # Panics
/// If `spec.line_len` has MIN > MAX.
pub fn generate(
    spec: &GenSpec,
    out: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<GenStats, Error> {
    assert!(spec.line_len.0 <= spec.line_len.1, "line length range MIN..MAX needs MIN ≤ MAX");
    let zipf = Zipf::new(ZIPF_VALUES, ZIPF_S).expect("valid Zipf parameters");
    let (chunks, chunk_fn): (u64, ChunkFn) = match spec.format {
        Format::Lines if spec.text == Text::Csv => (spec.count.div_ceil(CHUNK_CSV_LINES), gen_csv_chunk),
        Format::Lines if spec.text == Text::CsvExport => {
            (spec.count.div_ceil(CHUNK_CSV_LINES).max(1), gen_export_chunk)
        }
        Format::Lines if spec.text == Text::Jsonl => (spec.count.div_ceil(CHUNK_CSV_LINES), gen_jsonl_chunk),
        Format::Lines if spec.text == Text::Words => (spec.count.div_ceil(CHUNK_CSV_LINES), gen_words_chunk),
        Format::Lines => (spec.bytes.div_ceil(CHUNK_TEXT), gen_text_chunk),
        _ => (spec.count.div_ceil(CHUNK_ITEMS), gen_fixed_chunk),
    };
    let atomic = AtomicFile::create(out)?;
    let target = atomic.target();
    let mut file = create_output_in::<u8>(Dest::Open(atomic.file(), &target), &spec.io)?;
    progress.phase_bytes("gen", Some(spec.total_bytes()));
    let batch = (rayon::current_num_threads() as u64 * 2).max(2);
    let (tx, rx) = sync_channel::<Vec<Vec<u8>>>(1);
    let (bytes, items) = std::thread::scope(|s| -> Result<(u64, u64), Error> {
        let writer = emsort_io::spawn_scoped(s, "emsort-gen-write", out, move || -> Result<(), Error> {
            for chunks in rx {
                for c in chunks {
                    file.write_all(&c)?;
                    progress.advance(c.len() as u64);
                }
            }
            file.close()
        })?;
        let (mut bytes, mut items) = (0u64, 0u64);
        let mut c0 = 0;
        let mut send_failed = false;
        while c0 < chunks {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            let c1 = (c0 + batch).min(chunks);
            let made: Vec<Vec<u8>> = (c0..c1).into_par_iter().map(|c| chunk_fn(spec, c, &zipf)).collect();
            for (i, c) in made.iter().enumerate() {
                bytes += c.len() as u64;
                items += match (spec.format.item_size(), spec.text) {
                    (Some(s), _) => (c.len() / s) as u64,
                    // Records, the header among them.
                    (None, Text::CsvExport) => {
                        let first = (c0 + i as u64) * CHUNK_CSV_LINES;
                        (spec.count - first.min(spec.count)).min(CHUNK_CSV_LINES)
                            + u64::from(c0 + i as u64 == 0)
                    }
                    (None, _) => c.iter().filter(|&&b| b == b'\n').count() as u64,
                };
            }
            if tx.send(made).is_err() {
                send_failed = true;
                break;
            }
            c0 = c1;
        }
        drop(tx);
        writer.join().expect("writer thread")?;
        if send_failed {
            return Err(Error::new(ErrorKind::Io("write"), out));
        }
        Ok((bytes, items))
    })?;
    progress.finish_phase();
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::new(ErrorKind::Interrupted, out));
    }
    atomic.commit()?;
    Ok(GenStats { bytes, items })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::verify;
    use emsort_io::NoProgress;

    fn gen(spec: &GenSpec) -> Vec<u8> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("g");
        generate(spec, &p, &NoProgress, &AtomicBool::new(false)).unwrap();
        std::fs::read(p).unwrap()
    }

    /// A CSV export: the header, then `count` records of six fields (some
    /// quoted with separators, quotes and newlines), the same for a seed,
    /// and about the size asked for.
    #[test]
    fn csv_exports_are_whole_records_of_six_fields_after_a_header() {
        let n = CHUNK_CSV_LINES + 999;
        let s = GenSpec::csv_export(n);
        let data = gen(&s);
        assert!(data == gen(&s), "the same seed, the same bytes");
        assert!(data.starts_with(EXPORT_HEADER.as_bytes()));
        let (mut state, mut ends) = (0, Vec::new());
        crate::csv::scan_ends(&data, b',', &mut state, &mut |p| {
            ends.push(p);
            true
        });
        assert_eq!((ends.len() as u64, ends.last().copied()), (n + 1, Some(data.len() - 1)));
        let (mut start, mut room, mut text, mut seps) =
            (0, crate::csv::Unquote::default(), Vec::new(), Vec::new());
        let mut spanning = 0;
        for &e in &ends {
            crate::csv::fields(&data[start..e], b',', usize::MAX, true, &mut seps, &mut text, &mut room);
            assert_eq!(seps.len(), 5, "{:?}", String::from_utf8_lossy(&data[start..e]));
            spanning += usize::from(data[start..e].contains(&b'\n'));
            start = e + 1;
        }
        assert!((n as usize / 12..n as usize / 4).contains(&spanning), "{spanning} records span lines");
        let b = GenSpec::csv_export_bytes(8 << 20);
        let size = gen(&b).len() as f64;
        assert!((size / (8 << 20) as f64 - 1.0).abs() < 0.01, "{size}");
        assert!((size - b.total_bytes() as f64).abs() < size * 0.01);
    }

    #[test]
    fn same_seed_same_bytes_and_sizes() {
        for f in ["u32", "i64", "f32", "rec:100:0:10", "rec:7:3:2"] {
            let mut s = GenSpec::items(f.parse().unwrap(), CHUNK_ITEMS + 17);
            let a = gen(&s);
            assert_eq!(a.len() as u64, s.total_bytes());
            assert_eq!(a, gen(&s), "{f}");
            s.seed = 7;
            assert_ne!(a, gen(&s), "{f}");
        }
        let s = GenSpec::lines(CHUNK_TEXT + 12345);
        let a = gen(&s);
        assert_eq!(a.len() as u64, s.bytes);
        assert_eq!(a.last(), Some(&b'\n'));
        assert!(a.iter().all(|&b| b == b'\n' || (0x20..=0x7e).contains(&b)));
        assert_eq!(a, gen(&s));
    }

    #[test]
    fn sorted_and_reverse_are_in_order() {
        let no = AtomicBool::new(false);
        for f in ["u32", "i32", "u64", "i64", "f32", "f64", "rec:100:0:10", "rec:16:4:12", "lines"] {
            let format: Format = f.parse().unwrap();
            for (dist, rev) in [(Distribution::Sorted, false), (Distribution::Reverse, true)] {
                let mut s = if format == Format::Lines {
                    GenSpec::lines(300_000)
                } else {
                    GenSpec::items(format, 50_000)
                };
                s.dist = dist;
                let d = tempfile::tempdir().unwrap();
                let p = d.path().join("g");
                generate(&s, &p, &NoProgress, &no).unwrap();
                let r = verify(&p, format, rev, None, &no).unwrap();
                assert!(r.disorder.is_none(), "{f} {dist}: {r:?}");
                let r = verify(&p, format, !rev, None, &no).unwrap();
                assert!(r.disorder.is_some(), "{f} {dist} should not be in the other order");
            }
        }
    }

    #[test]
    fn few_distinct_and_zipf_repeat_values() {
        for dist in [Distribution::FewDistinct, Distribution::Zipf] {
            let mut s = GenSpec::items(Format::U64, 10_000);
            s.dist = dist;
            let a = gen(&s);
            let mut v: Vec<u64> =
                a.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
            v.sort_unstable();
            v.dedup();
            assert!(v.len() < 5000, "{dist}: {} distinct", v.len());
            if dist == Distribution::FewDistinct {
                assert!(v.len() <= 16);
            }
        }
    }

    /// JSON lines: same seed, same bytes; every line JSON; repeated ts,
    /// lines, nulls, missing fields and escapes all occur.
    #[test]
    fn jsonl_lines_are_deterministic_and_json() {
        let n = CHUNK_CSV_LINES + 5000;
        let s = GenSpec::jsonl(n);
        let a = gen(&s);
        assert_eq!(a, gen(&s));
        assert_ne!(a, gen(&GenSpec { seed: 7, ..s.clone() }));
        let lines: Vec<&[u8]> = a.strip_suffix(b"\n").unwrap().split(|&b| b == b'\n').collect();
        assert_eq!(lines.len() as u64, n);
        let (mut same_line, mut same_ts, mut ts_str) = (0, 0, 0);
        for (i, l) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
            assert!(v["ts"].is_u64() || v["ts"].is_string(), "{v}");
            ts_str += usize::from(v["ts"].is_string());
            if i > 0 {
                same_line += usize::from(lines[i - 1] == *l);
                let p: serde_json::Value = serde_json::from_slice(lines[i - 1]).unwrap();
                same_ts += usize::from(p["ts"] == v["ts"]);
            }
        }
        let has = |t: &[u8]| memchr::memmem::find(&a, t).is_some();
        assert!(has(b"\"user\":null") && has(b"\\ud83d\\ude00") && has(b"\\u00e9") && has("é".as_bytes()));
        assert!(has(b"\"amount\":null") && has(b"e-2,") && has(b"\"tags\":[]"));
        assert!(lines.iter().any(|l| !l.starts_with(b"{\"ts\"")), "ts after user");
        assert!(lines.iter().any(|l| memchr::memmem::find(l, b"\"user\"").is_none()), "user missing");
        let frac = |k: usize| k as f64 / n as f64;
        assert!((0.01..0.03).contains(&frac(same_line)), "{same_line}");
        assert!((0.1..0.16).contains(&frac(same_ts)), "{same_ts}");
        assert!((0.005..0.03).contains(&frac(ts_str)), "{ts_str}");
        let b = GenSpec::jsonl_bytes(10 << 20);
        let size = gen(&b).len() as f64;
        assert!((size / (10 << 20) as f64 - 1.0).abs() < 0.01, "{size}");
        assert!((b.total_bytes() as f64 / size - 1.0).abs() < 0.01);
    }

    /// Words: same seed, same bytes; UTF-8 lines of letters, accents,
    /// cases, spaces, hyphens and apostrophes; repeats at a Zipf-like
    /// rate; about 8–12 bytes a line; `words_bytes` near its size.
    #[test]
    fn words_are_deterministic_natural_and_repeated() {
        let n = CHUNK_CSV_LINES + 4321;
        let s = GenSpec::words(n);
        let a = gen(&s);
        assert_eq!(a, gen(&s));
        assert_ne!(a, gen(&GenSpec { seed: 7, ..s.clone() }));
        let text = std::str::from_utf8(&a).unwrap();
        let lines: Vec<&str> = text.strip_suffix('\n').unwrap().split('\n').collect();
        assert_eq!(lines.len() as u64, n);
        for l in &lines {
            assert!(!l.is_empty() && l.chars().all(|c| c.is_alphabetic() || " -'".contains(c)), "{l:?}");
            assert!(!l.starts_with(' ') && !l.ends_with(' '), "{l:?}");
        }
        for accented in "éèêëàâäöüßçñåøæœ".chars() {
            assert!(text.contains(accented), "{accented}");
        }
        let count = |f: &dyn Fn(&str) -> bool| lines.iter().filter(|l| f(l)).count() as f64 / n as f64;
        let lower = count(&|l| l.chars().all(|c| !c.is_uppercase()));
        let capital = count(&|l| {
            let mut c = l.chars();
            c.next().is_some_and(char::is_uppercase) && c.all(|c| !c.is_uppercase())
        });
        let upper = count(&|l| l.chars().filter(|c| c.is_alphabetic()).all(char::is_uppercase));
        assert!((0.5..0.8).contains(&lower) && (0.1..0.3).contains(&capital), "{lower} {capital}");
        assert!((0.01..0.1).contains(&upper), "{upper}");
        let space = count(&|l| l.contains(' '));
        let (hyphen, apostrophe) = (count(&|l| l.contains('-')), count(&|l| l.contains('\'')));
        assert!((0.04..0.09).contains(&space) && (0.02..0.07).contains(&hyphen), "{space} {hyphen}");
        assert!((0.01..0.05).contains(&apostrophe), "{apostrophe}");
        let mut distinct = lines.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let dup = 1.0 - distinct.len() as f64 / n as f64;
        assert!((0.3..0.9).contains(&dup), "{dup} of the lines repeat one before");
        let mean = a.len() as f64 / n as f64;
        assert!((8.0..=12.0).contains(&mean), "{mean} bytes a line");
        let b = GenSpec::words_bytes(8 << 20);
        let size = gen(&b).len() as f64;
        assert!((size / (8 << 20) as f64 - 1.0).abs() < 0.01, "{size}");
        assert!((b.total_bytes() as f64 / size - 1.0).abs() < 0.01);
    }

    /// CSV lines: same seed, same bytes; every line well formed; ids repeat
    /// and are not in order; some amounts negative; `csv_bytes` near its size.
    #[test]
    fn csv_lines_are_deterministic_and_well_formed() {
        let n = 2 * CHUNK_CSV_LINES + 123;
        let s = GenSpec::csv(n);
        let a = gen(&s);
        assert_eq!(a, gen(&s));
        assert_ne!(a, gen(&GenSpec { seed: 7, ..s.clone() }));
        let text = std::str::from_utf8(&a).unwrap();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len() as u64, n);
        let max_id = csv_max_id(n);
        let (mut ids, mut negative, mut categories) = (Vec::new(), 0, std::collections::BTreeSet::new());
        for l in &lines {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 4, "{l}");
            let id: u64 = f[0].parse().unwrap_or_else(|_| panic!("id of {l}"));
            assert!((1..=max_id).contains(&id) && !f[0].starts_with('0'), "{l}");
            ids.push(id);
            assert!(CSV_CATEGORIES.contains(&f[1]), "{l}");
            categories.insert(f[1]);
            let amount = f[2].strip_prefix('-').unwrap_or(f[2]);
            negative += usize::from(f[2].starts_with('-'));
            let (int, frac) = amount.split_once('.').unwrap_or_else(|| panic!("amount of {l}"));
            assert!(int.len() <= 6 && frac.len() == 2, "{l}");
            assert!(int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()), "{l}");
            assert!(int == "0" || !int.starts_with('0'), "{l}");
            assert_ne!(f[2], "-0.00");
            let date: Vec<u32> = f[3].split('-').map(|x| x.parse().unwrap()).collect();
            assert_eq!((f[3].len(), date.len()), (10, 3), "{l}");
            assert!((2015..=2024).contains(&date[0]) && (1..=12).contains(&date[1]), "{l}");
            assert!((1..=31).contains(&date[2]), "{l}");
        }
        assert_eq!(categories.len(), CSV_CATEGORIES.len());
        let frac = negative as f64 / n as f64;
        assert!((0.02..0.045).contains(&frac), "{frac}");
        assert!(ids.windows(2).any(|w| w[0] > w[1]));
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let dup = 1.0 - distinct.len() as f64 / n as f64;
        assert!((0.2..0.5).contains(&dup), "{dup}");
        // The expected length is close to the real one, and --bytes lands near.
        let mean = a.len() as f64 / n as f64;
        assert!((mean - csv_mean_line_len(n)).abs() < 0.1, "{mean} vs {}", csv_mean_line_len(n));
        let s = GenSpec::csv_bytes(8 << 20);
        let b = gen(&s);
        assert!((b.len() as f64 / (8 << 20) as f64 - 1.0).abs() < 0.005, "{}", b.len());
        assert!((s.total_bytes() as f64 / b.len() as f64 - 1.0).abs() < 0.005);
        assert_eq!(civil_from_days(CSV_DAY0), (2015, 1, 1));
        assert_eq!(civil_from_days(CSV_DAY0 + CSV_DAYS - 1), (2024, 12, 31));
        assert_eq!(civil_from_days(19_800), (2024, 3, 18));
    }

    #[test]
    fn cancelled_generation_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("g");
        let e = generate(&GenSpec::items(Format::U32, 1000), &p, &NoProgress, &AtomicBool::new(true))
            .unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Interrupted);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
