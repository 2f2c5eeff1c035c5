//! One timed run: write or read k streams round-robin.
//!
//! The loops are generic over the element (`u32`) and go through
//! [`AnyOutput`] / [`AnyInput`], whose per-call `match` the compiler keeps
//! cheap: no virtual call per element.
//!
//! - **Write**: the clock starts before the first `create` and stops after
//!   the last `close`; the streams sync on close, so the time includes
//!   getting the data onto the device. Element j goes to stream j mod k.
//! - **Read**: the clock starts before the first `open`; the k streams are
//!   read round-robin, each closed as soon as it is exhausted, and the clock
//!   stops after the last `close`. The values are summed (and the sum passed
//!   through [`std::hint::black_box`]) so the reads cannot be optimised
//!   away; the caller checks the sum against the data set's.
//!
//! Both loops look at the cancel flag every [`CANCEL_EVERY`] rounds (one
//! relaxed load), so Ctrl-C stops even a long run promptly.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::{
    create_output, open_input, AnyInput, AnyOutput, Error, ErrorKind, InputStream, OutputStream,
    StreamConfig, StreamInfo, SyscallCounts,
};
use rand::RngCore;

use super::dataset::generator;
use super::point::ELEMENT_SIZE;

/// Rounds (one element per stream) between two looks at the cancel flag.
pub(crate) const CANCEL_EVERY: u64 = 1 << 16;

/// What one run measured.
#[derive(Debug, Clone)]
pub(crate) struct Measure {
    /// Wall time of the timed region.
    pub seconds: f64,
    /// Bytes moved: elements · 4.
    pub bytes: u64,
    /// Elements moved.
    pub elements: u64,
    /// System calls of all k streams, summed.
    pub calls: SyscallCounts,
    /// What the first stream really did (all k are configured alike).
    pub info: StreamInfo,
    /// Wrapping sum of the values written or read.
    pub sum: u64,
}

/// Creates `files` and writes `n` elements to each, round-robin.
pub(crate) fn write(
    files: &[PathBuf],
    cfg: &StreamConfig,
    n: u64,
    cancel: &AtomicBool,
) -> emsort_io::Result<Measure> {
    let k = files.len() as u32;
    let mut rng = generator(k, n);
    let mut sum = 0u64;
    let start = Instant::now();
    let mut outs: Vec<AnyOutput<u32>> =
        files.iter().map(|p| create_output(p, cfg)).collect::<emsort_io::Result<_>>()?;
    for round in 0..n {
        if round % CANCEL_EVERY == 0 && cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, &files[0]));
        }
        for o in outs.iter_mut() {
            let x = rng.next_u32();
            sum = sum.wrapping_add(u64::from(x));
            o.write(x)?;
        }
    }
    for o in outs.iter_mut() {
        o.close()?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let elements = u64::from(k) * n;
    Ok(Measure {
        seconds,
        bytes: elements * ELEMENT_SIZE,
        elements,
        calls: total_calls(outs.iter().map(|o| o.syscalls())),
        info: outs[0].info().clone(),
        sum: std::hint::black_box(sum),
    })
}

/// Opens `files` and reads them round-robin until all are exhausted.
pub(crate) fn read(files: &[PathBuf], cfg: &StreamConfig, cancel: &AtomicBool) -> emsort_io::Result<Measure> {
    let start = Instant::now();
    let mut ins: Vec<AnyInput<u32>> =
        files.iter().map(|p| open_input(p, cfg)).collect::<emsort_io::Result<_>>()?;
    let mut live: Vec<usize> = (0..ins.len()).collect();
    let mut sum = 0u64;
    let mut elements = 0u64;
    let mut round = 0u64;
    while !live.is_empty() {
        if round.is_multiple_of(CANCEL_EVERY) && cancel.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::Interrupted, &files[0]));
        }
        round += 1;
        let mut i = 0;
        while i < live.len() {
            let s = &mut ins[live[i]];
            match s.read_next()? {
                Some(x) => {
                    sum = sum.wrapping_add(u64::from(x));
                    elements += 1;
                    i += 1;
                }
                None => {
                    s.close()?;
                    live.remove(i);
                }
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Measure {
        seconds,
        bytes: elements * ELEMENT_SIZE,
        elements,
        calls: total_calls(ins.iter().map(|s| s.syscalls())),
        info: ins[0].info().clone(),
        sum: std::hint::black_box(sum),
    })
}

fn total_calls(it: impl Iterator<Item = SyscallCounts>) -> SyscallCounts {
    it.fold(SyscallCounts::default(), |mut a, c| {
        a += c;
        a
    })
}

#[cfg(test)]
mod tests {
    use super::super::dataset::{expected_sum, paths};
    use super::*;
    use emsort_io::StreamKind;

    #[test]
    fn write_then_read_round_trips_for_every_kind() {
        let dir = tempfile::tempdir().unwrap();
        // 5000 elements = 20000 bytes: several blocks of 4 KiB per file,
        // more than uring's queue depth, and a partial last block.
        let n = 5000;
        let files = paths(dir.path(), 3, n);
        for kind in StreamKind::ALL {
            let cfg = StreamConfig::new(kind).block_size(4096).sync_on_close(true);
            let no = AtomicBool::new(false);
            let w = match write(&files, &cfg, n, &no) {
                Ok(w) => w,
                Err(e) if *e.kind() == emsort_io::ErrorKind::UringUnavailable => continue,
                Err(e) => panic!("{kind}: {e}"),
            };
            assert_eq!(w.elements, 3 * n);
            assert_eq!(w.bytes, 12 * n);
            assert_eq!(w.sum, expected_sum(3, n), "{kind}");
            assert!(w.calls.data_calls() >= 1, "{kind}");
            let r = read(&files, &cfg, &no).unwrap();
            assert_eq!((r.elements, r.sum), (3 * n, w.sum), "{kind}");
            assert!(r.seconds > 0.0);
        }
    }

    #[test]
    fn cancel_stops_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let files = paths(dir.path(), 1, 10);
        let cfg = StreamConfig::new(StreamKind::Buffered);
        let yes = AtomicBool::new(true);
        let e = write(&files, &cfg, 10, &yes).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Interrupted);
        write(&files, &cfg, 10, &AtomicBool::new(false)).unwrap();
        assert_eq!(*read(&files, &cfg, &yes).unwrap_err().kind(), ErrorKind::Interrupted);
    }
}
