//! How a sort merges its runs: [`Method`].

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// How a sort merges its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// The plain d-way merge of [`crate::merge`] over the temp dirs.
    #[default]
    Plain,
    /// Disk-striped mergesort: logical blocks of D·B striped over all disks
    /// (`pdisk/dsm.rs`).
    Dsm,
    /// Simple randomized mergesort: runs start on a random disk, blocks are
    /// read by forecasting (`pdisk/srm.rs`).
    Srm,
}

impl Method {
    /// Every method, in the order the command line lists them.
    pub const ALL: [Method; 3] = [Method::Plain, Method::Dsm, Method::Srm];

    /// The command-line name: `plain`, `dsm` or `srm`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Plain => "plain",
            Method::Dsm => "dsm",
            Method::Srm => "srm",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown merge method '{s}' (expected plain, dsm or srm)"))
    }
}

impl Serialize for Method {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
