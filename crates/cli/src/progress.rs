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

impl Progress for Bar {
    fn phase(&self, name: &str, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        let mut slot = self.bar.lock().unwrap();
        if let Some(b) = slot.take() {
            b.finish_and_clear();
        }
        let b = match total {
            Some(t) => ProgressBar::new(t).with_style(
                ProgressStyle::with_template(
                    "{prefix:>12} [{bar:30}] {pos}/{len} {per_sec} ETA {eta} {wide_msg}",
                )
                .unwrap()
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner(),
        };
        b.set_prefix(name.to_string());
        *slot = Some(b);
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
