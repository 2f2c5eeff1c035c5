//! Framed rows: the items a front end makes of a table's rows (Parquet,
//! Arrow), sorted as terminated lines whose ends are parsed, ordered by
//! the key bytes each carries.
//!
//! ```text
//!  [n: u32 LE][k: u32 LE][key: k bytes][payload: n - 4 - k bytes][\n]
//! ```
//!
//! `n` counts the bytes between itself and the terminator. The key is
//! already a normalised key: memcmp order is the sort's order, and no key
//! is a proper prefix of another (as `arrow-row` writes rows of one
//! schema; the merges take keys with equal 8-byte prefixes that end
//! within them as equal). The payload is whatever the front end needs to
//! write the row again, and is never compared. The item codec of lines
//! finds the rows' ends by `scan_ends` (a length read, then a skip:
//! payload bytes may be `\n`), and `LineOrder::rows` takes each key by
//! [`key`]. Rows with equal keys keep their input order.

/// Parse states between two reads (`scan_ends`'s `state`): 0 at a row's
/// start; `HEADER | got << 32 | partial` while the length `n` is being
/// read (`got` of its 4 bytes so far); else how many of the row's bytes
/// are left, its terminator included.
const HEADER: u64 = 1 << 63;

/// The bytes before a row's key.
const HEAD: usize = 8;

/// Appends a row of key `key` (a normalised key, prefix-free among the
/// sort's keys) and payload `payload` to `out`; fails when
/// the row is 4 GiB or more.
pub fn frame(key: &[u8], payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let n = 4 + key.len() + payload.len();
    let n = u32::try_from(n).map_err(|_| format!("a row of {n} bytes: 4 GiB is the most"))?;
    out.reserve(n as usize + 5);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out.push(b'\n');
    Ok(())
}

/// Appends `lens.len()` rows to `out`, row `i` of key `key(i)` (as for
/// [`frame`]) and a payload of `lens[i]` zero bytes, for the caller to
/// write in place; each `lens[i]` becomes where its row's payload starts
/// in `out`. Fails when a row is 4 GiB or more (nothing appended).
pub fn frame_blank<'k>(
    key: impl Fn(usize) -> &'k [u8],
    lens: &mut [usize],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut total = 0;
    for (i, &len) in lens.iter().enumerate() {
        let n = 4 + key(i).len() + len;
        if u32::try_from(n).is_err() {
            return Err(format!("a row of {n} bytes: 4 GiB is the most"));
        }
        total += 4 + n + 1;
    }
    let mut at = out.len();
    out.resize(at + total, 0);
    for (i, len) in lens.iter_mut().enumerate() {
        let k = key(i);
        let n = 4 + k.len() + *len;
        out[at..at + 4].copy_from_slice(&(n as u32).to_le_bytes());
        out[at + 4..at + HEAD].copy_from_slice(&(k.len() as u32).to_le_bytes());
        out[at + HEAD..at + HEAD + k.len()].copy_from_slice(k);
        let payload = at + HEAD + k.len();
        at += 4 + n + 1;
        out[at - 1] = b'\n';
        *len = payload;
    }
    Ok(())
}

/// The length of the whole row at the start of `data` (with its
/// terminator), if its length is there.
#[inline]
pub fn row_len(data: &[u8]) -> Option<usize> {
    let n = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    Some(4 + n as usize + 1)
}

/// The key of a row (without its terminator, as lines' keys are read, or
/// with it).
#[inline]
pub fn key(row: &[u8]) -> &[u8] {
    let k = u32::from_le_bytes(row[4..8].try_into().expect("a framed row's header")) as usize;
    &row[HEAD..HEAD + k]
}

/// The payload of a row given with or without its terminator.
#[inline]
pub fn payload(row: &[u8]) -> &[u8] {
    let n = u32::from_le_bytes(row[..4].try_into().expect("a framed row's header")) as usize;
    let k = u32::from_le_bytes(row[4..8].try_into().expect("a framed row's header")) as usize;
    &row[HEAD + k..4 + n]
}

/// Finds the ends of the rows in `data`, the next bytes of a sequence of
/// whole rows: calls `end` with the position of each row's terminator
/// until it returns false. `state` is 0 at a row's start and carries the
/// parse from one call to the next.
pub(crate) fn scan_ends(data: &[u8], state: &mut u64, end: &mut dyn FnMut(usize) -> bool) {
    let mut i = 0;
    while i < data.len() {
        if *state == 0 || *state & HEADER != 0 {
            let (mut got, mut n) =
                if *state == 0 { (0, 0) } else { ((*state >> 32) & 7, *state & 0xffff_ffff) };
            while got < 4 && i < data.len() {
                n |= (data[i] as u64) << (8 * got);
                got += 1;
                i += 1;
            }
            if got < 4 {
                *state = HEADER | got << 32 | n;
                return;
            }
            // The rest of the row: n bytes, then the terminator.
            *state = n + 1;
        }
        let left = data.len() - i;
        if (*state as usize) > left {
            *state -= left as u64;
            return;
        }
        i += *state as usize;
        *state = 0;
        if !end(i - 1) {
            return;
        }
    }
}

/// What is wrong with rows whose parse (`scan_ends`) stops in `state`.
pub(crate) fn unended(state: u64) -> Option<&'static str> {
    (state != 0).then_some("a framed row is cut short (the input ends inside it)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, seed: u64) -> (Vec<u8>, Vec<usize>) {
        let mut next = crate::simd_sort::tests::xorshift(seed);
        let (mut data, mut ends) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let key: Vec<u8> = (0..next() % 5).map(|_| b'\n').collect();
            let payload: Vec<u8> = (0..next() % 300).map(|_| (next() % 3) as u8 + 9).collect();
            frame(&key, &payload, &mut data).unwrap();
            ends.push(data.len() - 1);
        }
        (data, ends)
    }

    /// Rows framed blank and their payloads written in place are the rows
    /// `frame` makes, appended after what `out` held.
    #[test]
    fn blank_frames_filled_in_place_are_frames() {
        let mut next = crate::simd_sort::tests::xorshift(5);
        let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..300)
            .map(|_| {
                let key = (0..next() % 40).map(|_| next() as u8).collect();
                let payload = (0..next() % 90).map(|_| next() as u8).collect();
                (key, payload)
            })
            .collect();
        let mut want = b"before".to_vec();
        for (k, p) in &rows {
            frame(k, p, &mut want).unwrap();
        }
        let mut got = b"before".to_vec();
        let mut starts: Vec<usize> = rows.iter().map(|(_, p)| p.len()).collect();
        frame_blank(|i| &rows[i].0, &mut starts, &mut got).unwrap();
        for ((_, p), &s) in rows.iter().zip(&starts) {
            assert!(got[s..s + p.len()].iter().all(|&b| b == 0));
            got[s..s + p.len()].copy_from_slice(p);
        }
        assert_eq!(got, want);
    }

    /// Rows' ends are found whatever the pieces they are read in, and each
    /// row gives back its key and payload.
    #[test]
    fn ends_in_any_pieces() {
        for seed in 1..20 {
            let (data, want) = rows(200, seed);
            let mut next = crate::simd_sort::tests::xorshift(seed * 7);
            let (mut got, mut state, mut at) = (Vec::new(), 0u64, 0);
            while at < data.len() {
                let len = (1 + next() % 9).min((data.len() - at) as u64) as usize;
                scan_ends(&data[at..at + len], &mut state, &mut |p| {
                    got.push(at + p);
                    true
                });
                at += len;
            }
            assert_eq!(state, 0);
            assert_eq!(got, want);
            let mut start = 0;
            for &e in &want {
                let row = &data[start..=e];
                assert_eq!(row_len(row), Some(row.len()));
                assert!(key(row).iter().all(|&b| b == b'\n'));
                assert!(payload(row).iter().all(|&b| (9..12).contains(&b)));
                assert_eq!(key(row).len() + payload(row).len() + 9, row.len());
                start = e + 1;
            }
        }
        let (data, _) = rows(3, 5);
        let mut state = 0;
        scan_ends(&data[..data.len() - 1], &mut state, &mut |_| true);
        assert!(unended(state).is_some());
    }
}
