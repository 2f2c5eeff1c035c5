//! A terminal progress bar behind the libraries' `Progress` trait.
//!
//! Drawn with indicatif on standard error when it is a terminal and the user
//! did not ask for `--quiet`; otherwise nothing is drawn.

use std::io::IsTerminal;
use std::sync::Mutex;

use emsort_io::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on standard error, or nothing when not on a terminal.
pub struct Bar {
    bar: Mutex<Option<ProgressBar>>,
    enabled: bool,
}

impl Bar {
    /// A bar that draws only when stderr is a terminal and `quiet` is false.
    pub fn new(quiet: bool) -> Bar {
        Bar { bar: Mutex::new(None), enabled: !quiet && std::io::stderr().is_terminal() }
    }
}

impl Bar {
    fn start(&self, name: &str, total: Option<u64>, bytes: bool) {
        if !self.enabled {
            return;
        }
        let mut slot = self.bar.lock().unwrap();
        if let Some(b) = slot.take() {
            b.finish_and_clear();
        }
        let template = match (total, bytes) {
            (Some(_), true) => {
                "{prefix:>14} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {wide_msg}"
            }
            (Some(_), false) => "{prefix:>14} [{bar:30}] {pos}/{len} {per_sec} ETA {eta} {wide_msg}",
            (None, true) => "{prefix:>14} {spinner} {bytes} {binary_bytes_per_sec} {wide_msg}",
            (None, false) => "{prefix:>14} {spinner} {pos} {wide_msg}",
        };
        let style = ProgressStyle::with_template(template).unwrap().progress_chars("=> ");
        let b = match total {
            Some(t) => ProgressBar::new(t),
            None => ProgressBar::new_spinner(),
        }
        .with_style(style);
        b.set_prefix(name.to_string());
        *slot = Some(b);
    }
}

impl Progress for Bar {
    fn phase(&self, name: &str, total: Option<u64>) {
        self.start(name, total, false)
    }

    fn phase_bytes(&self, name: &str, total: Option<u64>) {
        self.start(name, total, true)
    }

    fn advance(&self, units: u64) {
        if let Some(b) = self.bar.lock().unwrap().as_ref() {
            b.inc(units);
        }
    }

    fn message(&self, msg: &str) {
        if let Some(b) = self.bar.lock().unwrap().as_ref() {
            b.set_message(msg.to_string());
        }
    }

    fn finish_phase(&self) {
        if let Some(b) = self.bar.lock().unwrap().take() {
            b.finish_and_clear();
        }
    }
}
