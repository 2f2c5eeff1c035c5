//! Header lines (`--header`, [`SortPlan::header`]): each input's first
//! line — its first record, for CSV, which may span lines — names its
//! columns and is not sorted.
//!
//! - The first input's header is the output's first line, byte for byte
//!   (a newline added if it had none): the output holds it (`HeaderSlot`)
//!   and writes it before the first sorted byte, so a sort whose input is
//!   only a header writes the header alone.
//! - Every other input's header must be the same (a CRLF file's and an LF
//!   file's may differ in their line ends): else it is bad input at its
//!   line 1, and nothing is written.
//! - A sort takes each input's header off as it reads it (`Headers::strip`,
//!   in module `source`); a merge (`-m`) reads each file's header first and
//!   its runs skip it (`RunFile::skip`); `-c` skips it
//!   ([`crate::check::check_order`]).
//! - Front ends read the first input's header before the sort
//!   ([`first_record`]) to turn keys that name columns
//!   ([`Key::parse_column`](crate::keys::Key::parse_column)) into field
//!   numbers ([`LineOrder::columns`]).

use std::io::Read;
use std::path::Path;

use emsort_io::{Error, ErrorKind, Result};

use crate::codec::{self, SharedCodec};
use crate::keys::LineOrder;
use crate::output::HeaderSlot;
use crate::plan::SortPlan;
use crate::Format;

/// The headers of one sort's inputs.
pub(crate) struct Headers {
    codec: SharedCodec,
    eol: u8,
    slot: HeaderSlot,
    /// The header of the input being read, while it is.
    cut: Option<Cut>,
}

/// A header being read: its bytes so far and the parse of its end.
#[derive(Default)]
struct Cut {
    state: u64,
    record: Vec<u8>,
}

impl Headers {
    /// The headers of `plan`'s inputs; the first one's goes into `slot`.
    pub fn new(plan: &SortPlan, slot: HeaderSlot) -> Headers {
        Headers { codec: codec::for_plan(plan), eol: plan.eol(), slot, cut: Some(Cut::default()) }
    }

    /// Takes the header's bytes off the start of `buf[..n]`, the input's
    /// next bytes (of the input named `name`): moves the rest to the front
    /// and returns its length.
    pub fn strip(&mut self, buf: &mut [u8], n: usize, name: &Path) -> Result<usize> {
        let Some(cut) = &mut self.cut else { return Ok(n) };
        let mut end = None;
        codec::each_end(&*self.codec, &buf[..n], &mut cut.state, |p| {
            end = Some(p);
            false
        });
        let taken = end.map_or(n, |p| p + 1);
        cut.record.extend_from_slice(&buf[..taken]);
        if end.is_some() {
            self.end_input(name)?;
        }
        buf.copy_within(taken..n, 0);
        Ok(n - taken)
    }

    /// At the end of an input (or of its header): its header is whole. The
    /// next input starts with its own.
    pub fn end_input(&mut self, name: &Path) -> Result<()> {
        if let Some(cut) = self.cut.take() {
            self.found(cut.record, name)?;
        }
        Ok(())
    }

    /// The next input starts (after [`Headers::end_input`]).
    pub fn next_input(&mut self) {
        self.cut = Some(Cut::default());
    }

    /// `record` is the header of the input named `name`: the first one
    /// (an empty input has none), or one that must equal it.
    pub fn found(&mut self, mut record: Vec<u8>, name: &Path) -> Result<()> {
        if record.is_empty() {
            return Ok(());
        }
        if record.last() != Some(&self.eol) {
            record.push(self.eol);
        }
        let first = self.slot.get_or_init(|| record.clone());
        let bare = |r: &[u8]| {
            let r = &r[..r.len() - 1];
            r.strip_suffix(b"\r").unwrap_or(r).to_vec()
        };
        if bare(first) != bare(&record) {
            let reason = format!(
                "its header differs from the first input's (\"{}\")",
                String::from_utf8_lossy(&bare(first)).escape_debug()
            );
            return Err(Error::new(ErrorKind::BadInput { line: 1, reason }, name));
        }
        Ok(())
    }
}

/// Reads the first line of `input` (a CSV record when `order` says so,
/// which may span lines), with its terminator if it has one: the header
/// whose columns keys may name. Reads a byte at a time, so nothing after
/// it is taken from a stream that is read on afterwards.
pub fn first_record(input: &mut dyn Read, eol: u8, order: Option<&LineOrder>) -> std::io::Result<Vec<u8>> {
    let codec = codec::of(Format::Lines, false, eol, order);
    let (mut state, mut record, mut byte) = (0, Vec::new(), [0u8]);
    loop {
        match input.read(&mut byte) {
            Ok(0) => return Ok(record),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        record.push(byte[0]);
        let mut ended = false;
        codec::each_end(&*codec, &byte, &mut state, |_| {
            ended = true;
            false
        });
        if ended {
            return Ok(record);
        }
    }
}

/// The header of the file at `path` ([`first_record`], read through a
/// buffer).
pub(crate) fn of_file(path: &Path, eol: u8, order: Option<&LineOrder>) -> Result<Vec<u8>> {
    let f = std::fs::File::open(path).map_err(|e| Error::from_io("open", path, e))?;
    first_record(&mut std::io::BufReader::new(f), eol, order).map_err(|e| Error::from_io("read", path, e))
}
