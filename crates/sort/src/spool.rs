//! Sorting from a reader and into a writer (standard input and output).
//!
//! The sort needs its input twice-readable with a known size, and writes its
//! output beside a target and renames it; pipes allow neither. [`sort`]
//! therefore *spools*:
//!
//! 1. a [`Source::Reader`] is first copied, B bytes at a time, to a file in
//!    a temporary directory made under the plan's first temp dir;
//! 2. [`sort_file`] sorts that file (or the [`Source::Path`]);
//! 3. for a [`Sink::Writer`] the sort's output goes to a file in the same
//!    temporary directory, which is then copied to the writer.
//!
//! ```text
//!  stdin ──copy──► spool/input ──sort_file──► spool/output ──copy──► stdout
//! ```
//!
//! A [`Source::Path`] that names a pipe or a device (`<(cmd)`,
//! `/dev/stdin`) is read as a stream too. Each copy costs one more pass over
//! the data; the temporary directory
//! is removed on success, on error and on interrupt (the cancel flag is
//! polled after every block). The returned statistics cover the sort only.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{Error, ErrorKind, Progress};

use crate::byte_stream::{ByteInput, ByteOutput};
use crate::{sort_file, SortError, SortPlan, SortStats};

/// Where the data to sort comes from.
pub enum Source<'a> {
    /// A file (read in place, never modified).
    Path(&'a Path),
    /// A stream such as standard input (spooled to a temporary file first).
    Reader(&'a mut dyn Read),
}

/// Where the sorted data goes.
pub enum Sink<'a> {
    /// A file, written beside and renamed when complete (may be the input).
    Path(&'a Path),
    /// A stream such as standard output (copied from a temporary file).
    Writer(&'a mut dyn Write),
}

/// Sorts `source` into `sink` with `plan`; see the module docs.
pub fn sort(
    plan: &SortPlan,
    source: Source<'_>,
    sink: Sink<'_>,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    // A pipe or device given by name (`<(cmd)`, /dev/stdin) is read as a stream.
    let mut opened: Option<std::fs::File> = None;
    let (path, reader): (Option<&Path>, Option<&mut dyn Read>) = match source {
        Source::Path(p) if std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()) => {
            let f = opened.insert(std::fs::File::open(p).map_err(|e| Error::from_io("open", p, e))?);
            (None, Some(f))
        }
        Source::Path(p) => (Some(p), None),
        Source::Reader(r) => (None, Some(r)),
    };
    if let (Some(i), Sink::Path(o)) = (path, &sink) {
        return sort_file(plan, i, o, progress, cancel);
    }
    let root =
        plan.temp_dirs.first().ok_or_else(|| SortError::BadPlan("no temporary directory given".into()))?;
    let spool = crate::sorter::temp_dir_in(root, "emsort-spool-")?;
    let block = plan.block_size.max(4096);
    let input = match (path, reader) {
        (Some(p), _) => p.to_path_buf(),
        (None, None) => unreachable!("a path or a reader"),
        (None, Some(r)) => {
            let path = spool.path().join("input");
            progress.phase_bytes("read input", None);
            let mut out = ByteOutput::create(&path, 1, &plan.stream_config(false))?;
            let mut buf = vec![0u8; block];
            loop {
                let n = match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::from_io("read", "<standard input>", e).into()),
                };
                out.write(&buf[..n])?;
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, "<standard input>").into());
                }
            }
            out.close()?;
            progress.finish_phase();
            path
        }
    };
    match sink {
        Sink::Path(o) => sort_file(plan, &input, o, progress, cancel),
        Sink::Writer(w) => {
            let path = spool.path().join("output");
            let stats = sort_file(plan, &input, &path, progress, cancel)?;
            progress.phase_bytes("write output", Some(stats.output_bytes));
            let mut inp = ByteInput::open(&path, 1, &plan.stream_config(true))?;
            let mut buf = vec![0u8; block];
            let stdout = "<standard output>";
            loop {
                let n = inp.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                w.write_all(&buf[..n]).map_err(|e| Error::from_io("write", stdout, e))?;
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, stdout).into());
                }
            }
            w.flush().map_err(|e| Error::from_io("write", stdout, e))?;
            progress.finish_phase();
            Ok(stats)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    #[test]
    fn reader_to_writer_and_back() {
        let d = tempfile::tempdir().unwrap();
        let plan = SortPlan::builder(Format::Lines)
            .memory(64 << 10)
            .block_size(4096)
            .temp_dir(d.path())
            .build()
            .unwrap();
        let text = b"pear\napple\n\xff\n\nfig".repeat(500);
        let mut out = Vec::new();
        let no = AtomicBool::new(false);
        let stats =
            sort(&plan, Source::Reader(&mut &text[..]), Sink::Writer(&mut out), &emsort_io::NoProgress, &no)
                .unwrap();
        assert!(stats.runs > 1);
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        lines.sort();
        let expect: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
        assert_eq!(out, expect);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
