//! Sorting from any source into any sink: standard input and output,
//! pipes, devices, files of unknown size.
//!
//! The sort reads its input by offset with a known size, and writes its
//! output beside a target and renames it; pipes and devices allow neither.
//! [`sort`] therefore *spools* where it must:
//!
//! 1. a [`Source::Reader`], or a [`Source::Path`] whose size is not known
//!    up front ([`emsort_io::input_size`]: a pipe, a character device, a
//!    file of `/proc` or `/sys`, an empty file), is first read to its end
//!    and copied, B bytes at a time, to a file in a temporary directory made
//!    under the plan's first temp dir;
//! 2. [`sort_file`] sorts that file (or the [`Source::Path`]);
//! 3. a [`Sink::Path`] that can be replaced ([`OutputTarget::Replace`]) is
//!    written beside and renamed ([`emsort_io::AtomicFile`]: symbolic
//!    links followed, mode, owner and attributes kept). For a [`Sink::Writer`]
//!    or a path that must be written into ([`OutputTarget::WriteInto`]: a
//!    device or a FIFO, which stay what they are, or a file this user cannot
//!    replace) the sort's output goes to a file in the same temporary
//!    directory, and only the complete result is copied into the target.
//!
//! ```text
//!  stdin ──copy──► spool/input ──sort_file──► spool/output ──copy──► stdout, device, FIFO
//! ```
//!
//! Each copy costs one more pass over the data; the temporary directory is
//! removed on success, on error and on interrupt (the cancel flag is polled
//! after every block, and while a FIFO waits for its reader or its pipe is
//! full). Errors about the spooled input name the source
//! (`<standard input>`, the pipe's path), not the spool file. The returned
//! statistics cover the sort only.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{Error, ErrorKind, OutputTarget, Progress};

use crate::byte_stream::{ByteInput, ByteOutput};
use crate::{sort_file, SortError, SortPlan, SortStats};

/// Where the data to sort comes from.
pub enum Source<'a> {
    /// A file (read in place, never modified); a pipe, a device or a file
    /// of unknown size is read as a stream.
    Path(&'a Path),
    /// A stream such as standard input (spooled to a temporary file first).
    Reader(&'a mut dyn Read),
}

/// Where the sorted data goes.
pub enum Sink<'a> {
    /// A file, written beside and renamed when complete (may be the input);
    /// a device or a FIFO is written into.
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
    // What killed sorts left in these directories goes first, whichever
    // of them this sort uses (a DSM/SRM sort of a file makes nothing in
    // -T, but a killed one of standard input left its spool there).
    for dir in plan.temp_dirs.iter().chain(&plan.disks) {
        let _ = emsort_io::temp::remove_stale(dir);
    }
    let mut opened: Option<std::fs::File> = None;
    let (path, reader, source_name): (Option<&Path>, Option<&mut dyn Read>, PathBuf) = match source {
        Source::Path(p) => match emsort_io::input_size(p)? {
            Some(_) => (Some(p), None, p.to_path_buf()),
            None => {
                let f = opened.insert(std::fs::File::open(p).map_err(|e| Error::from_io("open", p, e))?);
                (None, Some(f), p.to_path_buf())
            }
        },
        Source::Reader(r) => (None, Some(r), PathBuf::from("<standard input>")),
    };
    let target = match &sink {
        Sink::Path(o) => Some(OutputTarget::classify(o)?),
        Sink::Writer(_) => None,
    };
    // Errors about the output's temporary file are about the output.
    let name_output = |e: SortError, o: &Path| match e {
        SortError::Io(io)
            if io
                .path()
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(emsort_io::temp::is_atomic_temp_name) =>
        {
            SortError::Io(io.with_path(o))
        }
        other => other,
    };
    if let (Some(i), Some(OutputTarget::Replace(o))) = (path, &target) {
        return sort_file(plan, i, o, progress, cancel).map_err(|e| name_output(e, o));
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
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                        if cancel.load(Ordering::Relaxed) {
                            return Err(Error::new(ErrorKind::Interrupted, &source_name).into());
                        }
                        continue;
                    }
                    Err(e) => return Err(Error::from_io("read", &source_name, e).into()),
                };
                out.write(&buf[..n])?;
                progress.advance(n as u64);
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::new(ErrorKind::Interrupted, &source_name).into());
                }
            }
            out.close()?;
            progress.finish_phase();
            path
        }
    };
    // Errors about the spool file are about the source.
    let spooled = input.clone();
    let name_source = |e: SortError| match e {
        SortError::Io(io) if io.path() == spooled => SortError::Io(io.with_path(&source_name)),
        other => other,
    };
    let sorted = spool.path().join("output");
    match (sink, target) {
        (_, Some(OutputTarget::Replace(o))) => {
            sort_file(plan, &input, &o, progress, cancel).map_err(name_source).map_err(|e| name_output(e, &o))
        }
        (_, Some(OutputTarget::WriteInto(o, kind))) => {
            let stats = sort_file(plan, &input, &sorted, progress, cancel).map_err(name_source)?;
            // Opened only now: a FIFO's reader sees the complete result, and a
            // file rewritten in place is truncated only once the result exists.
            let f = emsort_io::open_into(&o, kind, cancel)?;
            copy_out(plan, &sorted, stats.output_bytes, progress, cancel, |b| {
                emsort_io::write_into(&f, b, &o, cancel)
            })?;
            if kind == emsort_io::IntoKind::InPlace {
                f.sync_all().map_err(|e| Error::from_io("fsync", &o, e))?;
            }
            Ok(stats)
        }
        (Sink::Writer(w), None) => {
            let stats = sort_file(plan, &input, &sorted, progress, cancel).map_err(name_source)?;
            let stdout = "<standard output>";
            copy_out(plan, &sorted, stats.output_bytes, progress, cancel, |b| {
                w.write_all(b).map_err(|e| Error::from_io("write", stdout, e))
            })?;
            w.flush().map_err(|e| Error::from_io("write", stdout, e))?;
            Ok(stats)
        }
        (Sink::Path(_), None) => unreachable!("a path sink is classified"),
    }
}

/// Copies the sorted file `from` (`bytes` long) through `write`, block by
/// block, as the phase "write output".
fn copy_out(
    plan: &SortPlan,
    from: &Path,
    bytes: u64,
    progress: &dyn Progress,
    cancel: &AtomicBool,
    mut write: impl FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), SortError> {
    progress.phase_bytes("write output", Some(bytes));
    let mut inp = ByteInput::open(from, 1, &plan.stream_config(true))?;
    let mut buf = vec![0u8; plan.block_size.max(4096)];
    loop {
        let n = inp.read(&mut buf)?;
        if n == 0 {
            break;
        }
        write(&buf[..n])?;
        progress.advance(n as u64);
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, from).into());
        }
    }
    progress.finish_phase();
    Ok(())
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
