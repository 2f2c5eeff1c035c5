//! What a sort did: the statistics value [`sort_file`](crate::sort_file)
//! returns.
//!
//! [`SortStats`] holds the counts the cost model predicts (runs U, merge
//! passes, merge order), the bytes read and written and the seconds of each
//! phase ([`PhaseStats`]), and what the operating system saw
//! ([`Rusage`]: peak resident memory, context switches, page faults, from
//! `getrusage(RUSAGE_SELF)`, so they cover every thread of the process) and,
//! where the kernel lets a process count its own software events, CPU
//! migrations ([`MigrationCounter`], `perf_event_open`). The plan is included
//! as a [`PlanRecord`]. Everything serialises with serde
//! (the binary writes it as JSON with `--stats`).

use serde::Serialize;

use emsort_io::device::DeviceCost;

use crate::method::MethodKind;
use crate::plan::{Derived, SortPlan};

/// Time and bytes of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PhaseStats {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Bytes read from files.
    pub bytes_read: u64,
    /// Bytes written to files.
    pub bytes_written: u64,
}

/// The plan, as plain values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRecord {
    /// Format name (`u32`, `rec:100:0:10`, `lines` …).
    pub format: String,
    /// Memory M in bytes.
    pub memory: u64,
    /// Fan-in d.
    pub fan_in: usize,
    /// Block size B in bytes.
    pub block_size: usize,
    /// Input stream kind (of the runs, and of the input files unless
    /// `files_kind`).
    pub input_kind: String,
    /// Output stream kind (of the runs, and of the output file unless
    /// `files_kind`).
    pub output_kind: String,
    /// The input and output files' kind where it is not the runs'.
    pub files_kind: Option<String>,
    /// Why the kinds were chosen, when they were not asked for (`--io`).
    pub io_choice: Option<String>,
    /// Descending order.
    pub reverse: bool,
    /// Merge policy name.
    pub policy: String,
    /// Threads of the sort's pool.
    pub threads: usize,
    /// Temporary directories.
    pub temp_dirs: Vec<String>,
    /// Chunk buffers in run formation (1 or 2).
    pub chunk_buffers: usize,
    /// Sorted segments per chunk (numbers; 1: sorted whole).
    pub segments: usize,
    /// Data bytes in a full run.
    pub run_bytes: u64,
    /// Items in a full run (fixed-size formats).
    pub items_per_run: Option<u64>,
    /// Runs the plan predicts (exact for fixed-size formats).
    pub expected_runs: Option<u64>,
    /// The SIMD kernels of u32 and i32 sorts and merges
    /// ([`crate::simd::level`]: `avx512`, `avx2` or `scalar`).
    pub simd: String,
}

impl PlanRecord {
    /// The record of `plan` and its derived numbers.
    pub fn new(plan: &SortPlan, d: &Derived) -> PlanRecord {
        PlanRecord {
            simd: crate::simd::level().name().to_string(),
            format: plan.format().to_string(),
            memory: plan.memory(),
            fan_in: plan.fan_in(),
            block_size: plan.block_size(),
            input_kind: plan.input_kind().to_string(),
            output_kind: plan.output_kind().to_string(),
            files_kind: plan.files_kind().map(|k| k.to_string()),
            io_choice: plan.io_choice().map(str::to_string),
            reverse: plan.reverse(),
            policy: plan.policy().to_string(),
            threads: plan.threads(),
            temp_dirs: plan.temp_dirs().iter().map(|p| p.display().to_string()).collect(),
            chunk_buffers: d.chunk_buffers,
            segments: d.segments,
            run_bytes: d.run_bytes,
            items_per_run: d.items_per_run,
            expected_runs: d.expected_runs,
        }
    }
}

/// Resource usage of the process, from `getrusage(RUSAGE_SELF)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rusage {
    /// Peak resident set size in bytes: `VmHWM` of `/proc/self/status`
    /// (`ru_maxrss` where that is missing). Not `ru_maxrss` first: Linux
    /// carries it across `execve`, so a process started from a large
    /// parent (a test harness, a Python interpreter) would report the
    /// parent's footprint as its own.
    pub peak_rss_bytes: u64,
    /// Voluntary context switches (`ru_nvcsw`).
    pub voluntary_context_switches: u64,
    /// Involuntary context switches (`ru_nivcsw`).
    pub involuntary_context_switches: u64,
    /// Minor page faults (`ru_minflt`).
    pub minor_page_faults: u64,
    /// Major page faults (`ru_majflt`).
    pub major_page_faults: u64,
    /// CPU seconds in user mode, every thread (`ru_utime`).
    pub user_seconds: f64,
    /// CPU seconds in the kernel, every thread (`ru_stime`).
    pub system_seconds: f64,
}

impl Rusage {
    /// The process's usage now (zeros if the call fails).
    pub fn now() -> Rusage {
        use emsort_io::rusage::{Usage, Who};
        let Ok(u) = Usage::now(Who::Process) else {
            return Rusage::default();
        };
        let hwm = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        Rusage {
            peak_rss_bytes: hwm.map_or(u.max_rss_bytes, |kib| kib * 1024),
            voluntary_context_switches: u.voluntary_context_switches,
            involuntary_context_switches: u.involuntary_context_switches,
            minor_page_faults: u.minor_faults,
            major_page_faults: u.major_faults,
            user_seconds: u.user_seconds,
            system_seconds: u.system_seconds,
        }
    }

    /// The counts accumulated since `earlier` (the peak RSS stays the
    /// process's peak).
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            peak_rss_bytes: self.peak_rss_bytes,
            voluntary_context_switches: self.voluntary_context_switches - earlier.voluntary_context_switches,
            involuntary_context_switches: self.involuntary_context_switches
                - earlier.involuntary_context_switches,
            minor_page_faults: self.minor_page_faults - earlier.minor_page_faults,
            major_page_faults: self.major_page_faults - earlier.major_page_faults,
            user_seconds: self.user_seconds - earlier.user_seconds,
            system_seconds: self.system_seconds - earlier.system_seconds,
        }
    }
}

/// Counts the CPU migrations of this thread and of the threads it starts
/// afterwards (`perf_event_open` with the software event
/// `PERF_COUNT_SW_CPU_MIGRATIONS`, inherited by new threads).
///
/// Opening fails quietly (`None` from [`MigrationCounter::start`]) where
/// perf events are not allowed (`perf_event_paranoid`, seccomp) or
/// supported.
#[derive(Debug)]
pub struct MigrationCounter {
    fd: std::os::fd::OwnedFd,
}

/// `struct perf_event_attr`, its first version (`PERF_ATTR_SIZE_VER0`, 64
/// bytes), which every kernel with perf events accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

impl MigrationCounter {
    /// Starts counting, or `None` when perf events are unavailable.
    pub fn start() -> Option<MigrationCounter> {
        const PERF_TYPE_SOFTWARE: u32 = 1;
        const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
        const INHERIT: u64 = 1 << 1;
        const EXCLUDE_HV: u64 = 1 << 6;
        const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_MIGRATIONS,
            flags: INHERIT | EXCLUDE_HV,
            ..PerfEventAttr::default()
        };
        // SAFETY: perf_event_open reads `attr` (a valid, fully initialised
        // VER0 struct); pid 0 / cpu −1 = this thread on any CPU.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                0 as libc::c_long,
                -1 as libc::c_long,
                -1 as libc::c_long,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        Some(MigrationCounter { fd: unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as i32) } })
    }

    /// Migrations counted so far (`None` if the read fails).
    pub fn read(&self) -> Option<u64> {
        let mut v = [0u8; 8];
        match rustix::io::read(&self.fd, &mut v) {
            Ok(8) => Some(u64::from_ne_bytes(v)),
            _ => None,
        }
    }
}

/// What one sort did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SortStats {
    /// The plan the sort ran with.
    pub plan: PlanRecord,
    /// Size of the input in bytes.
    pub input_bytes: u64,
    /// Size of the output in bytes (`lines` may add a final newline).
    pub output_bytes: u64,
    /// Runs U formed.
    pub runs: u64,
    /// Passes over the data, run formation counting as the first: 1 +
    /// bytes merged / input bytes (the schedule's
    /// [`passes`](crate::merge_policy::Schedule::passes)).
    pub passes: f64,
    /// Depth of the merge tree (the most merges any item went through).
    pub merge_levels: u32,
    /// Number of merges.
    pub merges: usize,
    /// The most runs one merge read.
    pub merge_order: usize,
    /// Run formation.
    pub run_formation: PhaseStats,
    /// All merges.
    pub merge: PhaseStats,
    /// Wall-clock seconds of the whole sort.
    pub total_seconds: f64,
    /// Peak resident memory and the counts accumulated during the sort.
    #[serde(flatten)]
    pub rusage: Rusage,
    /// CPU migrations of the sort's threads (all of them: the pool's
    /// threads are waited for), where perf events can be read.
    pub cpu_migrations: Option<u64>,
    /// DSM and SRM: disks, passes, merge orders, parallel reads, ν,
    /// flushes and the merge rate (`None` for the plain merge).
    pub parallel_disks: Option<ParallelDiskStats>,
    /// The limits this sort could not beat, and which one binds.
    pub bounds: Bounds,
    /// How its temporary runs were stored, when it wrote any with a
    /// compression other than none asked for.
    pub compression: Option<CompressionStats>,
    /// Where `--io auto` kept the runs in the page cache: the kind the
    /// first run chose for them after weighing the CPU the sort needed
    /// against the device (kept, or the files' `O_DIRECT` kind), and why.
    pub runs_io: Option<String>,
}

/// How a sort's temporary runs were stored (module `compress`), part of
/// [`SortStats`](SortStats::compression).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompressionStats {
    /// What was asked for: `auto`, `lz4`, `zstd:LEVEL`, `program PROG`.
    pub requested: String,
    /// What the runs got: `none`, `lz4`, `zstd:LEVEL`, `program PROG`.
    pub chosen: String,
    /// Why (`auto`'s measurements and estimates).
    pub why: String,
    /// `auto`: the stored/raw ratio of the first run's sample with the
    /// best codec.
    pub sample_ratio: Option<f64>,
    /// Bytes of runs before compression, written (built-in codecs).
    pub raw_written: u64,
    /// Bytes of runs before compression, read back (built-in codecs).
    pub raw_read: u64,
    /// Bytes written to the temporary files (built-in codecs).
    pub stored_written: u64,
    /// Bytes read from the temporary files (built-in codecs).
    pub stored_read: u64,
}

impl CompressionStats {
    /// Stored bytes over raw bytes written (1 when nothing was written).
    pub fn ratio(&self) -> f64 {
        match self.raw_written {
            0 => 1.0,
            raw => self.stored_written as f64 / raw as f64,
        }
    }
}

/// The two limits of a sort's time (issue 38), from what it did: the CPU
/// bound, its CPU time spread over its threads (no schedule of the same
/// work on as many CPUs ends sooner), and the I/O bound, its bytes read and
/// written at the bandwidths measured for the device under its runs (by
/// the probe of `--io auto` or by `emsort calibrate`), one after the
/// other as the benchmarks' bound moves them. The larger one binds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Bounds {
    /// (user + system CPU seconds) ÷ threads.
    pub cpu_seconds: f64,
    /// Bytes read ÷ read bandwidth + bytes written ÷ write bandwidth;
    /// `None` where the device was not measured.
    pub io_seconds: Option<f64>,
    /// `cpu` or `io`: the larger bound.
    pub binds: &'static str,
    /// The sort's wall time over the binding bound (1 is the best a sort
    /// with this work can do).
    pub ratio: f64,
}

impl Bounds {
    /// The bounds of a sort that took `seconds` with `usage` on `threads`
    /// threads, moving `read` and `written` bytes on a device of `cost`.
    pub fn new(
        seconds: f64,
        usage: &Rusage,
        threads: usize,
        (read, written): (u64, u64),
        cost: Option<DeviceCost>,
    ) -> Bounds {
        let cpu_seconds = (usage.user_seconds + usage.system_seconds) / threads.max(1) as f64;
        let io_seconds = cost.and_then(|c| c.io_seconds(read, written));
        let (binds, bound) = match io_seconds {
            Some(io) if io > cpu_seconds => ("io", io),
            _ => ("cpu", cpu_seconds),
        };
        Bounds { cpu_seconds, io_seconds, binds, ratio: if bound > 0.0 { seconds / bound } else { 0.0 } }
    }
}

/// What a DSM or SRM sort did, part of [`SortStats`](SortStats::parallel_disks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParallelDiskStats {
    /// `dsm` or `srm`.
    pub method: MethodKind,
    /// D, the number of disks.
    pub disks: usize,
    /// B, the block size in bytes (a logical block is D·B).
    pub block_size: usize,
    /// The seed of the starting disks.
    pub seed: u64,
    /// Whether each run started on a randomly drawn disk (SRM), or on
    /// disk 0 (DSM).
    pub start_disks_drawn: bool,
    /// U, the runs formed.
    pub runs: u64,
    /// Merge passes.
    pub passes: usize,
    /// R of each pass: the most runs one merge of that pass read.
    pub merge_orders: Vec<usize>,
    /// Parallel reads of each pass (an I/O step reading up to one block per
    /// disk; for DSM one logical block).
    pub parallel_reads: Vec<u64>,
    /// ν of each pass: parallel reads ÷ (bytes of the pass ÷ (D·B)); 1 is
    /// optimal.
    pub nu: Vec<f64>,
    /// Blocks flushed (dropped from memory to be read again) in each pass
    /// (SRM; 0 for DSM).
    pub flushes: Vec<u64>,
    /// Seconds of all merge passes.
    pub merge_seconds: f64,
    /// Bytes read while merging (run blocks and forecasting data).
    pub merge_bytes_read: u64,
    /// Bytes written while merging (runs, output and forecasting data).
    pub merge_bytes_written: u64,
    /// (merge bytes read + written) ÷ merge seconds.
    pub merge_rate: f64,
    /// Whether SRM kept its forecasting data in memory (4.1.3), or read it
    /// in the blocked scheme (4.1.2); true for DSM, which needs none.
    pub forecast_in_memory: bool,
    /// The emulated disk model (`100M,5ms`), if any.
    pub emulated_disk: Option<String>,
}
