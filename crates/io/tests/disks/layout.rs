//! The layout formula checked on the per-disk files: block j of a run
//! started on disk s is on disk (s + j) mod D at offset ⌊j / D⌋ · B.

use super::{bytes, start, write_run};

#[test]
fn blocks_are_where_the_formula_says() {
    let b = 100;
    for d in [1, 2, 3, 6] {
        let (_root, io) = start(d, b, false, None, None);
        for s in 0..d {
            let len = b * (2 * d + 1) + 37; // ragged: a short last block
            let data = bytes(len, (d * 10 + s) as u64);
            let id = 100 + s as u64;
            let run = write_run(&io, id, s, d, &data, 333);
            // Build each disk's expected file from the formula alone.
            let mut want: Vec<Vec<u8>> = vec![Vec::new(); d];
            for (j, blk) in data.chunks(b).enumerate() {
                let disk = (s + j) % d;
                let off = (j / d) * b;
                assert_eq!(run.disk_of(j as u64), disk);
                assert_eq!(run.offset_of(j as u64), off as u64);
                assert_eq!(run.block_len(j as u64), blk.len());
                let f = &mut want[disk];
                assert_eq!(f.len(), off, "D={d} s={s}: blocks of one disk are contiguous");
                f.extend_from_slice(blk);
            }
            for (k, w) in want.iter().enumerate() {
                let path = io.set().dir(k).join(format!("run-{id:06}.s"));
                assert_eq!(run.path(io.set(), k), path);
                let got = std::fs::read(&path).unwrap();
                assert!(got == *w, "D={d} s={s} disk {k}: file differs from the formula");
            }
        }
    }
}

#[test]
fn short_runs_leave_later_disks_without_files() {
    let (_root, io) = start(6, 64, false, None, None);
    let run = write_run(&io, 3, 4, 6, &bytes(64 * 2 + 1, 1), 1000);
    // Blocks 0, 1, 2 on disks 4, 5, 0.
    for k in 0..6 {
        assert_eq!(run.path(io.set(), k).exists(), [0, 4, 5].contains(&k), "disk {k}");
    }
    let empty = write_run(&io, 4, 0, 6, &[], 1);
    assert_eq!(empty.blocks(), 0);
    assert!((0..6).all(|k| !empty.path(io.set(), k).exists()));
}

#[test]
fn remove_run_deletes_its_files() {
    let (_root, io) = start(3, 128, false, None, None);
    let data = bytes(128 * 7, 2);
    let keep = write_run(&io, 1, 0, 3, &data, 500);
    let gone = write_run(&io, 2, 1, 3, &data, 500);
    assert!((0..3).all(|k| gone.path(io.set(), k).exists()));
    // Read first, so the disk threads hold its descriptors open.
    assert!(super::read_run(&io, &gone, 3) == data);
    io.remove_run(&gone).unwrap();
    assert!((0..3).all(|k| !gone.path(io.set(), k).exists()));
    // Again, and a run never written: missing files are fine.
    io.remove_run(&gone).unwrap();
    io.remove_run(&emsort_io::disks::StripedRun { id: 77, ..gone.clone() }).unwrap();
    // The other run is untouched, and the id can be written afresh.
    assert!(super::read_run(&io, &keep, 3) == data);
    let again = write_run(&io, 2, 1, 3, &data[..300], 64);
    assert!(super::read_run(&io, &again, 2) == data[..300]);
    let left: usize = (0..3).map(|k| std::fs::read_dir(io.set().dir(k)).unwrap().count()).sum();
    assert_eq!(left, 6);
    io.remove_run(&keep).unwrap();
    io.remove_run(&again).unwrap();
    let left: usize = (0..3).map(|k| std::fs::read_dir(io.set().dir(k)).unwrap().count()).sum();
    assert_eq!(left, 0, "no file left behind");
}
