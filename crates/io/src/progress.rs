//! Progress reporting from libraries that never print.
//!
//! Long work (a benchmark campaign, a sort) calls a [`Progress`] the caller
//! supplies; the binary draws a bar from it, tests and quiet runs pass
//! [`NoProgress`]. Like TPIE's `progress_indicator_base`: the library says
//! what it is doing, the caller decides how to show it.

/// Receives progress reports. All methods have empty defaults.
pub trait Progress: Send + Sync {
    /// A new phase begins (`"write"`, `"run formation"` …) with `total`
    /// units of work (bytes, runs …) when known.
    fn phase(&self, _name: &str, _total: Option<u64>) {}
    /// Like [`phase`](Progress::phase), for work counted in bytes (a
    /// terminal shows sizes and a data rate).
    fn phase_bytes(&self, name: &str, total: Option<u64>) {
        self.phase(name, total)
    }
    /// `units` more units of the current phase are done.
    fn advance(&self, _units: u64) {}
    /// A one-line note about the current item (e.g. the point being measured).
    fn message(&self, _msg: &str) {}
    /// The current phase is finished.
    fn finish_phase(&self) {}
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}
