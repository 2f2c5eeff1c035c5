//! The payload of a framed row: the columns that are not keys, written to
//! be read back, never compared.
//!
//! ```text
//!  [nulls: one bit per compact column][each compact column's value, unless null][the other columns: one arrow-row row]
//! ```
//!
//! A compact column is one of fixed width (integers, floats, dates,
//! times, timestamps, durations, intervals, decimals, fixed-size binary:
//! its value's bytes as the array holds them — but a 128-bit decimal of
//! at most 18 digits as its 64 bits), a boolean (one byte) or a
//! string or binary with 32- or 64-bit offsets (a LEB128 length, then the
//! bytes); a null takes only its bit. The other columns (lists, structs,
//! dictionaries, views …) go through `arrow-row`, as the keys do. A value
//! `arrow-row` writes to be ordered takes more: a null byte before each
//! value, strings in blocks of 8 and then 32 bytes each followed by a
//! continuation byte — the benchmark's 1 GiB Parquet table framed 135 bytes
//! a row with its six payload columns so, 116 bytes this way (issue 42);
//! its `DECIMAL(12,2)` column in 8 bytes instead of 16: 111 → 104 bytes,
//! 2.90 → 2.71 GB of runs written and read.
//!
//! Payloads are written ([`Encoding::write`], into frames laid out first)
//! and read ([`Payload::decode`]) a column at a time over a hundred-odd
//! rows at a time: one kind of value per loop, while those rows stay in
//! the cache (a column at a time over a whole 4 MiB batch was slower than
//! row by row).

use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{ArrowError, DataType, Schema};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a compact column's values are written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Bytes per value, as the array's values buffer holds them.
    Fixed(usize),
    /// One byte, 0 or 1.
    Bool,
    /// A length, then the bytes; offsets of 64 bits (`Large…`) or 32.
    Bytes { large: bool },
    /// A 128-bit decimal of at most 18 digits: its value as 8 bytes — or,
    /// for a value its precision does not allow that 8 bytes cannot hold,
    /// `i64::MIN` (no such decimal's value) and then its 16 bytes.
    Narrow,
}

impl Kind {
    fn of(t: &DataType) -> Option<Kind> {
        match t {
            DataType::Boolean => Some(Kind::Bool),
            DataType::Utf8 | DataType::Binary => Some(Kind::Bytes { large: false }),
            DataType::LargeUtf8 | DataType::LargeBinary => Some(Kind::Bytes { large: true }),
            DataType::FixedSizeBinary(w) => Some(Kind::Fixed(usize::try_from(*w).ok()?)),
            DataType::Decimal128(p, _) if *p <= 18 => Some(Kind::Narrow),
            t => t.primitive_width().map(Kind::Fixed),
        }
    }
}

/// The payload columns of a schema and how each is written.
pub(crate) struct Payload {
    /// The compact columns: field index, type, kind.
    compact: Vec<(usize, DataType, Kind)>,
    /// The other payload columns' converter and field indices.
    rest: Option<(RowConverter, Vec<usize>)>,
    /// Each compact column's mean bytes a value in the last batch decoded
    /// (for strings and binaries: the room the next one reserves).
    value_bytes: Vec<AtomicUsize>,
}

/// A batch's payload columns as [`Encoding::write`] reads them.
pub(crate) struct Encoding<'a> {
    data: Vec<ArrayData>,
    rest: Option<Rows>,
    payload: &'a Payload,
}

impl Payload {
    /// The payload of `schema`'s columns `fields` (those that are not keys);
    /// an error names a column no kind carries.
    pub(crate) fn new(schema: &Schema, fields: &[usize]) -> Result<Payload, String> {
        let mut compact = Vec::new();
        let mut rest = Vec::new();
        for &f in fields {
            let t = schema.field(f).data_type();
            match Kind::of(t) {
                Some(k) => compact.push((f, t.clone(), k)),
                None => rest.push(f),
            }
        }
        let rest = if rest.is_empty() {
            None
        } else {
            let sort: Vec<SortField> =
                rest.iter().map(|&i| SortField::new(schema.field(i).data_type().clone())).collect();
            if let Some((_, &i)) =
                sort.iter().zip(&rest).find(|(s, _)| !RowConverter::supports_fields(std::slice::from_ref(*s)))
            {
                return Err(format!(
                    "column {} of type {} cannot be carried through the sort",
                    schema.field(i).name(),
                    schema.field(i).data_type()
                ));
            }
            Some((RowConverter::new(sort).map_err(|e| e.to_string())?, rest))
        };
        Ok(Payload { value_bytes: compact.iter().map(|_| AtomicUsize::new(0)).collect(), compact, rest })
    }

    fn null_bytes(&self) -> usize {
        self.compact.len().div_ceil(8)
    }

    /// `batch`'s payload columns, ready to write row by row.
    pub(crate) fn encoding(&self, batch: &RecordBatch) -> Result<Encoding<'_>, ArrowError> {
        let data = self.compact.iter().map(|(f, _, _)| batch.column(*f).to_data()).collect();
        let rest = match &self.rest {
            Some((c, fields)) => {
                let cols: Vec<ArrayRef> = fields.iter().map(|&i| batch.column(i).clone()).collect();
                Some(c.convert_columns(&cols)?)
            }
            None => None,
        };
        Ok(Encoding { data, rest, payload: self })
    }

    /// The payload columns of the rows whose payloads are `rows`, each with
    /// its field index; an error where a payload is cut short or a value
    /// is not of its type (a damaged run). Decoded a column at a time over
    /// [`DECODE_ROWS`] rows at a time (which stay in the cache meanwhile).
    pub(crate) fn decode(&self, rows: &[&[u8]]) -> Result<Vec<(usize, ArrayRef)>, ArrowError> {
        let n = rows.len();
        let nb = self.null_bytes();
        if rows.iter().any(|r| r.len() < nb) {
            return Err(short());
        }
        let mut cols: Vec<Column> = self
            .compact
            .iter()
            .zip(&self.value_bytes)
            .map(|((_, _, k), hint)| Column::new(*k, n, hint.load(Ordering::Relaxed)))
            .collect();
        // Where each row's next value starts.
        let mut at = vec![nb; n];
        for (rows, at) in rows.chunks(DECODE_ROWS).zip(at.chunks_mut(DECODE_ROWS)) {
            for (j, c) in cols.iter_mut().enumerate() {
                c.take(rows, at, j)?;
            }
        }
        let mut out = Vec::with_capacity(self.compact.len() + self.rest.as_ref().map_or(0, |r| r.1.len()));
        for (((f, t, _), c), hint) in self.compact.iter().zip(cols).zip(&self.value_bytes) {
            hint.store(c.values.len() / n.max(1), Ordering::Relaxed);
            out.push((*f, c.finish(t, n)?));
        }
        match &self.rest {
            Some((c, fields)) => {
                let p = c.parser();
                let arrays = c.convert_rows(rows.iter().zip(&at).map(|(r, &a)| p.parse(&r[a..])))?;
                out.extend(fields.iter().copied().zip(arrays));
            }
            None => {
                if rows.iter().zip(&at).any(|(r, &a)| a != r.len()) {
                    return Err(ArrowError::InvalidArgumentError(
                        "a framed row's payload is too long".into(),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// Rows [`Payload::decode`] decodes a column of before the next column.
const DECODE_ROWS: usize = 128;

/// One compact column's values as they are decoded.
struct Column {
    kind: Kind,
    /// Validity bits, 64 rows a word.
    valid: Vec<u64>,
    any_null: bool,
    /// Fixed-width values, or the bytes of strings and binaries.
    values: Vec<u8>,
    /// A boolean column's values, 64 rows a word.
    bits: Vec<u64>,
    offsets: Vec<i64>,
}

impl Column {
    /// A column of `n` values of `kind`, strings and binaries of about
    /// `mean` bytes each (the last batch's).
    fn new(kind: Kind, n: usize, mean: usize) -> Column {
        let values = match kind {
            Kind::Fixed(w) => Vec::with_capacity(w * n),
            Kind::Narrow => Vec::with_capacity(16 * n),
            Kind::Bytes { .. } => Vec::with_capacity(mean * n + mean * n / 16),
            Kind::Bool => Vec::new(),
        };
        let mut offsets = Vec::new();
        if let Kind::Bytes { .. } = kind {
            offsets.reserve(n + 1);
            offsets.push(0);
        }
        Column {
            kind,
            valid: Vec::with_capacity(n.div_ceil(64)),
            any_null: false,
            values,
            bits: Vec::with_capacity(if kind == Kind::Bool { n.div_ceil(64) } else { 0 }),
            offsets,
        }
    }

    /// Takes this column's (the `j`th compact one's) value of each of
    /// `rows`, which starts at `at` (moved past it).
    fn take(&mut self, rows: &[&[u8]], at: &mut [usize], j: usize) -> Result<(), ArrowError> {
        let (byte, bit) = (j / 8, 1u8 << (j % 8));
        // Validity a word of 64 rows at a time (`rows` are whole words
        // but for the batch's last).
        for rows in rows.chunks(64) {
            let mut word = 0u64;
            for (k, r) in rows.iter().enumerate() {
                word |= u64::from(r[byte] & bit == 0) << k;
            }
            self.any_null |= word != u64::MAX >> (64 - rows.len());
            self.valid.push(word);
        }
        let null = |r: &[u8]| r[byte] & bit != 0;
        match self.kind {
            Kind::Fixed(w) => match w {
                1 => take_fixed::<1>(&mut self.values, rows, at, null),
                2 => take_fixed::<2>(&mut self.values, rows, at, null),
                4 => take_fixed::<4>(&mut self.values, rows, at, null),
                8 => take_fixed::<8>(&mut self.values, rows, at, null),
                16 => take_fixed::<16>(&mut self.values, rows, at, null),
                _ => {
                    for (r, a) in rows.iter().zip(at) {
                        if null(r) {
                            self.values.resize(self.values.len() + w, 0);
                        } else {
                            self.values.extend_from_slice(r.get(*a..*a + w).ok_or_else(short)?);
                            *a += w;
                        }
                    }
                    Ok(())
                }
            },
            Kind::Narrow => {
                for (r, a) in rows.iter().zip(at) {
                    let v = if null(r) {
                        0
                    } else {
                        let word = r.get(*a..*a + 8).ok_or_else(short)?;
                        *a += 8;
                        match i64::from_le_bytes(word.try_into().expect("8 bytes")) {
                            i64::MIN => {
                                let wide = r.get(*a..*a + 16).ok_or_else(short)?;
                                *a += 16;
                                i128::from_le_bytes(wide.try_into().expect("16 bytes"))
                            }
                            v => i128::from(v),
                        }
                    };
                    self.values.extend_from_slice(&v.to_le_bytes());
                }
                Ok(())
            }
            Kind::Bool => {
                for (rows, at) in rows.chunks(64).zip(at.chunks_mut(64)) {
                    let mut word = 0u64;
                    for (k, (r, a)) in rows.iter().zip(at).enumerate() {
                        if !null(r) {
                            word |= u64::from(*r.get(*a).ok_or_else(short)? != 0) << k;
                            *a += 1;
                        }
                    }
                    self.bits.push(word);
                }
                Ok(())
            }
            Kind::Bytes { .. } => {
                for (r, a) in rows.iter().zip(at) {
                    if !null(r) {
                        let (len, from) = read_leb128(r, *a).ok_or_else(short)?;
                        let end =
                            usize::try_from(len).ok().and_then(|l| from.checked_add(l)).ok_or_else(short)?;
                        self.values.extend_from_slice(r.get(from..end).ok_or_else(short)?);
                        *a = end;
                    }
                    self.offsets.push(self.values.len() as i64);
                }
                Ok(())
            }
        }
    }

    /// The array of type `t` of the `n` values taken.
    fn finish(self, t: &DataType, n: usize) -> Result<ArrayRef, ArrowError> {
        let nulls =
            self.any_null.then(|| NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(self.valid), 0, n)));
        let buffers = match self.kind {
            Kind::Fixed(_) | Kind::Narrow => vec![Buffer::from_vec(self.values)],
            Kind::Bool => vec![Buffer::from_vec(self.bits)],
            Kind::Bytes { large: true } => {
                vec![Buffer::from_vec(self.offsets), Buffer::from_vec(self.values)]
            }
            Kind::Bytes { large: false } => {
                if i32::try_from(self.values.len()).is_err() {
                    return Err(ArrowError::InvalidArgumentError("2 GiB of values in one batch".into()));
                }
                let offsets: Vec<i32> = self.offsets.iter().map(|&o| o as i32).collect();
                vec![Buffer::from_vec(offsets), Buffer::from_vec(self.values)]
            }
        };
        // Validated: the bytes come from a temporary file.
        let data = ArrayData::builder(t.clone()).len(n).buffers(buffers).nulls(nulls).build()?;
        Ok(make_array(data))
    }
}

impl Encoding<'_> {
    /// Adds each row's payload length to `lens` (one per row of the batch).
    pub(crate) fn add_lens(&self, lens: &mut [usize]) {
        let nb = self.payload.null_bytes();
        lens.iter_mut().for_each(|l| *l += nb);
        for (d, (_, _, kind)) in self.data.iter().zip(&self.payload.compact) {
            let nulls = d.nulls();
            let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
            match *kind {
                Kind::Fixed(w) => each_valid(lens, 0, valid, |_, l| *l += w),
                Kind::Bool => each_valid(lens, 0, valid, |_, l| *l += 1),
                Kind::Narrow => {
                    let values = d.buffer::<i128>(0);
                    each_valid(lens, 0, valid, |i, l| *l += narrow_len(values[i]))
                }
                Kind::Bytes { large } => {
                    let span = spans(d, large);
                    each_valid(lens, 0, valid, |i, l| {
                        let (a, b) = span(i);
                        *l += leb128_len((b - a) as u64) + (b - a);
                    })
                }
            }
        }
        if let Some(r) = &self.rest {
            lens.iter_mut().enumerate().for_each(|(i, l)| *l += r.row(i).data().len());
        }
    }

    /// Writes each row's payload into `out` at `starts` (one per row of
    /// the batch, each with the room [`Encoding::add_lens`] gave, zeroed),
    /// a column at a time; `starts` end where the payloads do.
    pub(crate) fn write(&self, out: &mut [u8], starts: &mut [usize], from: usize) {
        let nb = self.payload.null_bytes();
        let firsts = starts.to_vec();
        starts.iter_mut().for_each(|s| *s += nb);
        for (j, (d, (_, _, kind))) in self.data.iter().zip(&self.payload.compact).enumerate() {
            if let Some(n) = d.nulls() {
                for (i, &f) in firsts.iter().enumerate() {
                    if n.is_null(from + i) {
                        out[f + j / 8] |= 1 << (j % 8);
                    }
                }
            }
            let nulls = d.nulls();
            let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
            match *kind {
                Kind::Fixed(w) => {
                    let values = &d.buffers()[0].as_slice()[d.offset() * w..];
                    match w {
                        1 => put_fixed::<1>(values, out, starts, from, valid),
                        2 => put_fixed::<2>(values, out, starts, from, valid),
                        4 => put_fixed::<4>(values, out, starts, from, valid),
                        8 => put_fixed::<8>(values, out, starts, from, valid),
                        16 => put_fixed::<16>(values, out, starts, from, valid),
                        32 => put_fixed::<32>(values, out, starts, from, valid),
                        _ => each_valid(starts, from, valid, |i, s| {
                            out[*s..*s + w].copy_from_slice(&values[i * w..(i + 1) * w]);
                            *s += w;
                        }),
                    }
                }
                Kind::Narrow => {
                    let values = d.buffer::<i128>(0);
                    each_valid(starts, from, valid, |i, s| {
                        let v = values[i];
                        if narrow_len(v) == 8 {
                            out[*s..*s + 8].copy_from_slice(&(v as i64).to_le_bytes());
                            *s += 8;
                        } else {
                            out[*s..*s + 8].copy_from_slice(&i64::MIN.to_le_bytes());
                            out[*s + 8..*s + 24].copy_from_slice(&v.to_le_bytes());
                            *s += 24;
                        }
                    })
                }
                Kind::Bool => {
                    let bits = d.buffers()[0].as_slice();
                    let o = d.offset();
                    each_valid(starts, from, valid, |i, s| {
                        let k = o + i;
                        out[*s] = (bits[k / 8] >> (k % 8)) & 1;
                        *s += 1;
                    })
                }
                Kind::Bytes { large } => {
                    let span = spans(d, large);
                    let values = d.buffers()[1].as_slice();
                    each_valid(starts, from, valid, |i, s| {
                        let (a, b) = span(i);
                        *s = put_leb128(out, *s, (b - a) as u64);
                        out[*s..*s + b - a].copy_from_slice(&values[a..b]);
                        *s += b - a;
                    })
                }
            }
        }
        if let Some(r) = &self.rest {
            for (i, s) in starts.iter_mut().enumerate() {
                let row = r.row(from + i).data();
                out[*s..*s + row.len()].copy_from_slice(row);
                *s += row.len();
            }
        }
    }

    /// Each row's payload, written as [`crate::sort`] frames them: a
    /// column at a time over `chunk` rows at a time (tests).
    #[cfg(test)]
    pub(crate) fn payloads(&self, chunk: usize) -> Vec<Vec<u8>> {
        let mut lens = vec![0; self.rows()];
        self.add_lens(&mut lens);
        let mut starts: Vec<usize> = lens.iter().scan(0, |t, l| Some(std::mem::replace(t, *t + l))).collect();
        let firsts = starts.clone();
        let mut all = vec![0u8; lens.iter().sum()];
        for (k, starts) in starts.chunks_mut(chunk).enumerate() {
            self.write(&mut all, starts, k * chunk);
        }
        assert_eq!(starts.iter().zip(&firsts).map(|(s, f)| s - f).collect::<Vec<_>>(), lens);
        firsts.iter().zip(&lens).map(|(&f, &l)| all[f..f + l].to_vec()).collect()
    }

    #[cfg(test)]
    fn rows(&self) -> usize {
        self.data.first().map(ArrayData::len).or(self.rest.as_ref().map(Rows::num_rows)).unwrap_or(0)
    }
}

/// Calls `f` with each row's index and item of `items` whose value is
/// valid.
#[inline(always)]
fn each_valid<T>(
    items: &mut [T],
    from: usize,
    valid: impl Fn(usize) -> bool,
    mut f: impl FnMut(usize, &mut T),
) {
    for (i, t) in (from..).zip(items.iter_mut()) {
        if valid(i) {
            f(i, t);
        }
    }
}

/// Copies each valid row's value of `W` bytes (of `values`, the array's
/// values from its offset on) to `out` at its start.
#[inline(always)]
fn put_fixed<const W: usize>(
    values: &[u8],
    out: &mut [u8],
    starts: &mut [usize],
    from: usize,
    valid: impl Fn(usize) -> bool,
) {
    each_valid(starts, from, valid, |i, s| {
        let v: &[u8; W] = values[i * W..i * W + W].try_into().expect("W bytes");
        out[*s..*s + W].copy_from_slice(v);
        *s += W;
    })
}

/// The bytes a [`Kind::Narrow`] value takes.
#[inline(always)]
fn narrow_len(v: i128) -> usize {
    if v > i128::from(i64::MIN) && v <= i128::from(i64::MAX) {
        8
    } else {
        24
    }
}

/// Where value `i` of a string or binary array lies in its values buffer.
fn spans(d: &ArrayData, large: bool) -> impl Fn(usize) -> (usize, usize) + '_ {
    let (small, big) = if large { (&[][..], d.buffer::<i64>(0)) } else { (d.buffer::<i32>(0), &[][..]) };
    move |i| {
        if large {
            (big[i] as usize, big[i + 1] as usize)
        } else {
            (small[i] as usize, small[i + 1] as usize)
        }
    }
}

fn leb128_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes `v` as LEB128 at `out[at..]`; returns where it ends.
fn put_leb128(out: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
    at + 1
}
/// The value of a LEB128 length at `row[at..]` and where it ends.
fn read_leb128(row: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *row.get(at)?;
        at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some((v, at));
        }
    }
    None
}

/// A framed row's payload that ends before its values do.
fn short() -> ArrowError {
    ArrowError::InvalidArgumentError("a framed row's payload is cut short".into())
}

/// Appends to `values` the value of `W` bytes of each of `rows` that
/// `null` says is not null, each at `at` (moved past it), zeros for a null.
#[inline(always)]
fn take_fixed<const W: usize>(
    values: &mut Vec<u8>,
    rows: &[&[u8]],
    at: &mut [usize],
    null: impl Fn(&[u8]) -> bool,
) -> Result<(), ArrowError> {
    for (r, a) in rows.iter().zip(at) {
        if null(r) {
            values.extend_from_slice(&[0; W]);
        } else {
            let v: &[u8; W] = r.get(*a..*a + W).ok_or_else(short)?.try_into().expect("W bytes");
            values.extend_from_slice(v);
            *a += W;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int32Builder, ListBuilder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{
        BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray, Float64Array, Int16Array,
        LargeStringArray, StringArray, TimestampMicrosecondArray,
    };
    use arrow_schema::Field;
    use std::sync::Arc;

    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// A batch of every kind of column (compact and carried by arrow-row),
    /// with nulls, empty and long strings.
    fn batch(n: usize, seed: u64) -> RecordBatch {
        let mut r = xorshift(seed);
        let null = move |p: u64, v: u64| v % 100 < p;
        let mut vals: Vec<u64> = (0..n * 40).map(|_| r()).collect();
        let mut v = move || vals.pop().unwrap_or(7);
        let words = ["", "a", "é", "a\nb", "longer than thirty-two bytes, with a comma, and more"];
        let ints: Int16Array = (0..n).map(|_| if null(10, v()) { None } else { Some(v() as i16) }).collect();
        let floats: Float64Array =
            (0..n).map(|_| if null(10, v()) { None } else { Some(f64::from_bits(v())) }).collect();
        let text: StringArray =
            (0..n).map(|_| if null(10, v()) { None } else { Some(words[(v() % 5) as usize]) }).collect();
        let large: LargeStringArray =
            (0..n).map(|_| if null(50, v()) { None } else { Some(words[(v() % 5) as usize]) }).collect();
        let bin: BinaryArray = (0..n)
            .map(|_| if null(10, v()) { None } else { Some(words[(v() % 5) as usize].as_bytes()) })
            .collect();
        let flags: BooleanArray =
            (0..n).map(|_| if null(10, v()) { None } else { Some(v() % 2 == 0) }).collect();
        let dec = Decimal128Array::from(
            (0..n).map(|_| (!null(10, v())).then(|| v() as i128 - (1 << 60))).collect::<Vec<_>>(),
        )
        .with_precision_and_scale(30, 2)
        .unwrap();
        let ts = TimestampMicrosecondArray::from(
            (0..n).map(|_| (!null(5, v())).then(|| v() as i64)).collect::<Vec<_>>(),
        )
        .with_timezone("+02:00");
        let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
            (0..n).map(|_| (!null(10, v())).then(|| (v() as u32).to_le_bytes())),
            4,
        )
        .unwrap();
        // 18 digits, in 8 bytes, and values out of that precision (an
        // unvalidated array may hold them) at and past 64 bits' ends.
        let edges =
            [0, -1, 999_999_999_999_999_999, i64::MIN as i128, i64::MIN as i128 + 1, i64::MAX as i128];
        let edges =
            [&edges[..], &[i64::MIN as i128 - 1, i64::MAX as i128 + 1, i128::MIN, i128::MAX]].concat();
        let narrow = Decimal128Array::from(
            (0..n)
                .map(|_| {
                    (!null(10, v())).then(|| match v() % 4 {
                        0 => edges[(v() % edges.len() as u64) as usize],
                        _ => (v() % 2_000_000_000) as i128 - 1_000_000_000,
                    })
                })
                .collect::<Vec<_>>(),
        )
        .with_precision_and_scale(18, 3)
        .unwrap();
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        let mut list = ListBuilder::new(Int32Builder::new());
        for _ in 0..n {
            if null(10, v()) {
                dict.append_null();
                list.append_null();
            } else {
                dict.append_value(words[(v() % 5) as usize]);
                list.values().append_value(v() as i32);
                list.append(true);
            }
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(ints),
            Arc::new(floats),
            Arc::new(text),
            Arc::new(large),
            Arc::new(bin),
            Arc::new(flags),
            Arc::new(dec),
            Arc::new(ts),
            Arc::new(fixed),
            Arc::new(dict.finish()),
            Arc::new(list.finish()),
            Arc::new(narrow),
        ];
        let fields: Vec<Field> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    /// Every kind of column, sliced (its arrays at an offset), some
    /// columns left out: the payloads decode to the columns they came from;
    /// a payload cut short is an error, not a wrong value.
    #[test]
    fn payloads_decode_to_their_columns() {
        for seed in 1..6 {
            let whole = batch(700, seed);
            let b = whole.slice(13, 600);
            let fields: Vec<usize> = (0..b.num_columns()).filter(|&i| i != seed as usize).collect();
            let p = Payload::new(&b.schema(), &fields).unwrap();
            assert!(p.rest.is_some() && !p.compact.is_empty());
            let enc = p.encoding(&b).unwrap();
            // Written in chunks of any size, the payloads are the same.
            let rows = enc.payloads(b.num_rows());
            assert_eq!(enc.payloads(37 * seed as usize), rows);
            let slices: Vec<&[u8]> = rows.iter().map(|r| &r[..]).collect();
            let got = p.decode(&slices).unwrap();
            assert_eq!(got.len(), fields.len());
            for (f, a) in got {
                let want = b.column(f);
                // arrow-row gives a dictionary back as its values.
                let a = if a.data_type() == want.data_type() {
                    a
                } else {
                    arrow_cast::cast(&a, want.data_type()).unwrap()
                };
                assert_eq!(&a.to_data(), &want.to_data(), "seed {seed}, column {f}");
            }
            // Cut short: an error.
            let compact_only: Vec<usize> = fields.iter().copied().filter(|&f| f < 9 || f == 11).collect();
            let p = Payload::new(&b.schema(), &compact_only).unwrap();
            let enc = p.encoding(&b).unwrap();
            let v = enc.payloads(64).swap_remove(3);
            assert!(p.decode(&[&v[..v.len() - 1]]).is_err());
            assert!(p.decode(&[&v[..]]).is_ok());
        }
    }
}
