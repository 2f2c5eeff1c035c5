//! `emsort calibrate`: a quick calibration writes a file that loads, with
//! plausible values and the guidelines printed; a bad --dir writes nothing.

use emsort_io::Calibration;

use crate::{run, stderr, stdout};

#[test]
fn quick_calibration_writes_a_loadable_file_and_prints_guidelines() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cfg").join("calibration");
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let o = run(&[
        "calibrate",
        "--quick",
        "--dir",
        work.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--cache",
        "fadvise",
        "-q",
    ]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    let c = Calibration::load(&out).unwrap();
    // Plausible: inside the ranges the quick plan measures.
    assert!(c.mmap_max_request == 0 || (4096..=256 << 10).contains(&c.mmap_max_request), "{c:?}");
    assert!((16 << 10..=4 << 20).contains(&c.max_block), "{c:?}");
    assert!([1, 8, 32].contains(&c.queue_depth), "{c:?}");
    assert!(c.uring_min_request == usize::MAX || (1 << 20..=8 << 20).contains(&c.uring_min_request), "{c:?}");
    // 1, 2, the thesis' 4, or (small random reads) all cores.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
    for t in [c.threads_sequential, c.threads_random_small, c.threads_random_large] {
        assert!([1, 2, 4, cores].contains(&t) || (t == 0 && c.threads_random_small == 0), "{c:?}");
    }
    // Every measured value is marked, measured or inconclusive.
    use emsort_io::reader::calibration::{Key, Origin};
    for k in Key::ALL {
        let marked = c.origins.get(k) != Origin::Unmarked;
        assert_eq!(marked, !matches!(k, Key::SequentialRun | Key::RandomRun), "{k}: {c:?}");
    }
    // What each value rests on: the tables and the decisions.
    for want in [
        "1. random 4K reads",
        "→ mmap_advice = ",
        "2. the same reads through the adaptive reader's mapping",
        "→ prefetch = ",
        "→ max_block = ",
        "→ queue_depth = ",
        "threads_sequential = ",
        "the data file in runs of 16M",
        "→ direct_readahead = ",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    // The guidelines as a decision list.
    for want in ["System level", "File level", "Request level", "Threads"] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    assert!(text.contains(&format!("written to {}", out.display())), "{text}");
    // The file says how it was measured; the scratch directory is gone.
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(file.starts_with("# measured by: ") && file.contains("fadvise"), "{file}");
    assert_eq!(crate::entries(&work), Vec::<String>::new());
    assert_eq!(crate::entries(out.parent().unwrap()), ["calibration"]);
}

#[test]
fn a_bad_dir_is_a_clear_error_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("calibration");
    let missing = d.path().join("missing");
    let o =
        run(&["calibrate", "--quick", "--dir", missing.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("{}: no such directory", missing.display())), "{e}");
    let file = d.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let o =
        run(&["calibrate", "--quick", "--dir", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
    // --output naming a directory is refused before measuring.
    let o = run(&["calibrate", "--quick", "-o", d.path().to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    assert_eq!(crate::entries(d.path()), ["f"]);
}
