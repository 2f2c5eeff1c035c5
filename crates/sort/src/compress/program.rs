//! Compressed runs (GNU sort's `--compress-program=PROG`,
//! [`SortPlanBuilder::compress_program`](crate::SortPlanBuilder::compress_program)):
//! each temporary run is written through a child `PROG` (the run's bytes
//! on its standard input, the run file as its standard output) and read
//! back for its merge through a child `PROG -d` (the file as its standard
//! input, the run's bytes from its standard output), as GNU does. `PROG`
//! is found on `PATH` (or is a path) and gets no other argument.
//!
//! ```text
//!  run formation / merge ──► pipe ──► PROG ──► run file (temp dir)
//!  merge ◄── pipe ◄── PROG -d ◄── run file
//! ```
//!
//! Only the plain method's temporary runs go through it: never the input,
//! the output, nor the sorted files of a merge (`-m`). A program that
//! cannot be started or that ends with a failure status is an error
//! ([`ErrorKind::Program`]) naming it; a child whose run is dropped early
//! (an error elsewhere, Ctrl-C) is killed and reaped; the run files live in
//! the store's temporary directory, removed as every run's is.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use emsort_io::{Error, ErrorKind, Result};

use crate::byte_stream::{BlockSink, RunReader};

/// The error of a program that could not be started.
fn cannot_run(program: &Path, args: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Program(format!("cannot run the compress program{args}: {e}")), program)
}

/// Waits for `program`'s `child` (then sets `done`): an error unless it
/// ended with success.
fn reap(child: &mut Child, done: &mut bool, program: &Path, args: &str, run: &Path) -> Result<()> {
    let status = child.wait().map_err(|e| Error::from_io("wait for the compress program", run, e))?;
    *done = true;
    if status.success() {
        return Ok(());
    }
    let what = format!("the compress program{args} failed ({status}) on the temporary run {}", run.display());
    Err(Error::new(ErrorKind::Program(what), program))
}

/// Kills and reaps a child that is no longer wanted.
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A temporary run being written through `PROG` into its file.
pub(crate) struct CompressedWriter {
    child: Child,
    stdin: Option<ChildStdin>,
    program: PathBuf,
    path: PathBuf,
    /// The child was reaped.
    done: bool,
}

impl CompressedWriter {
    /// Creates the run file `path` (a new file) and starts `program` writing
    /// into it.
    pub fn create(program: &Path, path: &Path) -> Result<CompressedWriter> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::from_io("create", path, e))?;
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(file)
            .spawn()
            .map_err(|e| cannot_run(program, "", e))?;
        let stdin = child.stdin.take();
        Ok(CompressedWriter { child, stdin, program: program.into(), path: path.into(), done: false })
    }

    /// Writes `bytes` to the program. A program that stopped reading is
    /// reported by its exit status.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        };
        match stdin.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.stdin = None;
                self.wait()?;
                let what = "the compress program stopped reading its input".to_string();
                Err(Error::new(ErrorKind::Program(what), &self.program))
            }
            Err(e) => Err(Error::from_io("write to the compress program", &self.path, e)),
        }
    }

    /// Ends the program's input and waits for it: the run is complete when
    /// it exits with success.
    pub fn close(&mut self) -> Result<()> {
        self.stdin = None;
        self.wait()
    }

    fn wait(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        reap(&mut self.child, &mut self.done, &self.program, "", &self.path)
    }
}

impl BlockSink for CompressedWriter {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        CompressedWriter::write(self, bytes)
    }
    fn close(&mut self) -> Result<()> {
        CompressedWriter::close(self)
    }
}

impl RunReader for DecompressedReader {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        DecompressedReader::read(self, buf)
    }
    fn close(&mut self) -> Result<()> {
        DecompressedReader::close(self)
    }
}

impl Drop for CompressedWriter {
    fn drop(&mut self) {
        self.stdin = None;
        if !self.done {
            end(&mut self.child);
        }
    }
}

/// A temporary run being read back through `PROG -d`.
pub(crate) struct DecompressedReader {
    child: Child,
    stdout: ChildStdout,
    program: PathBuf,
    path: PathBuf,
    /// The end was read and the child reaped.
    done: bool,
}

impl DecompressedReader {
    /// Starts `program -d` reading the run file `path`.
    pub fn open(program: &Path, path: &Path) -> Result<DecompressedReader> {
        let file = std::fs::File::open(path).map_err(|e| Error::from_io("open", path, e))?;
        let mut child = Command::new(program)
            .arg("-d")
            .stdin(file)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| cannot_run(program, " (with -d)", e))?;
        let stdout = child.stdout.take().expect("piped");
        Ok(DecompressedReader { child, stdout, program: program.into(), path: path.into(), done: false })
    }

    /// Fills `buf` (less only at the end of the run); returns the bytes
    /// read, 0 at the end. At the end the program must have exited with
    /// success.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() && !self.done {
            match self.stdout.read(&mut buf[n..]) {
                Ok(0) => reap(&mut self.child, &mut self.done, &self.program, " -d", &self.path)?,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::from_io("read from the compress program", &self.path, e)),
            }
        }
        Ok(n)
    }

    /// Stops the program if the run was not read to its end.
    pub fn close(&mut self) -> Result<()> {
        if !self.done {
            self.done = true;
            end(&mut self.child);
        }
        Ok(())
    }
}

impl Drop for DecompressedReader {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_go_through_the_program_and_back() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| format!("{}\n", i % 1000).into_bytes()).collect();
        let mut w = CompressedWriter::create("gzip".as_ref(), &run).unwrap();
        for piece in data.chunks(7000) {
            w.write(piece).unwrap();
        }
        w.close().unwrap();
        let stored = std::fs::read(&run).unwrap();
        assert_eq!(&stored[..2], b"\x1f\x8b", "a gzip file");
        assert!(stored.len() < data.len() / 4);
        let mut r = DecompressedReader::open("gzip".as_ref(), &run).unwrap();
        let (mut back, mut buf) = (Vec::new(), vec![0u8; 4096]);
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(n == buf.len() || r.done, "full blocks until the end");
            back.extend_from_slice(&buf[..n]);
        }
        assert_eq!(back, data);
    }

    #[test]
    fn a_missing_or_failing_program_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let e =
            CompressedWriter::create("emsort-no-such-program".as_ref(), &d.path().join("a")).err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::Program(_)));
        assert!(e.to_string().starts_with("emsort-no-such-program: cannot run the compress program"), "{e}");
        let mut w = CompressedWriter::create("false".as_ref(), &d.path().join("b")).unwrap();
        let e = w.write(&[b'x'; 1 << 20]).err().or_else(|| w.close().err()).unwrap();
        assert!(e.to_string().starts_with("false: "), "{e}");
        std::fs::write(d.path().join("c"), b"not gzip").unwrap();
        let mut r = DecompressedReader::open("gzip".as_ref(), &d.path().join("c")).unwrap();
        let mut buf = vec![0u8; 64];
        let e = r.read(&mut buf).unwrap_err();
        assert!(e.to_string().contains("the compress program -d failed"), "{e}");
    }
}
