//! Emulated disks: each request costs at least latency + bytes/bandwidth,
//! one at a time per disk, and the disks serve in parallel. Only lower
//! bounds on time are asserted (the machine is shared).

use std::time::{Duration, Instant};

use emsort_io::disks::{Block, DiskModel, StripedRun};

use super::{bytes, read_run, start, write_run};

fn model(s: &str) -> Option<DiskModel> {
    Some(s.parse().unwrap())
}

#[test]
fn one_disk_serves_one_request_at_a_time() {
    let n = 10;
    let (_root, io) = start(1, 4096, false, model("1G,2ms"), None);
    let run = StripedRun { id: 1, start_disk: 0, bytes: 4096 * n, disks: 1, block: 4096 };
    let c = io.client();
    let t = Instant::now();
    for j in 0..n {
        c.write(&run, j, Block::new(4096), 4096, j);
    }
    while c.in_flight() > 0 {
        c.wait().unwrap();
    }
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(2 * n), "{n} requests of 2 ms took {took:?}");
    let cnt = &io.counters()[0];
    assert_eq!((cnt.writes, cnt.bytes_written), (n, 4096 * n));
    assert!(cnt.busy_seconds >= 0.002 * n as f64, "busy {}", cnt.busy_seconds);

    // Reads too, through the striped reader with many in flight.
    let t = Instant::now();
    let back = read_run(&io, &run, 8);
    assert_eq!(back.len(), 4096 * n as usize);
    assert!(t.elapsed() >= Duration::from_millis(2 * n));
    assert_eq!(io.counters()[0].reads, n);
}

#[test]
fn bandwidth_is_charged() {
    // 100 KiB at 10 MiB/s: at least 9.7 ms, with no latency at all.
    let (_root, io) = start(1, 100 << 10, false, model("10M,0"), None);
    let t = Instant::now();
    write_run(&io, 1, 0, 1, &bytes(100 << 10, 1), 1 << 20);
    assert!(t.elapsed() >= Duration::from_micros(9_765), "took {:?}", t.elapsed());
    assert!(io.counters()[0].busy_seconds >= 0.009_765);
}

/// The disks are independent: a single request on disk 1 does not wait for
/// a long queue on disk 0, and each disk's time is its own requests' cost.
#[test]
fn disks_serve_in_parallel() {
    let (_root, io) = start(2, 4096, false, model("1G,5ms"), None);
    let c = io.client();
    // Start disk 0, so even blocks on disk 0 and odd ones on disk 1.
    let run = StripedRun { id: 1, start_disk: 0, bytes: 4096 * 16, disks: 2, block: 4096 };
    for j in (0..16).step_by(2) {
        c.write(&run, j, Block::new(4096), 4096, j);
    }
    c.write(&run, 1, Block::new(4096), 4096, 1);
    let mut order = Vec::new();
    while c.in_flight() > 0 {
        order.push(c.wait().unwrap().disk);
    }
    // 8 × 5 ms queued on disk 0; disk 1's one request finishes well before.
    assert_ne!(order.last(), Some(&1), "disk 1 waited for disk 0's queue: {order:?}");
    let cnt = io.counters();
    assert_eq!((cnt[0].writes, cnt[1].writes), (8, 1));
    assert!(cnt[0].busy_seconds >= 0.040 && cnt[1].busy_seconds >= 0.005, "{cnt:?}");

    // A striped run over D disks: D blocks per stripe, each disk charged
    // for its own blocks only.
    let (_root, io) = start(4, 4096, false, model("1G,3ms"), None);
    let t = Instant::now();
    let run = write_run(&io, 7, 1, 4, &bytes(4096 * 8, 2), 5000);
    assert!(t.elapsed() >= Duration::from_millis(6), "two blocks per disk, took {:?}", t.elapsed());
    for (k, c) in io.counters().iter().enumerate() {
        assert_eq!(c.writes, 2, "disk {k}");
        assert!(c.busy_seconds >= 0.006, "disk {k}: {c:?}");
    }
    eprintln!("8 blocks of 3 ms on 4 disks took {:?} (24 ms serial)", t.elapsed());
    assert_eq!(read_run(&io, &run, 4), bytes(4096 * 8, 2));
}

#[test]
fn model_parses_and_prints() {
    let m: DiskModel = "100M,5ms".parse().unwrap();
    assert_eq!(m, DiskModel { bytes_per_sec: 100 << 20, latency: Duration::from_millis(5) });
    assert_eq!(m.service_time(100 << 20), Duration::from_millis(1005));
    for s in ["1G,200us", "50M,0", "7,1ns", "3K,2s"] {
        let m = DiskModel::parse(s).unwrap();
        assert_eq!(m.to_string(), s);
        assert_eq!(m.to_string().parse::<DiskModel>(), Ok(m));
    }
    assert_eq!(DiskModel::parse("50MiB,0").unwrap().to_string(), "50M,0");
    for bad in ["", "100M", "fast,5ms", "0,1ms", "100M,5", "100M,5 parsecs", "100M,5ms,3"] {
        let e = bad.parse::<DiskModel>().unwrap_err();
        assert!(e.contains(bad.trim()) && e.contains("BANDWIDTH,LATENCY"), "{bad:?}: {e}");
    }
}
