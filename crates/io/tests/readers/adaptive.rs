//! The adaptive reader: the thesis' rules for given sizes and hints, the
//! calibration file (load, defaults, malformed, discovery), what it reports.

use emsort_io::{
    open_reader, AccessHint, Calibration, ErrorKind, Madvise, Reader, ReaderConfig, ReaderKind, Rule,
};

use super::file;
use crate::util::{is_child, run_child, test_name, tmp};

/// The rules with the built-in (thesis) thresholds, request by request.
#[test]
fn thesis_rules_for_sizes_and_swap_flag() {
    let c = Calibration::default();
    let k = |amount, swap, seq| {
        let ch = c.choose(amount, swap, seq);
        (ch.kind, ch.rule)
    };
    // swapFlag set: ≤ 32 KiB → mmap.
    assert_eq!(k(1, true, false), (ReaderKind::Mmap, Rule::SmallRandom));
    assert_eq!(k(4096, true, false), (ReaderKind::Mmap, Rule::SmallRandom));
    assert_eq!(k(32 << 10, true, false), (ReaderKind::Mmap, Rule::SmallRandom));
    // > 32 KiB → buffered, block = request clamped to [4K, 4M].
    assert_eq!(k((32 << 10) + 1, true, false), (ReaderKind::Pread, Rule::LargerThanMmap));
    assert_eq!(c.choose(100_000, true, false).block_size, 100_000);
    assert_eq!(c.choose(6 << 20, true, false).block_size, 4 << 20);
    // ≥ 8 MiB → io_uring, blocks of 4 MiB, Q = 32.
    let u = c.choose(8 << 20, true, false);
    assert_eq!((u.kind, u.rule, u.block_size, u.queue_depth), (ReaderKind::Uring, Rule::Large, 4 << 20, 32));
    // swapFlag clear: never mmap; small requests read a 4 KiB block.
    let s = c.choose(100, false, false);
    assert_eq!((s.kind, s.rule, s.block_size), (ReaderKind::Pread, Rule::NoSwapFlag, 4096));
    assert_eq!(k(64 << 20, false, false), (ReaderKind::Uring, Rule::Large));
    // A sequential run: buffered even for small requests.
    assert_eq!(k(4096, true, true), (ReaderKind::Pread, Rule::SequentialRun));
}

fn adaptive(access: AccessHint, cal: Calibration) -> ReaderConfig {
    ReaderConfig::new(ReaderKind::Adaptive).access(access).calibration(cal)
}

/// Thresholds small enough for a small test file to meet every rule.
fn small_cal() -> Calibration {
    Calibration {
        mmap_max_request: 1024,
        uring_min_request: 64 << 10,
        max_block: 16 << 10,
        ..Default::default()
    }
}

/// Reads `(offset, amount)` and returns the technique and rule used.
fn pick(rd: &mut emsort_io::AnyReader, offset: u64, amount: usize) -> (ReaderKind, Rule) {
    let mut buf = vec![0u8; amount];
    rd.read_bytes(offset, amount, &mut buf).unwrap();
    let c = rd.last_choice().expect("adaptive reports its choice");
    (c.kind, c.rule)
}

#[test]
fn reader_follows_hints_and_sizes() {
    let dir = tmp();
    let (p, _) = file(dir.path(), "f", 300_000, 1);

    // random (swapFlag set): small → mmap, medium → pread, large → uring.
    let mut rd = open_reader(&p, &adaptive(AccessHint::Random, small_cal())).unwrap();
    assert_eq!(rd.as_adaptive().unwrap().access(), AccessHint::Random);
    assert_eq!(pick(&mut rd, 5000, 1024), (ReaderKind::Mmap, Rule::SmallRandom));
    assert_eq!(pick(&mut rd, 100, 1025), (ReaderKind::Pread, Rule::LargerThanMmap));
    assert_eq!(pick(&mut rd, 9, 64 << 10), (ReaderKind::Uring, Rule::Large));
    // With the random hint, a run of continuing requests stays on mmap.
    for i in 0..5 {
        assert_eq!(pick(&mut rd, i * 100, 100).0, ReaderKind::Mmap);
    }
    let c = rd.as_adaptive().unwrap().counts();
    assert_eq!((c.mmap_requests, c.pread_requests, c.uring_requests), (6, 1, 1));
    assert_eq!(c.mmap_bytes, 1024 + 500);
    assert_eq!(c.bytes(), 1024 + 500 + 1025 + (64 << 10));

    // larger-than-memory and sequential (swapFlag clear): never mmap.
    for hint in [AccessHint::LargerThanMemory, AccessHint::Sequential] {
        let mut rd = open_reader(&p, &adaptive(hint, small_cal())).unwrap();
        assert_eq!(pick(&mut rd, 5000, 10), (ReaderKind::Pread, Rule::NoSwapFlag), "{hint}");
        assert_eq!(pick(&mut rd, 0, 100 << 10), (ReaderKind::Uring, Rule::Large), "{hint}");
        assert_eq!(rd.as_adaptive_mut().unwrap().swap_flag(), Some(false), "{hint}");
    }

    // auto: the first request says nothing about the offsets: pread ...
    let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, small_cal())).unwrap();
    assert_eq!(pick(&mut rd, 50_000, 100), (ReaderKind::Pread, Rule::NotYetRandom));
    // ... a jump (random_run = 1) makes them random, and a small file fits
    // in memory, so swapFlag is set ...
    assert_eq!(pick(&mut rd, 7000, 100), (ReaderKind::Mmap, Rule::SmallRandom));
    // ... until requests continue each other: after 2 (sequential_run) the
    // run counts as sequential and gets pread, until it is broken.
    assert_eq!(pick(&mut rd, 7100, 100).0, ReaderKind::Mmap);
    assert_eq!(pick(&mut rd, 7200, 100), (ReaderKind::Pread, Rule::SequentialRun));
    assert_eq!(pick(&mut rd, 7300, 100), (ReaderKind::Pread, Rule::SequentialRun));
    assert_eq!(pick(&mut rd, 100, 100), (ReaderKind::Mmap, Rule::SmallRandom));
    assert_eq!(rd.as_adaptive_mut().unwrap().swap_flag(), Some(true));

    // A reopened file starts over: no jumps seen yet.
    rd.close().unwrap();
    rd.open(&p).unwrap();
    assert_eq!(pick(&mut rd, 7000, 100), (ReaderKind::Pread, Rule::NotYetRandom));

    // sequential_run = 0 and random_run = 0 turn both detections off: the
    // thesis' benchmark, swapFlag set for every file.
    let cal = Calibration { sequential_run: 0, random_run: 0, ..small_cal() };
    let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, cal)).unwrap();
    for i in 0..5 {
        assert_eq!(pick(&mut rd, i * 100, 100).0, ReaderKind::Mmap);
    }
    // A sequential run without jumps stays on pread.
    let cal = Calibration { random_run: 2, ..small_cal() };
    let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, cal)).unwrap();
    for i in 0..5 {
        assert_eq!(pick(&mut rd, i * 100, 100).0, ReaderKind::Pread);
    }
    assert_eq!(pick(&mut rd, 9000, 100), (ReaderKind::Pread, Rule::NotYetRandom));
    assert_eq!(pick(&mut rd, 20, 100), (ReaderKind::Mmap, Rule::SmallRandom));

    // The other kinds report no choice.
    let mut rd = open_reader(&p, &ReaderConfig::new(ReaderKind::Pread)).unwrap();
    rd.read_bytes(0, 10, &mut [0; 10]).unwrap();
    assert!(rd.last_choice().is_none());
}

/// The built-in defaults are the thesis' numbers.
#[test]
fn defaults_are_the_thesis_values() {
    let c = Calibration::default();
    assert_eq!(c.mmap_max_request, 32 << 10);
    assert_eq!(c.max_block, 4 << 20);
    assert_eq!(c.queue_depth, 32);
    assert_eq!(c.mmap_advice, Madvise::Normal);
    assert!(c.source.as_deref().is_none());
    let g = c.guidelines();
    assert!(g.contains("Request ≤ 32K?\n     yes → mmap (madvise normal)."), "{g}");
    assert!(g.contains("not before 1 request jumped elsewhere"), "{g}");
    assert!(g.contains("queue depth 32"), "{g}");
}

/// Bytes of `path` in the page cache (`mincore` over a fresh mapping).
fn resident(path: &std::path::Path) -> u64 {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a read-only mapping that is only asked about, never touched.
    let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
    let page = 4096;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `vec` has a byte per page of the mapping.
    let rc = unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, len, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore");
    vec.iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64
}

/// With `prefetch = on`, the first request served by the mapping starts
/// reading the whole file into the page cache; without it, one fault reads
/// at most a readahead window (the control: 48 MiB is beyond any usual
/// `read_ahead_kb`). The bytes are the file's either way.
#[test]
fn prefetch_reads_the_whole_file_in_the_background() {
    let dir = tmp();
    let (p, bytes) = file(dir.path(), "f", 48 << 20, 7);
    for prefetch in [false, true] {
        std::fs::File::open(&p).unwrap().sync_all().unwrap();
        emsort_io::cache::evict_file(&p).unwrap();
        assert!(resident(&p) < 1 << 20, "evicted before the run");
        let cal = Calibration { mmap_max_request: 4096, random_run: 0, prefetch, ..Default::default() };
        let mut rd = open_reader(&p, &adaptive(AccessHint::Random, cal)).unwrap();
        let mut buf = vec![0u8; 4096];
        let off = 20 << 20;
        assert_eq!(rd.read_bytes(off, 4096, &mut buf).unwrap(), 4096);
        assert_eq!(&buf[..], &bytes[off as usize..off as usize + 4096]);
        assert_eq!(rd.last_choice().unwrap().kind, ReaderKind::Mmap);
        let c = rd.as_adaptive().unwrap().counts();
        assert_eq!((c.prefetched_files, c.prefetched_bytes), if prefetch { (1, 48 << 20) } else { (0, 0) });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while prefetch && resident(&p) < bytes.len() as u64 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let r = resident(&p);
        if prefetch {
            assert_eq!(r, bytes.len() as u64, "the whole file is in the cache");
        } else {
            assert!(r < 40 << 20, "one fault read {r} bytes: more than a readahead window");
        }
        super::check_random_reads(&mut rd, &bytes, 200, 3, "adaptive with prefetch");
        rd.close().unwrap();
    }
}

#[test]
fn loads_a_calibration_file() {
    let dir = tmp();
    let p = dir.path().join("calibration");
    std::fs::write(
        &p,
        "# measured here\n\nmmap_max_request = 8K\nmax_block = 1M   # plateau\nqueue_depth=16\n\
         uring_min_request = off\nmmap_advice = random\nthreads_random_small = all\n",
    )
    .unwrap();
    let c = Calibration::load(&p).unwrap();
    assert_eq!(c.mmap_max_request, 8 << 10);
    assert_eq!(c.max_block, 1 << 20);
    assert_eq!(c.queue_depth, 16);
    assert_eq!(c.uring_min_request, usize::MAX);
    assert_eq!(c.mmap_advice, Madvise::Random);
    assert_eq!(c.sequential_run, Calibration::default().sequential_run, "missing keys keep defaults");
    assert_eq!(c.source.as_deref(), Some(p.as_path()));
    // The written form loads back to the same values.
    let q = dir.path().join("again");
    std::fs::write(&q, c.to_string()).unwrap();
    let d = Calibration::load(&q).unwrap();
    assert_eq!(d.to_string(), c.to_string());

    // The reader follows the loaded thresholds.
    let (f, _) = file(dir.path(), "f", 100_000, 2);
    let mut rd = open_reader(&f, &adaptive(AccessHint::Random, c)).unwrap();
    assert_eq!(pick(&mut rd, 0, 8 << 10).0, ReaderKind::Mmap);
    assert_eq!(pick(&mut rd, 0, (8 << 10) + 1).0, ReaderKind::Pread);
    assert_eq!(pick(&mut rd, 0, 90_000).0, ReaderKind::Pread, "uring is off");
    assert_eq!(rd.as_adaptive().unwrap().calibration().queue_depth, 16);
}

/// Issue 38: values a calibration marks inconclusive are the thesis' ones,
/// in the file loaded and in a calibration made in code; measured ones are
/// followed.
#[test]
fn inconclusive_values_fall_back_to_the_thesis() {
    use emsort_io::reader::calibration::{Key, Origin};
    let dir = tmp();
    let p = dir.path().join("calibration");
    // The measurement said 1K for mmap (measured) and 16K / 64K for the
    // others, but could not tell those from the thesis' 4M and 8M.
    std::fs::write(
        &p,
        "mmap_max_request = 1K  # measured\n\
         max_block = 16K        # inconclusive: the thesis' value\n\
         uring_min_request = 64K # inconclusive\n",
    )
    .unwrap();
    let loaded = Calibration::load(&p).unwrap();
    assert_eq!(loaded.origins.keys(Origin::Inconclusive), [Key::MaxBlock, Key::UringMinRequest]);
    let d = Calibration::default();
    assert_eq!((loaded.max_block, loaded.uring_min_request), (d.max_block, d.uring_min_request));
    // The same marks on values set in code: the reader puts the thesis' values back.
    let mut made =
        Calibration { mmap_max_request: 1024, max_block: 16 << 10, uring_min_request: 64 << 10, ..d };
    made.origins.set(Key::MmapMaxRequest, Origin::Measured);
    made.origins.set(Key::MaxBlock, Origin::Inconclusive);
    made.origins.set(Key::UringMinRequest, Origin::Inconclusive);
    let (f, _) = file(dir.path(), "f", 300_000, 3);
    for cal in [loaded, made] {
        let mut rd = open_reader(&f, &adaptive(AccessHint::Random, cal)).unwrap();
        let used = rd.as_adaptive().unwrap().calibration().clone();
        assert_eq!((used.max_block, used.uring_min_request, used.mmap_max_request), (4 << 20, 8 << 20, 1024));
        // 1K: mmap (measured); 2K: pread with the thesis' 4K block, not
        // the inconclusive one; 200K: pread (uring only from 8M), one
        // block of 200K (≤ 4M, where 16K would have cut it).
        assert_eq!(pick(&mut rd, 0, 1024).0, ReaderKind::Mmap);
        assert_eq!(pick(&mut rd, 8192, 2048).0, ReaderKind::Pread);
        let mut buf = vec![0u8; 200_000];
        rd.read_bytes(0, 200_000, &mut buf).unwrap();
        let c = rd.last_choice().unwrap();
        assert_eq!((c.kind, c.block_size), (ReaderKind::Pread, 200_000));
    }
}

#[test]
fn a_malformed_calibration_file_is_a_clear_error() {
    let dir = tmp();
    let p = dir.path().join("calibration");
    for (text, line, needle) in [
        ("max_block = 1M\nqueue_depth = many\n", 2, "queue_depth: invalid number 'many'"),
        ("mmap_max_request: 4K\n", 1, "expected 'key = value'"),
        ("# ok\nblock = 4K\n", 2, "unknown key 'block'"),
        ("max_block = 1M\nmax_block = 2M\n", 2, "given twice"),
        ("max_block = 12Q\n", 1, "invalid size '12Q'"),
        ("mmap_advice = sometimes\n", 1, "unknown madvise hint"),
    ] {
        std::fs::write(&p, text).unwrap();
        let e = Calibration::load(&p).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::BadConfig { line: l, .. } if *l == line), "{text:?}: {e:?}");
        assert_eq!(e.path(), p);
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("{}:{line}: ", p.display())), "{msg}");
        assert!(msg.contains(needle), "{text:?}: {msg}");
    }
    std::fs::write(&p, b"max_block = \xff\n").unwrap();
    let e = Calibration::load(&p).unwrap_err();
    assert!(e.to_string().contains("not UTF-8"), "{e}");

    // Missing: an error for `load`, the defaults for `load_if_present`.
    let missing = dir.path().join("none");
    assert_eq!(*Calibration::load(&missing).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(Calibration::load_if_present(&missing).unwrap(), Calibration::default());
    // A directory is not a calibration file.
    assert_eq!(*Calibration::load(dir.path()).unwrap_err().kind(), ErrorKind::IsADirectory);
}

/// `discover` finds `$XDG_CONFIG_HOME/emsort/calibration`, else
/// `$HOME/.config/emsort/calibration`, else uses the defaults (in a child
/// process, since it reads the environment).
#[test]
fn discovers_the_default_path() {
    let name = test_name(module_path!(), "discovers_the_default_path");
    if is_child(&name) {
        let xdg = std::env::var_os("XDG_CONFIG_HOME").unwrap();
        let p = Calibration::default_path().unwrap();
        assert_eq!(p, std::path::Path::new(&xdg).join("emsort/calibration"));
        // Absent: built-in values.
        assert_eq!(Calibration::discover().unwrap(), Calibration::default());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "queue_depth = 8\n").unwrap();
        let c = Calibration::discover().unwrap();
        assert_eq!(c.queue_depth, 8);
        assert_eq!(c.source.as_deref(), Some(p.as_path()));
        std::fs::write(&p, "queue_depth = 0\n").unwrap();
        let e = Calibration::discover().unwrap_err();
        assert!(e.to_string().contains("calibration:1: queue_depth"), "{e}");
        return;
    }
    let dir = tmp();
    run_child(&name, &[("XDG_CONFIG_HOME", dir.path().as_os_str())], || Ok(()));
    let home = tmp();
    let name2 = test_name(module_path!(), "discovers_the_home_path");
    run_child(
        &name2,
        &[("HOME", home.path().as_os_str()), ("XDG_CONFIG_HOME", std::ffi::OsStr::new(""))],
        || Ok(()),
    );
}

#[test]
fn discovers_the_home_path() {
    let name = test_name(module_path!(), "discovers_the_home_path");
    if !is_child(&name) {
        return; // run by `discovers_the_default_path`
    }
    let home = std::env::var_os("HOME").unwrap();
    assert_eq!(
        Calibration::default_path().unwrap(),
        std::path::Path::new(&home).join(".config/emsort/calibration")
    );
}

/// With `direct_readahead`, a sequential run on an evicted file is served
/// by `O_DIRECT` reads ahead of it: every byte is the file's (requests of an
/// odd size at unaligned offsets, skips inside and beyond the window, a jump
/// back, the end of the file), the run's bytes do not pass through the page
/// cache, and once the file is cached the same run is read from the cache.
#[test]
fn direct_readahead_reads_runs_around_the_page_cache() {
    let dir = tmp();
    let size = (24 << 20) + 4321;
    let (p, bytes) = file(dir.path(), "f", size, 9);
    std::fs::File::open(&p).unwrap().sync_all().unwrap();
    emsort_io::cache::evict_file(&p).unwrap();
    assert!(resident(&p) < 1 << 20, "evicted before the run");
    let cal = Calibration { direct_readahead: 2, ..Default::default() };
    let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, cal)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut check = |rd: &mut emsort_io::AnyReader, off: u64, amount: usize| -> usize {
        let n = rd.read_bytes(off, amount, &mut buf).unwrap();
        assert!(buf[..n] == *super::expected(&bytes, off, amount), "({off}, {amount})");
        assert_eq!(n, super::expected(&bytes, off, amount).len(), "({off}, {amount})");
        n
    };
    // A run from an odd offset, then a skip inside the window, one far
    // beyond it, a jump back, and a run that ends with the file.
    let mut run = |rd: &mut emsort_io::AnyReader, mut off: u64, requests: usize| {
        for _ in 0..requests {
            off += check(rd, off, 300_001) as u64;
        }
        off
    };
    let end = run(&mut rd, 777, 40);
    let end = run(&mut rd, end + 1_000_000, 4);
    run(&mut rd, end + (9 << 20), 4);
    run(&mut rd, 5, 6);
    run(&mut rd, size as u64 - 2_000_000, 10);
    let c = rd.as_adaptive().unwrap().counts();
    assert!(c.direct_requests >= 20 && c.direct_bytes >= 6 << 20, "{c:?}");
    assert_eq!(rd.as_adaptive().unwrap().fallback(), None);
    let r = resident(&p);
    assert!(r < 8 << 20, "{r} bytes of the file in the page cache: the runs went through it");
    rd.close().unwrap();

    // Cached: the run is copied from the cache, not read again.
    let _ = std::fs::read(&p).unwrap();
    let cal = Calibration { direct_readahead: 2, ..Default::default() };
    let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, cal)).unwrap();
    run(&mut rd, 0, 40);
    let c = rd.as_adaptive().unwrap().counts();
    assert_eq!(c.direct_requests, 0, "{c:?}");
    assert_eq!(rd.last_choice().unwrap().rule, Rule::CachedRun);
}

/// Where `cachestat` is refused (a file the caller can read but neither
/// owns nor may write), the direct read-ahead cannot tell cached data from
/// uncached, so sequential runs get `pread` instead, and the reader says
/// why. Root may do anything: the check runs in a child that drops to
/// `nobody` first.
#[test]
fn direct_readahead_falls_back_to_pread_without_cachestat() {
    let name = test_name(module_path!(), "direct_readahead_falls_back_to_pread_without_cachestat");
    if is_child(&name) {
        let p = std::path::PathBuf::from(std::env::var("EMSORT_IO_TEST_FILE").unwrap());
        // SAFETY: plain system calls; this process exists only for this test.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
        let bytes = std::fs::read(&p).unwrap();
        let cal = Calibration { direct_readahead: 2, ..Default::default() };
        let mut rd = open_reader(&p, &adaptive(AccessHint::Auto, cal)).unwrap();
        let mut buf = vec![0u8; 300_001];
        let mut off = 0u64;
        for _ in 0..10 {
            let n = rd.read_bytes(off, 300_001, &mut buf).unwrap();
            assert!(buf[..n] == *super::expected(&bytes, off, 300_001), "({off}, 300001)");
            off += n as u64;
        }
        let a = rd.as_adaptive().unwrap();
        assert_eq!(a.counts().direct_requests, 0, "{:?}", a.counts());
        assert_eq!(rd.last_choice().unwrap().rule, Rule::DirectUnavailable);
        let why = rd.as_adaptive().unwrap().fallback().unwrap_or_default().to_string();
        assert!(why.contains("direct read-ahead unavailable") && why.contains("using pread"), "{why}");
        return;
    }
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "SKIPPED direct_readahead_falls_back_to_pread_without_cachestat: needs root to switch to nobody"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (p, _) = file(dir.path(), "f", (4 << 20) + 7, 3);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    run_child(&name, &[("EMSORT_IO_TEST_FILE", p.as_os_str())], || Ok(()));
}
