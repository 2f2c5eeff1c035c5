//! `emsort sort --debug`: standard output as GNU `sort --debug` writes it,
//! each sorted line followed by the marks under the parts of it its keys
//! used ([`LineOrder::annotate`]).
//!
//! [`Annotated`] is the writer the sort's output goes into (a
//! `Sink::Writer`): it cuts the sorted bytes into lines as they come and
//! writes each line's annotation to standard output, so the output is
//! streamed as without `--debug` (GNU refuses `--debug` with `-o`, so
//! standard output is the only destination).

use std::io::Write;

use emsort_sort::keys::LineOrder;

/// Bytes of annotated output gathered before a write to standard output.
const FLUSH_AT: usize = 1 << 16;

/// Writes annotated lines to standard output.
pub struct Annotated<'o> {
    order: &'o LineOrder,
    out: std::fs::File,
    /// The line terminator of the sorted data.
    eol: u8,
    /// The start of a line whose end has not come yet.
    line: Vec<u8>,
    /// Annotated output not yet written.
    buf: Vec<u8>,
}

impl<'o> Annotated<'o> {
    /// Annotates by `order` the lines (ended by `eol`) written into it.
    pub fn stdout(order: &'o LineOrder, eol: u8) -> std::io::Result<Annotated<'o>> {
        use std::os::fd::AsFd;
        let out = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        Ok(Annotated { order, out, eol, line: Vec::new(), buf: Vec::with_capacity(FLUSH_AT * 2) })
    }

    /// Annotates a last line that had no terminator (the sort ends every
    /// line, so there is none) and writes what is left.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.order.annotate(&line, &mut self.buf);
        }
        self.flush()
    }
}

impl Write for Annotated<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut rest = data;
        while let Some(p) = rest.iter().position(|&b| b == self.eol) {
            if self.line.is_empty() {
                self.order.annotate(&rest[..p], &mut self.buf);
            } else {
                self.line.extend_from_slice(&rest[..p]);
                self.order.annotate(&self.line, &mut self.buf);
                self.line.clear();
            }
            rest = &rest[p + 1..];
            if self.buf.len() >= FLUSH_AT {
                self.out.write_all(&self.buf)?;
                self.buf.clear();
            }
        }
        self.line.extend_from_slice(rest);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}
