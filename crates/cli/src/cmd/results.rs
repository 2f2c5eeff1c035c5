//! Where a campaign's results go, and the command line they record.

use std::path::{Path, PathBuf};

/// `base`, or `base-2`, `base-3` … when `base` already holds a campaign.
pub(crate) fn fresh_dir(base: &Path) -> PathBuf {
    let taken = |p: &Path| p.join("raw.csv").exists();
    if !taken(base) {
        return base.to_path_buf();
    }
    (2..)
        .map(|i| PathBuf::from(format!("{}-{i}", base.display())))
        .find(|p| !taken(p))
        .expect("an unused directory name")
}

/// The command line as typed (arguments with blanks or quotes are quoted).
pub(crate) fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
