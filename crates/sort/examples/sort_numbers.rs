//! Times `emsort_sort::sort_numbers` on seeded random numbers, on a rayon
//! pool of T threads, R times; prints each time and the median. Run it
//! once per SIMD level, alternating, to compare levels side by side:
//!
//! ```text
//! for L in avx512 avx2 scalar; do
//!   EMSORT_SIMD=$L cargo run --release -p emsort-sort --example sort_numbers -- u32 33554432 2 5
//! done
//! ```
//!
//! Arguments: format (u32, i32, u64, i64, f32, f64), count, threads,
//! repetitions. Each repetition prints wall and CPU seconds (user +
//! system of all threads: on a shared machine the steadier of the two). Each repetition sorts a fresh copy of the same input; the
//! result is checked against `slice::sort` on the normalised key once.

use std::time::Instant;

use emsort_sort::key::NumKey;

fn run<T: NumKey + std::fmt::Debug>(of: fn(u64) -> T, n: usize, threads: usize, reps: usize) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let input: Vec<T> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            of(x)
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..reps {
        let mut v = input.clone();
        let (t, c) = (Instant::now(), cpu());
        pool.install(|| emsort_sort::sort_numbers(&mut v, false));
        times.push((t.elapsed().as_secs_f64(), cpu() - c));
        last = v;
    }
    let mut want = input;
    want.sort_unstable_by_key(|x| x.key());
    assert!(bytemuck::cast_slice::<T, u8>(&last) == bytemuck::cast_slice::<T, u8>(&want), "not sorted");
    let shown: Vec<String> = times.iter().map(|t| format!("{:.3}/{:.3}", t.0, t.1)).collect();
    let median = |f: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = times.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{} median {:.3} s wall, {:.3} s CPU, of [{}] (wall/CPU)",
        emsort_sort::simd::level(),
        median(|t| t.0),
        median(|t| t.1),
        shown.join(", ")
    );
}

/// CPU seconds of this process so far (user + system, every thread).
fn cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (format, n, threads, reps) =
        (a[1].as_str(), a[2].parse().unwrap(), a[3].parse().unwrap(), a[4].parse().unwrap());
    match format {
        "u32" => run::<u32>(|x| x as u32, n, threads, reps),
        "i32" => run::<i32>(|x| x as i32, n, threads, reps),
        "u64" => run::<u64>(|x| x, n, threads, reps),
        "i64" => run::<i64>(|x| x as i64, n, threads, reps),
        "f32" => run::<f32>(|x| (x % 2_000_000) as f32 - 1e6, n, threads, reps),
        "f64" => run::<f64>(|x| f64::from_bits(x >> 2), n, threads, reps),
        f => panic!("unknown format {f}"),
    }
}
