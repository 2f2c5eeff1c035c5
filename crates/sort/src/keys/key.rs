//! One sort key (`-k`): its bounds in the line, its kind and modifiers.

/// Which bytes a key drops before comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignore {
    /// `-i`: bytes outside printable ASCII.
    Nonprinting,
    /// `-d`: all but letters, digits and blanks.
    Nondictionary,
}

/// How a key's text compares (GNU's precedence when a key has several).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// Bytewise.
    Text,
    /// `-n`.
    Numeric,
    /// `-g`.
    GeneralNumeric,
    /// `-h`.
    HumanNumeric,
    /// `-M`.
    Month,
    /// `-V`.
    Version,
    /// `-R`.
    Random,
}

/// One sort key: where it lies in the line and how it compares (GNU's
/// `struct keyfield`, with 0-based fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Key {
    /// First field (0-based); `None`: the line's start.
    pub sword: Option<usize>,
    /// Bytes to skip in the first field.
    pub schar: usize,
    /// Last field (0-based); `None`: the line's end.
    pub eword: Option<usize>,
    /// Bytes of the last field in the key; 0: all of it.
    pub echar: usize,
    /// `b` on the start: skip blanks before the start.
    pub skip_start_blanks: bool,
    /// `b` on the end: skip blanks before counting `echar`.
    pub skip_end_blanks: bool,
    /// `-d` / `-i`.
    pub ignore: Option<Ignore>,
    /// `-f`: fold lower case to upper case.
    pub fold: bool,
    /// `-n`.
    pub numeric: bool,
    /// `-g`.
    pub general_numeric: bool,
    /// `-h`.
    pub human_numeric: bool,
    /// `-M`.
    pub month: bool,
    /// `-V`.
    pub version: bool,
    /// `-R`.
    pub random: bool,
    /// `-r`.
    pub reverse: bool,
    /// Written in the obsolete `+POS1 -POS2` form (converted to a `-k` by
    /// the command line): `--debug` warns about it as GNU does.
    pub traditional: bool,
}

impl Key {
    /// How the key compares, by GNU `keycompare`'s precedence.
    pub fn kind(&self) -> KeyKind {
        if self.numeric {
            KeyKind::Numeric
        } else if self.general_numeric {
            KeyKind::GeneralNumeric
        } else if self.human_numeric {
            KeyKind::HumanNumeric
        } else if self.month {
            KeyKind::Month
        } else if self.random {
            KeyKind::Random
        } else if self.version {
            KeyKind::Version
        } else {
            KeyKind::Text
        }
    }
}
