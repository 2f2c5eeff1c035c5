//! `emsort sort`: the external merge sort of files and standard input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use emsort_io::disks::DiskModel;
use emsort_io::StreamKind;
use emsort_sort::check::check_order;
use emsort_sort::keys::{FieldCount, JsonKey, Key, LineOrder, Locale, OrderOptions};
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::{
    merge_sources, sort, Compression, Format, Method, MethodKind, ParallelDiskStats, ParallelDisks, Sink,
    SortError, SortPlan, SortStats, Source, SrmOptions,
};

use crate::progress::Bar;

mod table;

/// Write sorted concatenation of all FILE(s) to standard output — GNU sort's
/// options, for files larger than memory.
///
/// With no FILE, or when FILE is -, read standard input. The files are read once,
/// in order, as one input; pipes and standard input are read as they come, never
/// copied first (with -m, a sorted standard input or pipe is copied to the
/// temporary directory, then merged with the files). Run formation reads M bytes
/// at a time, sorts them on all cores and writes sorted runs to a temporary
/// directory; d-way merges then combine the runs into the output. An OUTPUT file is written beside its target and renamed
/// when complete, so OUTPUT may be an INPUT, and an error or Ctrl-C leaves neither
/// a partial output nor temporary files.
///
/// emsort compares text as GNU sort 9.1 does in the locale LC_ALL, LC_COLLATE
/// (LC_CTYPE, LC_NUMERIC, LC_TIME) or LANG name: by its collation, its decimal
/// point and thousands separator, its month names; under LC_ALL=C bytewise.
#[derive(Args)]
#[command(
    disable_help_flag = true,
    disable_version_flag = true,
    after_help = "\
KEYDEF is F[.C][OPTS][,F[.C][OPTS]] for start and stop position, where F is a field number and C a \
character position in the field; both are origin 1, and the stop position defaults to the line's end. \
If neither -t nor -b is in effect, characters in a field are counted from the beginning of the \
preceding whitespace. OPTS is one or more single-letter ordering options [bdfgiMhnRrV], which \
override global ordering options for that key. If no key is given, use the entire line as the key. \
Use --debug to diagnose incorrect key usage. With --header, KEYDEF may also be NAME[:OPTS]: the whole \
field that the first input's header names NAME (-k amount:nr, -k 'last name').

SIZE may be followed by the following multiplicative suffixes: % 1% of memory, b 1, K 1024 (default), \
and so on for M, G, T, P, E, Z, Y, R, Q.

Locale: text lines compare as GNU sort 9.1 compares them in the locale the environment names \
(LC_ALL, else LC_COLLATE, LC_CTYPE, LC_NUMERIC, LC_TIME, else LANG): text keys and the last \
resort by the locale's collation (strcoll), -f/-d/-i by its character classes, -n/-h/-g with its \
decimal point and thousands separator, -M by its month names; -V is bytewise everywhere. Under \
LC_ALL=C (or POSIX, or a locale the C library cannot load) lines compare bytewise, and fastest. \
--debug names the rules used.

Tables: an input or -o named .parquet (.pq) or as an Arrow IPC file (.arrow, .feather, .ipc, \
.arrows) makes a sort of tables by columns: -k NAME[:MODS], MODS from asc, desc (or r), \
nulls_first, nulls_last (the default), separated by commas; no -k orders by every column. Equal \
keys keep their input order (-u: the first only; -r reverses every key); keys order as Arrow \
orders them. A Parquet output keeps the first input's row group size and codec (unless \
--row-group-size, --parquet-compression), and its footer's sorting_columns names the order. -S, -T, --parallel and emsort's plan options apply; the \
options that order text lines do not.

Examples:
  emsort sort -t, -k3,3n -S 256M data.csv -o by-amount.csv
  emsort sort -t, -k2,2 -k3,3nr --parallel=2 -T /mnt/scratch data.csv > by-category.csv
  emsort sort -u -S 25% big.log -o unique.log
  emsort sort -m sorted-*.txt -o all.txt
  emsort sort -c sorted.txt
  emsort sort events.parquet -k ts -k user:desc,nulls_first -S 256M -o sorted.parquet
  emsort sort --format u32 -S 256M data.u32 -o sorted.u32
  emsort sort --format rec:100:0:10 --fan-in 16 --io direct --stats stats.json recs.bin -o recs.sorted
  emsort sort --format rec:104:0:8 -S 24M --block-size 256K --method srm --disks /d0,/d1,/d2,/d3,/d4,/d5 \\
      --stats srm.json recs.bin -o recs.sorted

On D disks (--method dsm|srm, Barve & Vitter): runs are striped block by block (B = --block-size) \
round-robin over the --disks directories. DSM moves one block on every disk at once, so it merges \
about M / (2·D·B) runs at a time; SRM starts each run on a random disk and reads blocks ahead in the \
order the merge needs them (forecasting), so it merges about M / (2·B) runs at a time and needs fewer \
passes. Both form the same runs.

SIMD: numbers (u32, i32) are sorted and merged with the CPU's best vector instructions (AVX-512, \
else AVX2, else scalar code); EMSORT_SIMD=avx2 or EMSORT_SIMD=scalar forces a lower level (the \
output is the same; --show-plan says which level runs).

Exit status: 0 sorted (or in order with -c), 1 not in order (-c, -C), 2 bad usage or input, 3 I/O \
failure (full disk …). On SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE (the output's reader went away) \
and the other signals GNU sort catches, emsort removes its temporary files and dies of the signal, as \
GNU sort does (130, 143, 129, 131, 141 … in a shell); a signal the caller ignores stays ignored."
)]
pub struct SortArgs {
    // Ordering options (GNU sort's letters and meanings).
    /// ignore leading blanks
    #[arg(short = 'b', long = "ignore-leading-blanks", help_heading = "Ordering options")]
    ignore_leading_blanks: bool,
    /// consider only blanks and alphanumeric characters
    #[arg(short = 'd', long = "dictionary-order", help_heading = "Ordering options")]
    dictionary_order: bool,
    /// fold lower case to upper case characters
    #[arg(short = 'f', long = "ignore-case", help_heading = "Ordering options")]
    ignore_case: bool,
    /// compare according to general numerical value (strtold: 1e3, 0x1p4, inf, nan)
    #[arg(short = 'g', long = "general-numeric-sort", help_heading = "Ordering options")]
    general_numeric: bool,
    /// consider only printable characters
    #[arg(short = 'i', long = "ignore-nonprinting", help_heading = "Ordering options")]
    ignore_nonprinting: bool,
    /// compare (unknown) < 'JAN' < ... < 'DEC'
    #[arg(short = 'M', long = "month-sort", help_heading = "Ordering options")]
    month: bool,
    /// compare human readable numbers (e.g., 2K 1G)
    #[arg(short = 'h', long = "human-numeric-sort", help_heading = "Ordering options")]
    human_numeric: bool,
    /// compare according to string numerical value
    #[arg(short = 'n', long = "numeric-sort", help_heading = "Ordering options")]
    numeric: bool,
    /// shuffle, but group identical keys (an MD5 hash of each key, salted; see --random-source)
    #[arg(short = 'R', long = "random-sort", help_heading = "Ordering options")]
    random: bool,
    /// get random bytes from FILE
    #[arg(long, value_name = "FILE", help_heading = "Ordering options")]
    random_source: Option<PathBuf>,
    /// reverse the result of comparisons
    #[arg(short = 'r', long, help_heading = "Ordering options")]
    reverse: bool,
    /// sort according to WORD: general-numeric -g, human-numeric -h, month -M, numeric -n, random -R, version -V
    #[arg(long = "sort", value_name = "WORD", value_parser = ["general-numeric", "human-numeric", "month", "numeric", "random", "version"], help_heading = "Ordering options")]
    sort_word: Vec<String>,
    /// natural sort of (version) numbers within text
    #[arg(short = 'V', long = "version-sort", help_heading = "Ordering options")]
    version_sort: bool,

    // Other options.
    /// max number of inputs to merge at once (≥ 2; the fan-in d)
    #[arg(long, value_name = "NMERGE")]
    batch_size: Option<usize>,
    /// check for sorted input; do not sort (--check=quiet or silent: like -C)
    #[arg(short = 'c', long = "check", value_name = "WORD", num_args = 0..=1, require_equals = true,
          default_missing_value = "diagnose-first", value_parser = ["diagnose-first", "quiet", "silent"])]
    check: Option<String>,
    /// like -c, but do not report first bad line
    #[arg(short = 'C')]
    check_quiet: bool,
    /// compress temporaries with PROG; decompress them with PROG -d (runs then go through pipes, not O_DIRECT)
    #[arg(long, value_name = "PROG")]
    compress_program: Option<String>,
    /// annotate the part of the line used to sort, and warn about questionable usage to stderr
    #[arg(long)]
    debug: bool,
    /// read input from the files specified by NUL-terminated names in file F; if F is - then read names from standard input
    #[arg(long = "files0-from", value_name = "F")]
    files0_from: Option<PathBuf>,
    /// sort via a key; KEYDEF gives location and type
    #[arg(short = 'k', long = "key", value_name = "KEYDEF")]
    keys: Vec<String>,
    /// merge already sorted files; do not sort
    #[arg(short = 'm', long = "merge")]
    merge: bool,
    /// write result to FILE instead of standard output (may be an input)
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// stabilize sort by disabling last-resort comparison
    #[arg(short = 's', long)]
    stable: bool,
    /// use SIZE for main memory buffer (M) [default: 25% of the available RAM, at most about twice the input]; a SIZE too small for a merge grows M to a 16-way merge's buffers, runs staying at SIZE (at least 544 bytes, as GNU)
    #[arg(short = 'S', long = "buffer-size", value_name = "SIZE", value_parser = emsort_sort::budget::parse_sort_size)]
    memory: Option<u64>,
    /// use SEP instead of non-blank to blank transition
    #[arg(short = 't', long = "field-separator", value_name = "SEP")]
    field_separator: Option<String>,
    /// use DIR for temporaries, not $TMPDIR or /tmp; multiple options specify multiple directories
    #[arg(short = 'T', long = "temporary-directory", value_name = "DIR")]
    temp_dirs: Vec<PathBuf>,
    /// change the number of sorts run concurrently to N [default: all cores; more than the CPUs this process may use are capped, with a note]
    #[arg(long, value_name = "N")]
    parallel: Option<usize>,
    /// with -c, check for strict ordering; without -c, output only the first of an equal run
    #[arg(short = 'u', long)]
    unique: bool,
    /// line delimiter is NUL, not newline
    #[arg(short = 'z', long = "zero-terminated")]
    zero_terminated: bool,
    /// display this help and exit
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// output version information and exit
    #[arg(long)]
    version: bool,

    // emsort's own options (long names only).
    /// lines (text, as GNU sort in the locale), or a binary format: u32, i32, u64, i64, f32, f64 (NaNs
    /// last), rec:SIZE:KEY_OFFSET:KEY_LEN (fixed-size records, bytewise key).
    #[arg(long, default_value = "lines", value_parser = clap::value_parser!(Format), help_heading = "emsort's options")]
    format: Format,
    /// Items are CSV records (RFC 4180), not lines: a field in double quotes may hold separators,
    /// newlines and "" (one quote), so a record may span lines; -t sets the separator (default ,);
    /// -k counts fields as a CSV parser splits them and takes their values unquoted (-k3,3n on
    /// 42,"Smith, John",3.50 sorts by 3.50). Records are written as they came. A quoted field that
    /// never closes is an error naming the file and the record's line.
    #[arg(long, help_heading = "emsort's options")]
    csv: bool,
    /// --csv with TAB-separated fields (TSV).
    #[arg(long, help_heading = "emsort's options")]
    tsv: bool,
    /// Each input's first line (with --csv, its first record) is a header: the first input's is
    /// written first, the others' must be the same and are dropped, none is sorted (-c skips it).
    /// Keys may then name columns: -k NAME:OPTS (or -k NAME) is the whole field the header names NAME, with
    /// the KEYDEF letters as OPTS (-k amount:nr, -k 'last name'); see KEYDEF below.
    #[arg(long, help_heading = "emsort's options")]
    header: bool,
    /// With --csv/--tsv: every record must have N fields, or as many as the first record (the
    /// header) when N is not given; a record with another count is an error naming its file and
    /// line, and nothing is written.
    #[arg(long, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "0",
          help_heading = "emsort's options")]
    fields: Option<usize>,
    /// Lines are JSON values (JSON lines), ordered as jq's sort_by orders them: null < false <
    /// true < numbers < strings (by code point) < arrays < objects. -k takes paths, each with
    /// modifiers after a colon (n: numeric, strings holding numbers too; r: reverse):
    /// -k .user.id, -k .ts:nr, -k '.tags[0]', -k '."odd key"', -k '.["a.b"]'. A missing path is
    /// null; without -k, the whole value. -r, -s, -u and the last resort apply as to lines. A line
    /// that is not JSON (a blank one too) is an error naming the file and line.
    // (`[0]` is jq's, not a link.)
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, help_heading = "emsort's options")]
    jsonl: bool,
    /// Fan-in d: how many runs one merge reads (≥ 2) [default: as many as M allows, at most 64].
    #[arg(long, value_name = "D", help_heading = "emsort's options")]
    fan_in: Option<usize>,
    /// Chunk buffers of run formation: 2 (read the next chunk while this one is sorted and written;
    /// runs of about M/2) or 1 (runs of about M; numbers sorted in segments as they are read)
    /// [default: 2, or 1 when the longer runs save a level of merging or 0.4 of a pass over the data,
    /// or the input fits].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=2), help_heading = "emsort's options")]
    chunk_buffers: Option<u8>,
    /// Sorted segments per chunk of binary numbers (1-64, plain method): each segment is sorted as
    /// soon as it is read, and the run is written as their merge [default: 8 with one chunk buffer,
    /// else 1: the chunk sorted after it is read].
    #[arg(long, value_name = "S", help_heading = "emsort's options")]
    segments: Option<usize>,
    /// Merge policy: fifo (a queue of runs, as the INFO-H-417 reports merged) or optimal (fewest passes, smallest runs first).
    #[arg(long, default_value = "optimal", value_parser = clap::value_parser!(MergePolicy), help_heading = "emsort's options")]
    policy: MergePolicy,
    /// Stream kind for every read and write: auto, syscall, stdio, buffered, mmap, direct, uring or
    /// uring-direct [default: auto: the temp dir's device, as `emsort calibrate` measured it or else
    /// as a probe of a few milliseconds finds it (1 MiB O_DIRECT writes, one at a time then 8 at
    /// once; only when there will be runs); a device gets uring-direct — O_DIRECT (the page cache
    /// copies nothing and keeps nothing) with Q requests in flight, Q from its bandwidth × latency,
    /// so a disk with a long latency per request stays busy — unless the runs fit under the kernel's
    /// background write-back threshold (vm.dirty_background_ratio of the available memory): then
    /// uring, the page cache through io_uring, where the runs are gone before they reach the disk;
    /// memory (tmpfs), M below 128M and a
    /// process without io_uring get direct, one request at a time; where the file system refuses
    /// O_DIRECT, the page cache with the same blocks. --show-plan and --stats say what was chosen
    /// and why].
    #[arg(long = "io", value_name = "KIND", default_value = "auto", hide_default_value = true, value_parser = parse_io, help_heading = "emsort's options")]
    io: IoArg,
    /// Requests in flight per stream of the uring and uring-direct kinds [default: with --io auto,
    /// the device's bandwidth × latency over B, plus one (2 … 8); else 4].
    #[arg(long, value_name = "Q", value_parser = clap::value_parser!(u32).range(1..=4096), help_heading = "emsort's options")]
    queue_depth: Option<u32>,
    /// How temporary runs are stored: auto (the default) compresses them where that makes the sort
    /// faster — at the first run, a sample of it is compressed with lz4 and with zstd, and the
    /// ratio and speeds are weighed against the device's measured bandwidths and the CPU the sort
    /// needs (off on tmpfs, on data that does not shrink, on a fast disk with few cores); none;
    /// lz4; zstd or zstd:LEVEL (1 … 22, default 1). Runs are stored in checksummed frames, read
    /// through the same streams (O_DIRECT, io_uring); a damaged run is an error. Any other word is
    /// a program, as GNU sort takes --compress=PROG for --compress-program=PROG. --show-plan and
    /// --stats say what was chosen, why, and the bytes stored.
    #[arg(long, value_name = "WHAT", value_parser = check_compress, help_heading = "emsort's options")]
    compress: Option<String>,
    /// Block size B of every stream [default: M/16 as a power of two, within 4K … 1M].
    #[arg(long, value_name = "SIZE", value_parser = parse_block, help_heading = "emsort's options")]
    block_size: Option<usize>,
    /// How runs are merged: plain (d-way merges over the temp dirs), dsm (disk-striped mergesort:
    /// each I/O moves one block on every disk at once) or srm (simple randomized mergesort: each run
    /// starts on a random disk, blocks are read ahead by forecasting).
    #[arg(long, default_value = "plain", value_parser = clap::value_parser!(MethodKind), help_heading = "emsort's options")]
    method: MethodKind,
    /// The D disks of --method dsm or srm, one directory each, comma-separated or repeated
    /// (D = how many); runs are striped over them in blocks of --block-size [default: the temp dirs].
    #[arg(long, value_name = "DIR,DIR,…", value_delimiter = ',', help_heading = "emsort's options")]
    disks: Vec<PathBuf>,
    /// Serve each disk of dsm/srm at BANDWIDTH bytes per second with LATENCY per request
    /// (e.g. 60M,1ms or 1G,200us): the parallel-disk model on one device.
    #[arg(long, value_name = "BANDWIDTH,LATENCY", value_parser = clap::value_parser!(DiskModel), help_heading = "emsort's options")]
    emulate_disk: Option<DiskModel>,
    /// Seed of SRM's random starting disks: the same seed draws the same disks, so a sort is
    /// reproducible.
    #[arg(long, value_name = "S", default_value_t = SortPlan::DEFAULT_SEED, help_heading = "emsort's options")]
    seed: u64,
    /// Cap on SRM's merge order R [default: the smallest R that gives the fewest passes within M].
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(usize), help_heading = "emsort's options")]
    srm_max_order: Option<usize>,
    /// Write the statistics (runs, passes, bytes and seconds per phase, peak RSS, context switches, page faults) as JSON (`-`: standard output, when -o names a file).
    #[arg(long, value_name = "FILE.json", help_heading = "emsort's options")]
    stats: Option<PathBuf>,
    /// Print the sort plan (M, d, B, run length, runs, passes) on standard error before sorting.
    #[arg(long, help_heading = "emsort's options")]
    show_plan: bool,
    /// Tables: at most ROWS rows per row group of a Parquet output (default: the first input's
    /// row-group size; smaller when a group's encoded bytes would pass M/6).
    #[arg(long, value_name = "ROWS", value_parser = clap::value_parser!(u64).range(1..), help_heading = "emsort's options")]
    row_group_size: Option<u64>,
    /// Tables: a Parquet output's codec: uncompressed, snappy, lz4, lz4_raw, gzip[(LEVEL)],
    /// zstd[(LEVEL)], brotli[(LEVEL)] (default: the first input's, else zstd).
    #[arg(long, value_name = "CODEC", help_heading = "emsort's options")]
    parquet_compression: Option<String>,
    /// No progress bar, no summary line and no notes.
    #[arg(short, long, help_heading = "emsort's options")]
    quiet: bool,
    /// The files to sort, read in order as one input (as GNU `sort a b c`);
    /// `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    inputs: Vec<PathBuf>,
}

/// `--io`: `auto` ([`emsort_sort::SortPlanBuilder::io_auto`]) or a stream kind.
#[derive(Debug, Clone, Copy)]
struct IoArg(Option<StreamKind>);

fn parse_io(s: &str) -> Result<IoArg, String> {
    if s == "auto" {
        return Ok(IoArg(None));
    }
    s.parse::<StreamKind>().map(|k| IoArg(Some(k))).map_err(|e| format!("{e}, or auto"))
}

/// `--compress`: a built-in choice, else a program (GNU's abbreviation).
fn compression(s: &str) -> Result<Compression, String> {
    Compression::parse(s).unwrap_or_else(|| Ok(Compression::Program(s.into())))
}

/// Checks `--compress` as clap reads it (kept as text: the arguments stay small).
fn check_compress(s: &str) -> Result<String, String> {
    compression(s).map(|_| s.to_string())
}

fn parse_block(s: &str) -> Result<usize, String> {
    let b = emsort_io::parse_size(s)?;
    if b == 0 {
        return Err("the block size must be at least 1 byte".into());
    }
    usize::try_from(b).map_err(|_| format!("block size '{s}' is too large"))
}

/// Keeps the I/O error at the top of the chain, so `exit_code` and the
/// message see it as it is.
fn to_anyhow(e: SortError) -> anyhow::Error {
    match e.into_io() {
        Ok(io) => anyhow::Error::new(io),
        Err(other) => anyhow::Error::new(other),
    }
}

/// The merge method the flags describe, with its parameters. A disk
/// option the method has no place for is refused here (it would be
/// ignored); everything else about them (SRM's cap ≥ 2, disks that are
/// directories) is checked when the plan is built.
fn method(a: &SortArgs) -> anyhow::Result<Method> {
    let disks = ParallelDisks { dirs: a.disks.clone(), emulate: a.emulate_disk, seed: a.seed };
    match a.method {
        MethodKind::Plain => {
            let given = [
                (!a.disks.is_empty(), "--disks"),
                (a.emulate_disk.is_some(), "--emulate-disk"),
                (a.srm_max_order.is_some(), "--srm-max-order"),
            ];
            if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
                anyhow::bail!(
                    "{flag} needs --method dsm or srm (the plain merge spreads its runs over the temp dirs, -T)"
                );
            }
            Ok(Method::Plain)
        }
        MethodKind::Dsm => {
            if a.srm_max_order.is_some() {
                anyhow::bail!("--srm-max-order needs --method srm (DSM's merge order is M / (2·D·B))");
            }
            Ok(Method::Dsm(disks))
        }
        MethodKind::Srm => Ok(Method::Srm(disks, SrmOptions::default().max_order(a.srm_max_order))),
    }
}

/// GNU sort's ordering options as a [`LineOrder`] (for `lines`); keys
/// that name columns take them from `columns`, the header's.
fn line_order(a: &SortArgs, columns: Option<&[Vec<u8>]>) -> anyhow::Result<LineOrder> {
    LineOrder::new(order_options(a, columns)?).map_err(|e| anyhow::anyhow!(e))
}

/// Whether a `-k` argument names a column (`--header`): GNU's start
/// with a field number.
fn names_column(a: &SortArgs, spec: &str) -> bool {
    a.header && !spec.starts_with(|c: char| c.is_ascii_digit()) && !JsonKey::is_path(spec)
}

/// GNU sort's ordering options as given (keys naming columns resolved
/// by `columns`, or refused without them).
fn order_options(a: &SortArgs, columns: Option<&[Vec<u8>]>) -> anyhow::Result<OrderOptions> {
    let mut o = OrderOptions::default();
    let g = &mut o.global;
    let flags = [
        (a.ignore_leading_blanks, 'b'),
        (a.dictionary_order, 'd'),
        (a.ignore_case, 'f'),
        (a.general_numeric, 'g'),
        (a.human_numeric, 'h'),
        (a.ignore_nonprinting, 'i'),
        (a.month, 'M'),
        (a.numeric, 'n'),
        (a.random, 'R'),
        (a.reverse, 'r'),
        (a.version_sort, 'V'),
    ];
    for (_, letter) in flags.iter().filter(|(on, _)| *on) {
        g.set_global(*letter);
    }
    for w in &a.sort_word {
        g.set_global(match w.as_str() {
            "general-numeric" => 'g',
            "human-numeric" => 'h',
            "month" => 'M',
            "numeric" => 'n',
            "random" => 'R',
            _ => 'V',
        });
    }
    let traditional = crate::gnu_args::TRADITIONAL_KEYS.get().map_or(&[][..], Vec::as_slice);
    for (i, k) in a.keys.iter().enumerate() {
        if JsonKey::is_path(k) {
            o.json_keys.push(JsonKey::parse(k).map_err(|e| anyhow::anyhow!(e))?);
            continue;
        }
        let mut key = match (names_column(a, k), columns) {
            (true, Some(cols)) => Key::parse_column(k, cols),
            (true, None) => Err(format!("-k {k}: a key that names a column needs the header")),
            (false, _) => Key::parse(k),
        }
        .map_err(|e| anyhow::anyhow!(e))?;
        key.traditional = traditional.contains(&i);
        o.keys.push(key);
    }
    let r = record_options(a)?;
    (o.tab, o.csv, o.fields, o.jsonl) = (r.tab, r.csv, r.fields, r.jsonl);
    o.stable = a.stable;
    o.unique = a.unique;
    o.salt = salt(a.random_source.as_deref())?;
    // GNU's setlocale (LC_ALL, ""): a locale the C library cannot load
    // leaves it in C (and --debug says so).
    if a.format == Format::Lines {
        o.locale = Locale::from_env().unwrap_or(None);
    }
    Ok(o)
}

/// How records and their fields are read: `-t`, `--csv`/`--tsv`,
/// `--fields` (no key).
fn record_options(a: &SortArgs) -> anyhow::Result<OrderOptions> {
    let tab = match a.field_separator.as_deref() {
        None => None,
        Some("") => anyhow::bail!("empty tab"),
        Some("\\0") => Some(0),
        Some(t) if t.len() == 1 => Some(t.as_bytes()[0]),
        Some(t) => anyhow::bail!("multi-character tab '{t}'"),
    };
    let mut o = OrderOptions { tab, csv: a.csv || a.tsv, jsonl: a.jsonl, ..Default::default() };
    if a.tsv {
        match o.tab.get_or_insert(b'\t') {
            b'\t' => {}
            _ => anyhow::bail!("--tsv separates fields by TAB; for another separator use --csv -t SEP"),
        }
    }
    if o.csv && matches!(o.tab, Some(b'"' | b'\n' | b'\r')) {
        anyhow::bail!("--csv: a quote, CR or newline cannot separate fields");
    }
    o.fields = match a.fields {
        None => None,
        Some(_) if !o.csv => anyhow::bail!("--fields counts CSV fields: give --csv or --tsv"),
        Some(0) => Some(FieldCount::AsFirst),
        Some(n) => Some(FieldCount::Exactly(n)),
    };
    Ok(o)
}

/// `--debug` before sorting: refused with -c/-C and -o as GNU does, then
/// GNU's warnings about the options on standard error.
fn debug_warnings(a: &SortArgs, text: bool) -> anyhow::Result<()> {
    use std::io::Write as _;
    if !text {
        anyhow::bail!("--debug annotates text lines, not --format {}", a.format);
    }
    let quiet = a.check_quiet || matches!(a.check.as_deref(), Some("quiet" | "silent"));
    let letter = match (a.check.is_some() || a.check_quiet, quiet, a.output.is_some()) {
        (true, true, _) => Some('C'),
        (true, false, _) => Some('c'),
        (false, _, true) => Some('o'),
        _ => None,
    };
    if let Some(l) = letter {
        anyhow::bail!("options '-{l} --debug' are incompatible");
    }
    let mut e = std::io::stderr().lock();
    // GNU's first warning: a locale the environment names that the C
    // library cannot load (then it sorts in C).
    if Locale::from_env().is_err() {
        let _ = writeln!(e, "{}: failed to set locale", crate::program());
    }
    for w in order_options(a, None)?.debug_warnings() {
        let _ = writeln!(e, "{}: {w}", crate::program());
    }
    Ok(())
}

/// The 16 bytes that salt `-R`'s hashes: the first 16 of --random-source
/// (GNU's use of it), else from the system's random source.
fn salt(source: Option<&std::path::Path>) -> anyhow::Result<[u8; 16]> {
    use std::io::Read;
    let mut b = [0u8; 16];
    match source {
        Some(p) => {
            let mut f = std::fs::File::open(p).with_context(|| format!("open failed: {}", p.display()))?;
            f.read_exact(&mut b).with_context(|| format!("{}: end of file", p.display()))?;
        }
        None => {
            let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
        }
    }
    Ok(b)
}

/// The input names: FILE…, or those of --files0-from, or `-`.
fn input_names(a: &SortArgs) -> anyhow::Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let Some(from) = &a.files0_from else {
        return Ok(if a.inputs.is_empty() { vec![PathBuf::from("-")] } else { a.inputs.clone() });
    };
    if let Some(extra) = a.inputs.first() {
        anyhow::bail!(
            "extra operand '{}'\nfile operands cannot be combined with --files0-from\nTry '{} --help' for more information.",
            extra.display(),
            crate::sort_command()
        );
    }
    let list = if from.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v)?;
        v
    } else {
        std::fs::read(from).map_err(|e| {
            let system = e.to_string();
            anyhow::anyhow!(
                "open failed: {}: {}",
                from.display(),
                system.split(" (os error").next().unwrap_or(&system)
            )
        })?
    };
    let names: Vec<&[u8]> = list.strip_suffix(b"\0").unwrap_or(&list).split(|&b| b == 0).collect();
    if list.is_empty() {
        anyhow::bail!("no input from '{}'", from.display());
    }
    names
        .iter()
        .enumerate()
        .map(|(i, &n)| match n {
            b"" => anyhow::bail!("{}:{}: invalid zero-length file name", from.display(), i + 1),
            // GNU 9.1 refuses `-` in any list (with this message), not only
            // in one read from standard input.
            b"-" => anyhow::bail!("when reading file names from stdin, no file name of '-' allowed"),
            n => Ok(PathBuf::from(std::ffi::OsStr::from_bytes(n))),
        })
        .collect()
}

/// `-c`, `-C`: whether the one input (lines ended by `eol`) is in order;
/// exit 1 (with GNU's message for -c, the line ended by `eol` as GNU
/// writes it) when not.
/// `stdin_header`: standard input's header, already read from it.
fn check(
    a: &SortArgs,
    order: &LineOrder,
    eol: u8,
    inputs: &[PathBuf],
    stdin_header: Option<Vec<u8>>,
) -> anyhow::Result<ExitCode> {
    let quiet = a.check_quiet || matches!(a.check.as_deref(), Some("quiet" | "silent"));
    let letter = if quiet { 'C' } else { 'c' };
    if inputs.len() > 1 {
        anyhow::bail!("extra operand '{}' not allowed with -{letter}", inputs[1].display());
    }
    if a.output.is_some() {
        anyhow::bail!("options '-{letter}o' are incompatible");
    }
    let name = &inputs[0];
    let found = match (name.as_os_str() == "-", stdin_header) {
        (true, Some(h)) => {
            let mut replay = std::io::BufReader::new(std::io::Read::chain(&h[..], std::io::stdin()));
            check_order(&mut replay, order, eol, a.header)
        }
        (true, None) => check_order(&mut std::io::stdin().lock(), order, eol, a.header),
        (false, _) => {
            let f = std::fs::File::open(name).map_err(|e| open_failed(name, &e))?;
            check_order(&mut std::io::BufReader::with_capacity(1 << 20, f), order, eol, a.header)
        }
    }
    .with_context(|| format!("read failed: {}", name.display()))?;
    match found {
        None => Ok(ExitCode::SUCCESS),
        Some(d) => {
            if !quiet {
                use std::io::Write;
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "{}: {}:{}: disorder: ", crate::program(), name.display(), d.line);
                let _ = e.write_all(&d.text);
                let _ = e.write_all(&[eol]);
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// GNU's message for an input that cannot be opened.
fn open_failed(name: &std::path::Path, e: &std::io::Error) -> anyhow::Error {
    let system = e.to_string();
    anyhow::anyhow!(
        "open failed: {}: {}",
        name.display(),
        system.split(" (os error").next().unwrap_or(&system)
    )
}

pub fn run(a: SortArgs) -> anyhow::Result<ExitCode> {
    if a.version {
        println!("emsort sort {} (GNU sort 9.1's options and order)", env!("CARGO_PKG_VERSION"));
        return Ok(ExitCode::SUCCESS);
    }
    if let (Some(p), Some(c)) = (&a.compress_program, &a.compress) {
        if compression(c).ok() != Some(Compression::Program(p.into())) {
            anyhow::bail!(
                "--compress={c} and --compress-program={p}: runs are stored one way; give one of them"
            );
        }
    }
    let inputs = input_names(&a)?;
    if table::is_table_sort(&a, &inputs) {
        return table::run(&a, inputs);
    }
    if a.row_group_size.is_some() || a.parquet_compression.is_some() {
        anyhow::bail!(
            "--row-group-size and --parquet-compression lay out a Parquet output: name it -o FILE.parquet"
        );
    }
    // Keys that name columns wait for the header (below).
    let named = a.keys.iter().any(|k| names_column(&a, k));
    let order = match named {
        true => LineOrder::new(record_options(&a)?).map_err(|e| anyhow::anyhow!(e))?,
        false => line_order(&a, None)?,
    };
    if let Some(path) = &a.stats {
        refuse_stats_over(path, &inputs, a.output.as_deref())?;
    }
    // GNU's -z: NUL ends each line, input and output; a newline is a byte
    // of the line (and a blank between fields).
    let eol = if a.zero_terminated { 0 } else { b'\n' };
    if a.header && (a.debug || a.jsonl) {
        anyhow::bail!(
            "--header is not for --debug (which annotates every line) or --jsonl (JSON lines have no header)"
        );
    }
    // Standard input's header, read to name the columns, given back ahead of
    // the rest of it.
    let mut stdin_header = None;
    let order = match named {
        true => {
            let first = &inputs[0];
            let record = if first.as_os_str() == "-" {
                let h = emsort_sort::header::first_record(&mut std::io::stdin(), eol, Some(&order));
                stdin_header.insert(h.context("read failed: -")?).clone()
            } else {
                let f = std::fs::File::open(first).map_err(|e| open_failed(first, &e))?;
                emsort_sort::header::first_record(&mut std::io::BufReader::new(f), eol, Some(&order))
                    .with_context(|| format!("read failed: {}", first.display()))?
            };
            if record.is_empty() {
                anyhow::bail!("{}: no header line to take the keys' column names from", first.display());
            }
            let columns = order.columns(record.strip_suffix(&[eol]).unwrap_or(&record));
            line_order(&a, Some(&columns))?
        }
        false => order,
    };
    let text = a.format == Format::Lines;
    if order.jsonl() && (!text || a.zero_terminated || a.debug) {
        anyhow::bail!("--jsonl sorts JSON values one to a line: not with -z, --debug or --format");
    }
    if !text && (!order.is_plain() || order.unique()) {
        anyhow::bail!("keys, -u and the ordering options order text lines, not --format {}", a.format);
    }
    if order.csv().is_some() && (!text || a.zero_terminated || a.debug) {
        anyhow::bail!(
            "--csv and --tsv sort text records ended by newlines: not with -z, --debug or --format"
        );
    }
    if !text && a.zero_terminated {
        anyhow::bail!(
            "-z ends text lines with NUL; --format {} has fixed-size items, no lines to end",
            a.format
        );
    }
    if a.debug {
        debug_warnings(&a, text)?;
    }
    if a.check.is_some() || a.check_quiet {
        if !text {
            anyhow::bail!("-c checks text lines; for --format {} use emsort verify", a.format);
        }
        return check(&a, &order, eol, &inputs, stdin_header);
    }
    crate::interrupt::arm_watchdog();
    let method = method(&a)?;
    let is_stdin = |p: &PathBuf| p.as_os_str() == "-";
    // Pipes, devices and files of /proc are streamed: their size is unknown.
    let input_bytes = inputs
        .iter()
        .map(|p| if is_stdin(p) { None } else { emsort_io::input_size(p).ok().flatten() })
        .sum::<Option<u64>>();
    let debug_order = a.debug.then(|| order.clone());
    let (mut b, _) = plan_builder(&a, a.format, method, input_bytes);
    b = if text { b.line_order(order).eol(eol).header(a.header) } else { b.reverse(a.reverse) };
    // A -S too small for the plan's buffers grows, as GNU sort's buffer
    // does (`sort -S1` sorts): M to what a merge of GNU's default 16 runs
    // needs, while run formation keeps the memory asked for (GNU's `-S 1k`
    // makes runs of a few dozen lines; growing the runs as well would make
    // no temporary files where GNU's tests expect them, and growing M only
    // to a 2-way merge's buffers left chunks of 64 bytes: 200,000 one-line
    // runs for 1.4 MB). Not when emsort's own --fan-in or --block-size
    // fixed what the plan needs (then the refusal says the minimum). No
    // warning about merge passes then: the user asked for less.
    const GNU_BATCH_SIZE: u64 = 16;
    // GNU's least buffer, MIN_SORT_SIZE: nmerge · (2 + sizeof (struct line)).
    const GNU_MIN_SORT_SIZE: u64 = GNU_BATCH_SIZE * 34;
    let growable = a.memory.is_some() && a.fan_in.is_none() && a.block_size.is_none();
    let mut built = b.clone().build();
    let mut grown = false;
    let mut asked = None;
    for _ in 0..4 {
        match built {
            Err(SortError::MemoryTooSmall { memory, minimum, stream_buffer, .. }) if growable => {
                let asked = *asked.get_or_insert(memory);
                let merge = (GNU_BATCH_SIZE + 1).saturating_mul(stream_buffer);
                built =
                    b.clone().memory(minimum.max(merge)).chunk_memory(asked.max(GNU_MIN_SORT_SIZE)).build();
                grown = true;
            }
            Err(SortError::MethodMemoryTooSmall { minimum, .. }) if growable => {
                built = b.clone().memory(minimum).build();
                grown = true;
            }
            _ => break,
        }
    }
    let plan = built.map_err(to_anyhow).context("cannot plan the sort")?;
    if let Some(n) = a.parallel.filter(|&n| n > plan.threads() && !a.quiet) {
        eprintln!(
            "{}: note: --parallel {n} capped at {}, the CPUs this process may use",
            crate::program(),
            plan.threads()
        );
    }
    if let Some(w) = plan.memory_warning().filter(|_| !grown && !crate::as_sort()) {
        eprintln!("{}: warning: {w}", crate::program());
    }
    if a.show_plan {
        eprint!("{plan}");
    }
    let other_links = a.output.as_deref().map_or(0, other_links);
    let bar = Bar::new(a.quiet);
    let flag = crate::interrupt::flag();
    // --debug: the sorted lines go to standard output annotated.
    let mut annotated = match &debug_order {
        Some(o) => Some(crate::annotate::Annotated::stdout(o, eol).context("standard output")?),
        None => None,
    };
    // `-o /dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N` naming a pipe or a
    // socket: the kernel's magic link leads to no file to replace; GNU's
    // open(2) of the name writes into the descriptor, and so does this.
    let mut through_fd = a.output.as_deref().and_then(descriptor_output);
    let sink = match (&a.output, annotated.as_mut(), through_fd.as_mut()) {
        (Some(_), _, Some(None)) => Sink::Stdout,
        (Some(_), _, Some(Some(f))) => Sink::Writer(f),
        (Some(o), _, None) => Sink::Path(o),
        (None, Some(w), _) => Sink::Writer(w),
        (None, None, _) => Sink::Stdout,
    };
    let mut replay = stdin_header.map(|h| std::io::Read::chain(std::io::Cursor::new(h), std::io::stdin()));
    let mut replay = replay.as_mut();
    let mut sources = Vec::with_capacity(inputs.len());
    for p in &inputs {
        sources.push(match (is_stdin(p), replay.take()) {
            (true, Some(r)) => Source::Reader(r),
            (true, None) => Source::Stdin,
            (false, _) => Source::Path(p),
        });
    }
    let result = if a.merge {
        // Standard input and pipes are spooled to the temp dir first.
        merge_sources(&plan, sources, sink, &bar, flag)
    } else {
        sort(&plan, sources, sink, &bar, flag)
    };
    let result = result.and_then(|s| match annotated.as_mut().map(|w| w.finish()) {
        Some(Err(e)) => Err(SortError::from(emsort_io::Error::from_io("write", emsort_sort::STDOUT_NAME, e))),
        _ => Ok(s),
    });
    let stats = match result {
        Ok(s) => s,
        // The reader of the output went away (`emsort sort … | head`, a
        // FIFO's reader): temporary files are gone; die of SIGPIPE as GNU
        // sort does (never exit 0 for a truncated output).
        Err(e) if is_broken_pipe(&e) => {
            let name =
                a.output.as_deref().map_or_else(|| "standard output".into(), |o| o.display().to_string());
            return Ok(crate::interrupt::broken_pipe(&name));
        }
        Err(e) => {
            report_kept();
            if let Some(message) = gnu_message(&e, &inputs, a.output.as_deref(), &a.temp_dirs) {
                return Err(anyhow::anyhow!(message));
            }
            let names: Vec<String> = inputs
                .iter()
                .map(|p| if is_stdin(p) { "standard input".into() } else { p.display().to_string() })
                .collect();
            let what = names.join(", ");
            return Err(to_anyhow(e).context(format!("cannot sort {what}")));
        }
    };
    report_kept();
    if !a.quiet {
        report_stale();
        if other_links > 0 {
            let o = a.output.as_deref().expect("an output").display();
            eprintln!(
                "{}: note: {o} had {other_links} other name{} (hard link{}); {} the previous content",
                crate::program(),
                if other_links == 1 { "" } else { "s" },
                if other_links == 1 { "" } else { "s" },
                if other_links == 1 { "it keeps" } else { "they keep" },
            );
        }
    }
    if let Some(path) = &a.stats {
        write_stats(path, &stats)?;
    }
    // Like the progress bar: a summary for a person at a terminal, silence
    // in scripts and pipelines (GNU sort prints nothing).
    if !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        summary(&stats);
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan's builder for `format` with every option but the order:
/// memory (`-S`, lowered under the process's limits, else the default for
/// `input_bytes`), I/O, fan-in, blocks, threads, temp dirs; and M.
fn plan_builder(
    a: &SortArgs,
    format: Format,
    method: emsort_sort::Method,
    input_bytes: Option<u64>,
) -> (emsort_sort::SortPlanBuilder, u64) {
    let memory = match (a.memory, emsort_sort::budget::limit_cap()) {
        // Under `ulimit -v` / `ulimit -d`, a buffer the limits cannot hold
        // would fail (issue 37); GNU sort shrinks its buffer too.
        (Some(m), Some(cap)) if m > cap => {
            if !a.quiet {
                eprintln!(
                    "{}: note: -S {} lowered to {}, half of what this process's memory limits \
                     (ulimit -v, ulimit -d) leave",
                    crate::program(),
                    emsort_io::format_size(m),
                    emsort_io::format_size(cap)
                );
            }
            cap
        }
        (Some(m), _) => m,
        (None, _) => emsort_sort::budget::default_memory(input_bytes),
    };
    let mut b = SortPlan::builder(format).memory(memory).policy(a.policy).method(method);
    b = match a.io.0 {
        Some(kind) => b.io(kind),
        None => b.io_auto(),
    };
    // The streams experiment's slowest kind sorts, but one system call per
    // element made a 1 GiB Parquet sort run for more than 10 minutes.
    if a.io.0 == Some(emsort_io::StreamKind::Syscall) && !crate::as_sort() {
        eprintln!(
            "{}: warning: --io syscall makes a system call for every {} (the streams experiment's \
             slowest kind, there to be measured): a large sort takes many times longer than with \
             the default, --io auto",
            crate::program(),
            if format == Format::Lines { "byte" } else { "item" }
        );
    }
    if let Some(q) = a.queue_depth {
        b = b.queue_depth(q);
    }
    if let Some(d) = a.fan_in.or(a.batch_size) {
        b = b.fan_in(d);
    }
    if let Some(bs) = a.block_size {
        b = b.block_size(bs);
    }
    if let Some(n) = a.chunk_buffers {
        b = b.chunk_buffers(n.into());
    }
    if let Some(n) = a.segments {
        b = b.segments(n);
    }
    if let Some(n) = a.parallel {
        b = b.threads(n);
    }
    for t in &a.temp_dirs {
        b = b.temp_dir(t);
    }
    b = b.compression(match (&a.compress_program, &a.compress) {
        (Some(p), _) => Compression::Program(p.into()),
        (None, Some(c)) => compression(c).unwrap_or(Compression::Auto),
        (None, None) => Compression::Auto,
    });
    if let Some(n) = input_bytes {
        b = b.input_bytes(n);
    }
    (b, memory)
}

/// How many other names (hard links) an output file that will be replaced
/// has: they keep the previous content.
fn other_links(output: &std::path::Path) -> u64 {
    match emsort_io::OutputTarget::classify(output) {
        Ok(emsort_io::OutputTarget::Replace(place)) => place.found().map_or(0, |f| f.nlink.saturating_sub(1)),
        _ => 0,
    }
}

/// Says where complete results were kept because a sort could not finish
/// copying them into their output (this run's, or a killed run's found
/// by the cleaners): printed even with -q, since it is the user's data.
fn report_kept() {
    for k in emsort_io::temp::take_kept_reports() {
        eprintln!("{}: note: kept {}: {}", crate::program(), k.path.display(), k.note);
    }
}

/// Says what this run removed of killed emsort runs (their temporary
/// directories and partial outputs).
pub(crate) fn report_stale() {
    let removed = emsort_io::temp::take_stale_reports();
    if removed.is_empty() {
        return;
    }
    let bytes: u64 = removed.iter().map(|e| e.bytes).sum();
    let mut dirs: Vec<String> = removed
        .iter()
        .map(|e| e.path.parent().map_or_else(|| ".".into(), |p| p.display().to_string()))
        .collect();
    dirs.dedup();
    let size = match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    };
    eprintln!(
        "{}: note: removed what killed emsort runs left in {}: {} temporary entr{}, {size}",
        crate::program(),
        dirs.join(", "),
        removed.len(),
        if removed.len() == 1 { "y" } else { "ies" },
    );
}

/// The descriptor an output name stands for when it is one of the
/// kernel's names of this process's descriptors (`/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`,
/// `/proc/PID/fd/N` of this process) and that descriptor is a pipe or a
/// socket (a regular file or a device behind it has a name of its own,
/// which the output then replaces or writes into as any other):
/// `Some(None)` for standard output, `Some(Some(file))` a duplicate of
/// another descriptor.
fn descriptor_output(path: &std::path::Path) -> Option<Option<std::fs::File>> {
    use std::os::fd::{AsFd, BorrowedFd};
    let s = path.to_str()?;
    let pid = std::process::id().to_string();
    let fd: i32 = match s {
        "/dev/stdout" => 1,
        "/dev/stderr" => 2,
        _ => ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", &format!("/proc/{pid}/fd/")]
            .iter()
            .find_map(|p| s.strip_prefix(p))?
            .parse()
            .ok()?,
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor is only inspected and duplicated, not closed.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let st = rustix::fs::fstat(borrowed).ok()?;
    let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
    if !matches!(
        kind,
        rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket | rustix::fs::FileType::Unknown
    ) {
        return None;
    }
    if fd == 1 {
        return Some(None);
    }
    let dup = borrowed.as_fd().try_clone_to_owned().ok()?;
    Some(Some(std::fs::File::from(dup)))
}

/// GNU sort's words for a file it could not open: "cannot read: FILE:
/// ERROR" (an input), "open failed: FILE: ERROR" (the output), "cannot
/// create temporary file in 'DIR': ERROR"; `None` for other errors.
fn gnu_message(
    e: &SortError,
    inputs: &[PathBuf],
    output: Option<&std::path::Path>,
    temp: &[PathBuf],
) -> Option<String> {
    use emsort_io::ErrorKind;
    let io = e.io()?;
    if !matches!(io.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied | ErrorKind::IsADirectory) {
        return None;
    }
    let errno = io.raw_os_error()?;
    let system = std::io::Error::from_raw_os_error(errno).to_string();
    let system = system.split(" (os error").next().unwrap_or(&system).to_string();
    let path = io.path();
    if inputs.iter().any(|i| i == path) {
        return Some(format!("cannot read: {}: {system}", path.display()));
    }
    if output.is_some_and(|o| o == path) {
        return Some(format!("open failed: {}: {system}", path.display()));
    }
    let default_temp = std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let dirs = if temp.is_empty() { std::slice::from_ref(&default_temp) } else { temp };
    let dir = dirs.iter().find(|d| path.starts_with(d))?;
    Some(format!("cannot create temporary file in '{}': {system}", dir.display()))
}

fn is_broken_pipe(e: &SortError) -> bool {
    let src = e.io().and_then(std::error::Error::source);
    src.and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Refuses a `--stats` file that is an input or the output of the sort: the
/// statistics written at the end would replace the data (`--stats big.txt`,
/// a slip of argument order, would lose the input). Checked before the sort.
/// `--stats -` is standard output, refused when the sorted output goes there.
fn refuse_stats_over(stats: &Path, inputs: &[PathBuf], output: Option<&Path>) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if stats.as_os_str() == "-" {
        if output.is_none_or(|o| o.as_os_str() == "-") {
            anyhow::bail!(
                "--stats -: standard output carries the sorted output (give -o FILE, or name a file)"
            );
        }
        return Ok(());
    }
    let Ok(s) = std::fs::metadata(stats) else { return Ok(()) };
    let same = |p: &Path| std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == (s.dev(), s.ino()));
    let role = if inputs.iter().any(|p| p.as_os_str() != "-" && same(p)) {
        "an input"
    } else if output.is_some_and(same) {
        "the output"
    } else {
        return Ok(());
    };
    anyhow::bail!(
        "--stats {}: that file is {role} of this sort; the statistics would replace it (name another file)",
        stats.display()
    )
}

/// Writes the statistics as JSON to `path` (`-`: standard output).
fn write_stats(path: &std::path::Path, stats: &SortStats) -> anyhow::Result<()> {
    use std::io::Write as _;
    let json = serde_json::to_string_pretty(stats)? + "\n";
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(json.as_bytes())
            .and_then(|()| out.flush())
            .context("cannot write the statistics to standard output");
    }
    std::fs::write(path, json).with_context(|| format!("cannot write the statistics to {}", path.display()))
}

fn summary(s: &SortStats) {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "sorted {:.1} MiB of {} in {:.2} s ({:.0} MiB/s): {} runs, {} merges of at most {} runs, \
         {:.2} passes; run formation {:.2} s, merge {:.2} s; peak RSS {:.1} MiB",
        mib(s.input_bytes),
        s.plan.format,
        s.total_seconds,
        mib(s.input_bytes) / s.total_seconds.max(1e-9),
        s.runs,
        s.merges,
        s.merge_order,
        s.passes,
        s.run_formation.seconds,
        s.merge.seconds,
        mib(s.rusage.peak_rss_bytes),
    );
    if let Some(pd) = &s.parallel_disks {
        eprintln!("{}", parallel_disks_summary(pd));
    }
    if let Some(c) = &s.compression {
        eprintln!("{}", compression_summary(c));
    }
    eprintln!("{}", bounds_summary(&s.bounds));
}

/// The compression line of the summary: what the runs got, why, and the
/// bytes the temporary files took.
pub(crate) fn compression_summary(c: &emsort_sort::CompressionStats) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut line = format!("runs stored: {} (asked: {}; {})", c.chosen, c.requested, c.why);
    if c.raw_written > 0 {
        line += &format!(
            "; temporary files: {:.1} MiB written for {:.1} MiB of runs ({:.0} %), {:.1} MiB read back",
            mib(c.stored_written),
            mib(c.raw_written),
            c.ratio() * 100.0,
            mib(c.stored_read)
        );
    }
    line
}

/// The bounds line of the summary: both limits and which binds.
pub(crate) fn bounds_summary(b: &emsort_sort::Bounds) -> String {
    let io = match b.io_seconds {
        Some(io) => format!("I/O {io:.2} s (its bytes at the temp dir's measured bandwidths)"),
        None => "I/O not known (the temp dir's device unmeasured: --io auto probes it, emsort calibrate \
                 keeps it)"
            .to_string(),
    };
    format!(
        "bounds: CPU {:.2} s (its CPU time over its threads), {io}; the {} bound binds, the sort took {:.2}× it",
        b.cpu_seconds,
        if b.binds == "io" { "I/O" } else { "CPU" },
        b.ratio
    )
}

/// `a, b, c` of per-pass values.
fn per_pass<T: std::fmt::Display>(xs: &[T]) -> String {
    xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// The lines a DSM or SRM sort adds to the summary: D, B, U, passes, R,
/// parallel reads, ν and flushes per pass, the merge time and rate.
fn parallel_disks_summary(pd: &ParallelDiskStats) -> String {
    let nu: Vec<String> = pd.nu.iter().map(|v| format!("{v:.3}")).collect();
    let mut s = format!(
        "{} on D = {} disks, B = {}: U = {} runs, {} merge pass{}, R = {}; parallel reads {}, ν = {}",
        pd.method.name().to_uppercase(),
        pd.disks,
        emsort_io::format_size(pd.block_size as u64),
        pd.runs,
        pd.passes,
        if pd.passes == 1 { "" } else { "es" },
        per_pass(&pd.merge_orders),
        per_pass(&pd.parallel_reads),
        per_pass(&nu),
    );
    if pd.method == MethodKind::Srm {
        s.push_str(&format!(", flushes {}", per_pass(&pd.flushes)));
    }
    s.push_str(&format!(
        "\nmerge {:.2} s, streaming {:.1} MiB/s (read + written){}",
        pd.merge_seconds,
        pd.merge_rate / (1u64 << 20) as f64,
        match &pd.emulated_disk {
            Some(m) => format!("; emulated disks {m} each"),
            None => String::new(),
        }
    ));
    s
}
