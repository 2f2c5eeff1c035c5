//! Parsing GNU `sort`'s ordering options: `-k POS1[,POS2]`, the modifier
//! letters, the global flags, and the rules that combine them.

use super::{Ignore, Key};

/// Which blanks a `b` modifier skips: `-k 2b` the start's, `-k 1,2b` the
/// end's, a global `-b` both.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blanks {
    Start,
    End,
    Both,
}

impl Key {
    /// Parses a `-k` argument (`2`, `2,2`, `1.3b,1.5nr`, …) with GNU's
    /// messages: `sort: -k 0: invalid field specification…` becomes the
    /// `Err` text.
    pub fn parse(spec: &str) -> Result<Key, String> {
        let bad = |why: &str| format!("{why}: invalid field specification '{spec}'");
        let mut key = Key::default();
        let s = spec.as_bytes();
        // The count after the '.' or ',' at `s[i]`, and where it ends.
        let count_after = |i: usize| {
            count(s, i + 1).ok_or_else(|| {
                let sep = s[i] as char;
                format!("invalid number after '{sep}': invalid count at start of '{}'", &spec[i + 1..])
            })
        };
        let (sword, mut i) = count(s, 0)
            .ok_or_else(|| format!("invalid number at field start: invalid count at start of '{spec}'"))?;
        if sword == 0 {
            return Err(bad("field number is zero"));
        }
        let sword = sword - 1;
        let mut schar = 0usize;
        if s.get(i) == Some(&b'.') {
            let (c, j) = count_after(i)?;
            if c == 0 {
                return Err(bad("character offset is zero"));
            }
            schar = c - 1;
            i = j;
        }
        key.sword = if sword == 0 && schar == 0 { None } else { Some(sword) };
        key.schar = schar;
        i = key.set_ordering(s, i, Blanks::Start);
        if s.get(i) == Some(&b',') {
            let (e, j) = count_after(i)?;
            if e == 0 {
                return Err(bad("field number is zero"));
            }
            key.eword = Some(e - 1);
            i = j;
            if s.get(i) == Some(&b'.') {
                let (c, j) = count_after(i)?;
                key.echar = c;
                i = j;
            }
            i = key.set_ordering(s, i, Blanks::End);
        }
        if i < s.len() {
            return Err(bad("stray character in field spec"));
        }
        Ok(key)
    }

    /// Parses a key that names a column of the header (`--header`):
    /// `NAME[:MODIFIERS]` (`amount`, `amount:nr`, `last name:f`), the whole
    /// column `N,N` of the header's field named NAME, with GNU's modifier
    /// letters (`b` skips the blanks at both ends). A name that is also a
    /// column's must be followed by `:` if it ends in `:` and letters.
    pub fn parse_column(spec: &str, columns: &[Vec<u8>]) -> Result<Key, String> {
        let (name, mods) = match spec.rsplit_once(':') {
            Some((n, m)) if !n.is_empty() => (n, m),
            _ => (spec, ""),
        };
        let Some(at) = columns.iter().position(|c| c.as_slice() == name.as_bytes()) else {
            let names: Vec<String> =
                columns.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
            return Err(format!("no column '{name}' in the header (its columns: {})", names.join(", ")));
        };
        let mut key = Key::parse(&format!("{n},{n}", n = at + 1))?;
        if key.set_ordering(mods.as_bytes(), 0, Blanks::Both) < mods.len() {
            return Err(format!("invalid modifiers '{mods}' in key '{spec}' (GNU's letters: bdfgiMhnRrV)"));
        }
        Ok(key)
    }

    /// Applies the modifier letters of `s` from `i` on; returns where the
    /// first byte that is not one is.
    pub(crate) fn set_ordering(&mut self, s: &[u8], mut i: usize, blanks: Blanks) -> usize {
        while let Some(&c) = s.get(i) {
            match c {
                b'b' => {
                    if blanks != Blanks::End {
                        self.skip_start_blanks = true;
                    }
                    if blanks != Blanks::Start {
                        self.skip_end_blanks = true;
                    }
                }
                b'd' => self.ignore = Some(Ignore::Nondictionary),
                b'f' => self.fold = true,
                b'g' => self.general_numeric = true,
                b'h' => self.human_numeric = true,
                // -d implies -i's filtering and more; -i does not undo -d.
                b'i' => {
                    if self.ignore.is_none() {
                        self.ignore = Some(Ignore::Nonprinting)
                    }
                }
                b'M' => self.month = true,
                b'n' => self.numeric = true,
                b'R' => self.random = true,
                b'r' => self.reverse = true,
                b'V' => self.version = true,
                _ => return i,
            }
            i += 1;
        }
        i
    }

    /// Applies one global flag letter (`-n`, `-r`, `--sort=numeric` …).
    pub fn set_global(&mut self, letter: char) {
        let mut b = [0u8; 4];
        self.set_ordering(letter.encode_utf8(&mut b).as_bytes(), 0, Blanks::Both);
    }

    /// GNU's `default_key_compare`: no modifier that changes how the key
    /// compares (`r` alone does not count).
    pub(crate) fn is_default(&self) -> bool {
        !(self.ignore.is_some()
            || self.fold
            || self.skip_start_blanks
            || self.skip_end_blanks
            || self.numeric
            || self.general_numeric
            || self.human_numeric
            || self.month
            || self.version
            || self.random)
    }

    /// The key's modifier letters, as GNU prints them in errors.
    pub(crate) fn letters(&self) -> String {
        [
            (self.skip_start_blanks || self.skip_end_blanks, 'b'),
            (self.ignore == Some(Ignore::Nondictionary), 'd'),
            (self.fold, 'f'),
            (self.general_numeric, 'g'),
            (self.human_numeric, 'h'),
            (self.ignore == Some(Ignore::Nonprinting), 'i'),
            (self.month, 'M'),
            (self.numeric, 'n'),
            (self.random, 'R'),
            (self.reverse, 'r'),
            (self.version, 'V'),
        ]
        .into_iter()
        .filter_map(|(set, letter)| set.then_some(letter))
        .collect()
    }

    /// GNU's `check_ordering_compatibility`: at most one of n, g, h, M and
    /// (V, R or an ignore set).
    pub(crate) fn check_compatible(&self) -> Result<(), String> {
        let n = self.numeric as u8
            + self.general_numeric as u8
            + self.human_numeric as u8
            + self.month as u8
            + (self.version || self.random || self.ignore.is_some()) as u8;
        if n > 1 {
            let mut k = self.clone();
            k.skip_start_blanks = false;
            k.skip_end_blanks = false;
            k.reverse = false;
            return Err(format!("options '-{}' are incompatible", k.letters()));
        }
        Ok(())
    }

    /// Takes the global options where the key has none of its own (GNU's
    /// inheritance: a key with any modifier, even only `r`, keeps its own).
    pub(crate) fn inherit(&mut self, global: &Key) {
        if self.is_default() && !self.reverse {
            let (sword, schar, eword, echar) = (self.sword, self.schar, self.eword, self.echar);
            let traditional = self.traditional;
            *self = global.clone();
            (self.sword, self.schar, self.eword, self.echar) = (sword, schar, eword, echar);
            self.traditional = traditional;
        }
    }
}

/// Parses a field or character count at `s[i..]` (digits; a count too
/// large for usize is usize::MAX, as GNU does); `None` when there is no
/// digit.
fn count(s: &[u8], i: usize) -> Option<(usize, usize)> {
    let digits = s[i.min(s.len())..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let n =
        s[i..i + digits].iter().try_fold(0usize, |n, &d| n.checked_mul(10)?.checked_add((d - b'0') as usize));
    Some((n.unwrap_or(usize::MAX), i + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_positions_and_modifiers_like_gnu() {
        let k = Key::parse("2,3").unwrap();
        assert_eq!((k.sword, k.schar, k.eword, k.echar), (Some(1), 0, Some(2), 0));
        let k = Key::parse("1").unwrap();
        assert_eq!((k.sword, k.eword), (None, None));
        let k = Key::parse("1.3b,1.5nr").unwrap();
        assert_eq!((k.sword, k.schar, k.eword, k.echar), (Some(0), 2, Some(0), 5));
        assert!(k.skip_start_blanks && !k.skip_end_blanks && k.numeric && k.reverse);
        let k = Key::parse("2b,2").unwrap();
        assert!(k.skip_start_blanks && !k.skip_end_blanks);
        assert!(Key::parse("0").unwrap_err().contains("field number is zero"));
        assert!(Key::parse("1.0").unwrap_err().contains("character offset is zero"));
        assert!(Key::parse("1,0").unwrap_err().contains("field number is zero"));
        assert!(Key::parse("1x").unwrap_err().contains("stray character"));
        assert!(Key::parse("x").unwrap_err().contains("invalid number at field start"));
        assert_eq!(Key::parse("1,2.0").unwrap().echar, 0);
        assert_eq!(Key::parse("99999999999999999999999").unwrap().sword, Some(usize::MAX - 1));
    }

    #[test]
    fn incompatible_orders_are_refused_with_gnus_letters() {
        assert_eq!(
            Key::parse("1gn").unwrap().check_compatible().unwrap_err(),
            "options '-gn' are incompatible"
        );
        assert!(Key::parse("1nfr").unwrap().check_compatible().is_ok());
        assert!(Key::parse("1VR").unwrap().check_compatible().is_ok());
        assert!(Key::parse("1dM").unwrap().check_compatible().is_err());
    }
}
