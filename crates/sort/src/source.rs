//! Where the data to sort comes from: files, standard input, pipes, and
//! items pushed by a program, read once as one stream.
//!
//! A sort's [`Source`]s are read in the order given, as one concatenated
//! input (GNU `sort a b c`):
//!
//! - a regular file with a size ([`emsort_io::input_size`]) is read
//!   through a stream of the plan's input kind (O_DIRECT, io_uring, …),
//!   by offset, and must be a whole number of items (fixed-size formats;
//!   checked before anything is read). Its size counts towards the input
//!   size the plan derives its runs from;
//! - standard input, a pipe, a character device, a file of `/proc` or
//!   `/sys` or an empty file is read with `read(2)` to its end, once: no
//!   copy of it is made (the size of the input is then not known up front,
//!   and run formation uses two chunk buffers of M/2 each);
//! - pushed items ([`crate::Sorter::push`]) arrive in blocks through a
//!   channel.
//!
//! For `lines`, a source whose last line has no terminator (`\n`, or NUL
//! under `-z`: [`SortPlan::eol`]) gets one, so that line does not run into
//! the next source's first line (as GNU `sort` does).
//! With headers ([`SortPlan::header`]), each source's first line (record)
//! is taken off as it is read (module `header`).
//! Every source is checked (it exists, it is not a directory, it is whole
//! items) before the sort reads anything; files are opened one at a time.
//! Errors name the source: its path, or `<standard input>`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;

use emsort_io::{Error, ErrorKind, Result};

use crate::byte_stream::ByteInput;
use crate::codec::{self, InputEnds, SharedCodec};
use crate::header::Headers;
use crate::output::HeaderSlot;
use crate::plan::SortPlan;
use crate::Format;

/// One input of a sort.
pub enum Source<'a> {
    /// A file (never modified); a pipe, a device or a file of unknown size
    /// is read as a stream.
    Path(&'a Path),
    /// The process's standard input (`-` on the command line).
    Stdin,
    /// Any reader, named `<standard input>` in errors.
    Reader(&'a mut (dyn Read + Send)),
}

/// The name of standard input in messages.
pub const STDIN_NAME: &str = "<standard input>";

/// A checked source: a file read by offset, or a stream.
pub(crate) enum Opened<'a> {
    /// A regular file of this size (for a merge, a run as it is).
    File(PathBuf, u64),
    /// Standard input, a pipe, a device, a file of unknown size, already
    /// open, named for errors. A merge spools it into its temp dir first
    /// ([`PlainStore::of_inputs`](crate::plain::PlainStore::of_inputs)),
    /// since the merge reads its runs by path.
    Stream(PathBuf, Box<dyn Read + Send + 'a>),
}

/// Checks `sources` (each exists, is not a directory, and a file is whole
/// items) and opens those that must be read as streams; nothing is read.
pub(crate) fn open_sources<'a>(plan: &SortPlan, sources: Vec<Source<'a>>) -> Result<Vec<Opened<'a>>> {
    let mut opened = Vec::with_capacity(sources.len());
    for s in sources {
        opened.push(match s {
            Source::Path(p) => match emsort_io::input_size(p)? {
                Some(size) => {
                    if let Some(s) = plan.format().item_size().filter(|&s| size % s as u64 != 0) {
                        return Err(Error::new(ErrorKind::BadSize { size, element_size: s }, p));
                    }
                    Opened::File(p.to_path_buf(), size)
                }
                None => {
                    let f = std::fs::File::open(p).map_err(|e| Error::from_io("open", p, e))?;
                    Opened::Stream(p.to_path_buf(), Box::new(f))
                }
            },
            Source::Stdin => Opened::Stream(STDIN_NAME.into(), Box::new(std::io::stdin())),
            Source::Reader(r) => Opened::Stream(STDIN_NAME.into(), Box::new(r)),
        });
    }
    Ok(opened)
}

/// One part of the concatenated input.
enum Part<'a> {
    /// A regular file of `size` bytes, opened when its turn comes.
    File { path: PathBuf, size: u64, stream: Option<Box<ByteInput>> },
    /// Read with `read(2)` to its end.
    Stream { name: PathBuf, reader: Box<dyn Read + Send + 'a> },
    /// Blocks pushed by a program.
    Pushed { rx: Receiver<Vec<u8>>, block: Vec<u8>, pos: usize },
}

/// The name of `parts[cur]` (of the last part past the end) for errors.
fn part_name(parts: &[Part<'_>], cur: usize) -> PathBuf {
    match parts.get(cur.min(parts.len().saturating_sub(1))) {
        Some(Part::File { path, .. }) => path.clone(),
        Some(Part::Stream { name, .. }) => name.clone(),
        _ => PathBuf::from("<pushed items>"),
    }
}

/// The sources of one sort as one stream of bytes.
pub(crate) struct Input<'a> {
    parts: Vec<Part<'a>>,
    /// The part being read.
    cur: usize,
    /// Bytes of the current part so far.
    part_bytes: u64,
    /// The current part's last byte was the line terminator (or it is
    /// empty).
    ends_line: bool,
    format: Format,
    /// The line terminator (`lines`).
    eol: u8,
    unit: usize,
    cfg: emsort_io::StreamConfig,
    /// The input's size when every part has a known one.
    known: Option<u64>,
    /// Bytes read from the sources (without added newlines).
    read: u64,
    /// The parse of item ends, for items that not every terminator ends
    /// (CSV records): a source must not end inside one; and the check of
    /// items checked as they are read (JSON lines).
    ends: Option<(SharedCodec, InputEnds)>,
    /// Each part's header, taken off (`--header`, module `header`).
    headers: Option<Box<Headers>>,
}

impl<'a> Input<'a> {
    /// Checks `sources` and prepares to read them in order with `plan`'s
    /// input streams.
    pub fn open(plan: &SortPlan, sources: Vec<Source<'a>>) -> Result<Input<'a>> {
        let parts = open_sources(plan, sources)?
            .into_iter()
            .map(|o| match o {
                Opened::File(path, size) => Part::File { path, size, stream: None },
                Opened::Stream(name, reader) => Part::Stream { name, reader },
            })
            .collect();
        Ok(Input::new(plan, parts))
    }

    /// Blocks pushed through `rx`, until its sender hangs up.
    pub fn pushed(plan: &SortPlan, rx: Receiver<Vec<u8>>) -> Input<'static> {
        Input::new(plan, vec![Part::Pushed { rx, block: Vec::new(), pos: 0 }])
    }

    fn new(plan: &SortPlan, parts: Vec<Part<'a>>) -> Input<'a> {
        let known = parts
            .iter()
            .map(|p| match p {
                Part::File { size, .. } => Some(*size),
                _ => None,
            })
            .sum();
        Input {
            parts,
            cur: 0,
            part_bytes: 0,
            ends_line: true,
            format: plan.format(),
            eol: plan.eol(),
            unit: plan.unit(),
            cfg: plan.file_config(true),
            known,
            read: 0,
            ends: Some(codec::for_plan(plan))
                .filter(|c| !c.ends_at_terminators() || c.checks_items())
                .map(|c| (c, InputEnds::new(plan.line_order()))),
            headers: None,
        }
    }

    /// Takes each source's header off (when the plan has headers): the
    /// first one's goes into `slot`.
    pub fn take_headers(&mut self, plan: &SortPlan, slot: HeaderSlot) {
        if plan.header() {
            self.headers = Some(Box::new(Headers::new(plan, slot)));
        }
    }

    /// The input's size, when every source has a known one.
    pub fn known_size(&self) -> Option<u64> {
        self.known
    }

    /// Bytes still to come, when known.
    pub fn remaining(&self) -> Option<u64> {
        self.known.map(|k| k.saturating_sub(self.read))
    }

    /// Bytes read from the sources so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The offset in its file of the next byte a read returns (0 where the
    /// source is not a file, or the current one has ended): reads of whole
    /// blocks start at offsets that are multiples of the block.
    pub fn offset_in_file(&self) -> u64 {
        match self.parts.get(self.cur) {
            Some(Part::File { size, .. }) if self.part_bytes < *size => self.part_bytes,
            _ => 0,
        }
    }

    /// A name for errors: the current source's.
    pub fn name(&self) -> PathBuf {
        part_name(&self.parts, self.cur)
    }

    /// At the current source's end: an error if it ends inside an item
    /// whose end is parsed (a CSV record's open quote).
    fn end_parse(&mut self) -> Result<()> {
        let Some(mut ends) = self.ends.take() else { return Ok(()) };
        let done = ends.1.finish(&*ends.0, &self.name());
        self.ends = Some(ends);
        done
    }

    /// Reads into `buf`; returns the bytes read, 0 only at the end of the
    /// last source. Reads from a file stream ask for a whole number of
    /// units (the caller keeps `buf`'s start unit-aligned there).
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        while self.cur < self.parts.len() {
            let n = match &mut self.parts[self.cur] {
                Part::File { path, size, stream } => {
                    if stream.is_none() {
                        *stream = Some(Box::new(ByteInput::open(path, self.unit, &self.cfg)?));
                    }
                    let s = stream.as_mut().expect("opened");
                    let want = buf.len().min((*size - self.part_bytes) as usize) / self.unit * self.unit;
                    let n = if want == 0 { 0 } else { s.read(&mut buf[..want])? };
                    if n == 0 {
                        if self.part_bytes < *size {
                            return Err(Error::new(
                                ErrorKind::Io("read (the input shrank during the sort)"),
                                path,
                            ));
                        }
                        s.close()?;
                        *stream = None;
                    }
                    n
                }
                Part::Stream { name, reader } => loop {
                    match reader.read(buf) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(Error::from_io("read", name, e)),
                    }
                },
                Part::Pushed { rx, block, pos } => {
                    if *pos == block.len() {
                        // Empty once the sender hangs up: the end.
                        *block = rx.recv().unwrap_or_default();
                        *pos = 0;
                    }
                    let n = buf.len().min(block.len() - *pos);
                    buf[..n].copy_from_slice(&block[*pos..*pos + n]);
                    *pos += n;
                    n
                }
            };
            if n > 0 {
                self.part_bytes += n as u64;
                self.read += n as u64;
                if let Some((c, e)) = &mut self.ends {
                    e.feed(&**c, &buf[..n], &part_name(&self.parts, self.cur))?;
                }
                // The reader stops at a file's known end without another read.
                if matches!(&self.parts[self.cur], Part::File { size, .. } if *size == self.part_bytes) {
                    self.end_parse()?;
                }
                let n = match &mut self.headers {
                    Some(h) => h.strip(buf, n, &part_name(&self.parts, self.cur))?,
                    None => n,
                };
                if n == 0 {
                    continue;
                }
                self.ends_line = buf[n - 1] == self.eol;
                return Ok(n);
            }
            self.end_parse()?;
            if let Some(h) = &mut self.headers {
                h.end_input(&part_name(&self.parts, self.cur))?;
                h.next_input();
            }
            // The end of this part.
            if let Some(s) = self.format.item_size().filter(|&s| !self.part_bytes.is_multiple_of(s as u64)) {
                let size = self.part_bytes;
                return Err(Error::new(ErrorKind::BadSize { size, element_size: s }, self.name()));
            }
            let add_newline = self.format == Format::Lines && !self.ends_line && !buf.is_empty();
            self.cur += 1;
            self.part_bytes = 0;
            self.ends_line = true;
            if add_newline {
                buf[0] = self.eol;
                return Ok(1);
            }
        }
        Ok(0)
    }
}
