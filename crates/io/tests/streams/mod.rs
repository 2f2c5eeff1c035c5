//! Every kind against the oracle: bytes written compared with
//! `std::fs::read`, elements read compared with the `Vec` written.

use std::fmt::Debug;

use emsort_io::{
    as_bytes, create_output, open_input, Element, InputStream, OutputStream, StreamConfig, StreamKind,
};

use crate::util::{data, effective_block, push_all, read_file, tmp, write_file, MODES};

/// Requested block sizes B in bytes: tiny, odd (rounding), one page, odd
/// above a page, 64 KiB.
const BLOCKS: [usize; 5] = [4, 12, 4096, 5000, 65536];

fn page() -> usize {
    // SAFETY: plain query.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Checks the rounding rules of `config.rs` for the block size used.
fn check_rounding<T: Element>(kind: StreamKind, b: usize, used_bytes: usize) {
    let s = T::SIZE;
    match kind {
        StreamKind::Syscall => assert_eq!(used_bytes, s),
        StreamKind::Stdio => assert_eq!(used_bytes, 8192),
        StreamKind::Buffered | StreamKind::Uring => assert_eq!(used_bytes, b.max(s).div_ceil(s) * s),
        StreamKind::Mmap => assert_eq!(used_bytes, b.max(1).div_ceil(page()) * page()),
        StreamKind::Direct | StreamKind::UringDirect => {
            // A multiple of the device alignment (≥ 512, ≤ 4096 here) and
            // of the element size, the smallest such ≥ B.
            assert_eq!(used_bytes % 512, 0, "B={b} used={used_bytes}");
            assert_eq!(used_bytes % s, 0);
            assert!(used_bytes >= b && used_bytes - b < 4096.max(s), "B={b} used={used_bytes}");
        }
    }
}

fn round_trips<T: Element + PartialEq + Debug>(seed: u64, extra_n: usize) {
    let dir = tmp();
    for kind in StreamKind::ALL {
        for b in BLOCKS {
            let cfg = StreamConfig::new(kind).block_size(b).queue_depth(3);
            let e = effective_block::<T>(dir.path(), &cfg);
            check_rounding::<T>(kind, b, e * T::SIZE);
            let mut ns = vec![0, 1, e - 1, e, e + 1, 3 * e + 7, extra_n];
            ns.sort_unstable();
            ns.dedup();
            for n in ns {
                for mode in MODES {
                    let xs = data::<T>(n, seed + n as u64);
                    let p = dir.path().join(format!("{kind}-{b}-{n}-{mode:?}"));
                    write_file(&p, &cfg, &xs, mode);
                    let on_disk = std::fs::read(&p).unwrap();
                    assert!(
                        on_disk == as_bytes(&xs),
                        "{kind} B={b} N={n} {mode:?}: file holds {} bytes, expected {}",
                        on_disk.len(),
                        xs.len() * T::SIZE
                    );
                    // Read in a different mode than written, to mix paths.
                    let rmode = MODES[(MODES.iter().position(|&m| m == mode).unwrap() + 1) % 3];
                    let back = read_file::<T>(&p, &cfg, rmode);
                    assert!(back == xs, "{kind} B={b} N={n} {rmode:?}: elements read differ");
                    std::fs::remove_file(&p).unwrap();
                }
            }
        }
    }
}

#[test]
fn round_trip_u8() {
    round_trips::<u8>(1, 1000);
}

#[test]
fn round_trip_u32() {
    round_trips::<u32>(2, 1000);
}

#[test]
fn round_trip_u64() {
    round_trips::<u64>(3, 1000);
}

#[test]
fn round_trip_large_elements() {
    // 4096-byte elements: as large as a page, the largest allowed.
    round_trips::<[u64; 512]>(4, 10);
}

/// Reading a file written by another tool (std) gives its elements.
#[test]
fn reads_files_written_by_std() {
    let dir = tmp();
    let xs = data::<u32>(12345, 9);
    let p = dir.path().join("std.bin");
    std::fs::write(&p, as_bytes(&xs)).unwrap();
    for kind in StreamKind::ALL {
        for mode in MODES {
            let cfg = StreamConfig::new(kind).block_size(4096);
            assert!(read_file::<u32>(&p, &cfg, mode) == xs, "{kind} {mode:?}");
        }
    }
}

fn interleaved(kind: StreamKind, k: usize, b: usize) {
    let dir = tmp();
    let cfg = StreamConfig::new(kind).block_size(b).queue_depth(2);
    // Unequal lengths, one stream empty when k > 1.
    let lens: Vec<usize> = (0..k).map(|j| if j == 1 { 0 } else { 700 + 397 * j }).collect();
    let want: Vec<Vec<u32>> = lens.iter().enumerate().map(|(j, &n)| data::<u32>(n, 100 + j as u64)).collect();
    let paths: Vec<_> = (0..k).map(|j| dir.path().join(format!("s{j}"))).collect();

    let mut outs: Vec<_> = paths.iter().map(|p| create_output::<u32>(p, &cfg).unwrap()).collect();
    let longest = *lens.iter().max().unwrap();
    for i in 0..longest {
        for (out, w) in outs.iter_mut().zip(&want) {
            if let Some(&x) = w.get(i) {
                out.write(x).unwrap();
            }
        }
    }
    for out in &mut outs {
        out.close().unwrap();
    }
    for (j, p) in paths.iter().enumerate() {
        assert!(std::fs::read(p).unwrap() == as_bytes(&want[j]), "{kind} k={k} B={b} stream {j}");
    }

    let mut ins: Vec<_> = paths.iter().map(|p| open_input::<u32>(p, &cfg).unwrap()).collect();
    let mut got: Vec<Vec<u32>> = vec![Vec::new(); k];
    let mut live = k;
    let mut done = vec![false; k];
    while live > 0 {
        for (j, inp) in ins.iter_mut().enumerate() {
            if done[j] {
                continue;
            }
            match inp.read_next().unwrap() {
                Some(x) => got[j].push(x),
                None => {
                    assert!(inp.end_of_stream().unwrap());
                    done[j] = true;
                    live -= 1;
                }
            }
        }
    }
    for (j, inp) in ins.iter_mut().enumerate() {
        inp.close().unwrap();
        assert!(got[j] == want[j], "{kind} k={k} B={b} stream {j}: elements differ");
    }
}

#[test]
fn k_streams_round_robin() {
    for kind in StreamKind::ALL {
        for k in [1, 2, 5, 8] {
            for b in [12, 4096] {
                interleaved(kind, k, b);
            }
        }
    }
}

/// The documented contract: an output stream dropped without `close` leaves
/// exactly the elements written.
#[test]
fn dropped_output_holds_exactly_what_was_written() {
    let dir = tmp();
    for kind in StreamKind::ALL {
        for mode in MODES {
            let cfg = StreamConfig::new(kind).block_size(4096).queue_depth(2);
            let e = effective_block::<u32>(dir.path(), &cfg);
            for n in [0, 1, e + 3, 5 * e / 2 + 1] {
                let xs = data::<u32>(n, 7);
                let p = dir.path().join(format!("drop-{kind}-{mode:?}-{n}"));
                let mut out = create_output::<u32>(&p, &cfg).unwrap();
                push_all(&mut out, &xs, mode, kind);
                drop(out);
                assert!(std::fs::read(&p).unwrap() == as_bytes(&xs), "{kind} {mode:?} N={n}");
            }
        }
    }
}

/// Inputs dropped half-way (with requests in flight for `uring`) release
/// everything; the file can be read again.
#[test]
fn input_dropped_half_way() {
    let dir = tmp();
    let xs = data::<u64>(20000, 5);
    let p = dir.path().join("half");
    std::fs::write(&p, as_bytes(&xs)).unwrap();
    for kind in StreamKind::ALL {
        let cfg = StreamConfig::new(kind).block_size(4096).queue_depth(8);
        let mut inp = open_input::<u64>(&p, &cfg).unwrap();
        for x in &xs[..5000] {
            assert_eq!(inp.read_next().unwrap(), Some(*x));
        }
        drop(inp);
        let mut inp = open_input::<u64>(&p, &cfg).unwrap();
        assert_eq!(inp.read_next().unwrap(), Some(xs[0]));
    }
}

/// `sync_on_close` makes `close` call `fsync`, counted as `other`.
#[test]
fn sync_on_close_is_counted() {
    let dir = tmp();
    for kind in StreamKind::ALL {
        for sync in [false, true] {
            let cfg = StreamConfig::new(kind).block_size(4096).sync_on_close(sync);
            let mut out = create_output::<u32>(&dir.path().join(format!("{kind}-{sync}")), &cfg).unwrap();
            out.write_all(&data::<u32>(3000, 1)).unwrap();
            let before = out.syscalls().other;
            out.close().unwrap();
            assert_eq!(out.syscalls().other - before, sync as u64, "{kind} sync={sync}");
        }
    }
}

/// Bulk reads into a buffer smaller than a block and larger than a block
/// after a few per-element reads.
#[test]
fn read_into_any_buffer_size() {
    let dir = tmp();
    let xs = data::<u32>(10_000, 11);
    let p = dir.path().join("f");
    std::fs::write(&p, as_bytes(&xs)).unwrap();
    for kind in StreamKind::ALL {
        for chunk in [1, 5, 1023, 1024, 1025, 9999, 20_000] {
            let cfg = StreamConfig::new(kind).block_size(4096);
            let mut inp = open_input::<u32>(&p, &cfg).unwrap();
            let mut v = vec![inp.read_next().unwrap().unwrap()];
            let mut buf = vec![0u32; chunk];
            loop {
                let n = inp.read_into(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                v.extend_from_slice(&buf[..n]);
            }
            assert!(v == xs, "{kind} chunk={chunk}");
        }
    }
}

/// Streams can move to another thread (the sort merges on worker threads).
#[test]
fn streams_are_send() {
    fn send<S: Send>() {}
    send::<emsort_io::AnyInput<u32>>();
    send::<emsort_io::AnyOutput<u32>>();
    send::<emsort_io::AnyInput<[u8; 4096]>>();
    let dir = tmp();
    for kind in StreamKind::ALL {
        let p = dir.path().join(format!("t-{kind}"));
        let cfg = StreamConfig::new(kind).block_size(4096);
        let mut out = create_output::<u32>(&p, &cfg).unwrap();
        out.write_all(&[1, 2, 3]).unwrap();
        let mut out = std::thread::spawn(move || {
            out.write(4).unwrap();
            out
        })
        .join()
        .unwrap();
        out.close().unwrap();
        let inp = open_input::<u32>(&p, &cfg).unwrap();
        let v = std::thread::spawn(move || {
            let mut inp = inp;
            crate::util::pull_all(&mut inp, crate::util::Mode::PerElement, kind)
        })
        .join()
        .unwrap();
        assert_eq!(v, [1, 2, 3, 4], "{kind}");
    }
}
