//! `emsort verify`: check order and, optionally, the multiset.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use emsort_sort::verify::verify;
use emsort_sort::Format;

/// Check that FILE is sorted; with --input, also that it holds exactly the
/// same items as ORIGINAL (any order).
///
/// Streams both files once in constant memory. The multiset check compares
/// order-independent 128-bit fingerprints. Exit status: 0 when every check
/// holds, 1 when one fails (the first out-of-order item is named), 2 or 3 when
/// a file cannot be read.
#[derive(Args)]
pub struct VerifyArgs {
    /// u32, i32, u64, i64, f32, f64, rec:SIZE:KEY_OFFSET:KEY_LEN or lines (a file of
    /// `emsort gen --format csv` is lines).
    #[arg(long, short = 'f', default_value = "u32", value_parser = parse_format)]
    format: Format,
    /// Check descending order.
    #[arg(short, long)]
    reverse: bool,
    /// The original (unsorted) file: FILE must hold the same multiset.
    #[arg(long, value_name = "ORIGINAL")]
    input: Option<PathBuf>,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
    /// The file to check.
    file: PathBuf,
}

/// A format, with `csv` refused by name: it is a generator kind, whose
/// files are lines, and verify checks whole-line order only.
fn parse_format(s: &str) -> Result<Format, String> {
    if s.trim().eq_ignore_ascii_case("csv") {
        return Err("csv is a kind of `emsort gen`, not a format: its files are text lines; \
                    check whole-line order with --format lines (verify does not check key \
                    orders such as -t, -k3,3n)"
            .into());
    }
    s.parse()
}

pub fn run(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    let r = verify(&a.file, a.format, a.reverse, a.input.as_deref(), crate::interrupt::flag())
        .with_context(|| format!("cannot verify {}", a.file.display()))?;
    let order = if a.reverse { "descending" } else { "ascending" };
    let mut ok = true;
    if let Some(d) = &r.disorder {
        ok = false;
        println!(
            "{}: NOT in {order} order: item {} (byte offset {}) is {} than item {}",
            a.file.display(),
            d.index,
            d.offset,
            if a.reverse { "larger" } else { "smaller" },
            d.index - 1
        );
    }
    if let (Some(false), Some(orig), Some(o)) = (r.same_multiset(), &a.input, r.original) {
        ok = false;
        println!(
            "{}: does NOT hold the same items as {} ({} items vs {}{})",
            a.file.display(),
            orig.display(),
            r.items,
            o.count,
            if o.count == r.items { ", same count but different values" } else { "" }
        );
    }
    if ok {
        if !a.quiet {
            let same = if a.input.is_some() { ", same multiset as the input" } else { "" };
            println!("{}: OK, {} items in {order} order ({}){same}", a.file.display(), r.items, a.format);
        }
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}
