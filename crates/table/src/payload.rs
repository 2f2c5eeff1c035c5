//! The payload of a framed row: the columns that are not keys, written to
//! be read back, never compared.
//!
//! ```text
//!  [nulls: one bit per compact column][each compact column's value, unless null][the other columns: one arrow-row row]
//! ```
//!
//! A compact column is one of fixed width (integers, floats, dates,
//! times, timestamps, durations, intervals, decimals, fixed-size binary:
//! its value's bytes as the array holds them), a boolean (one byte) or a
//! string or binary with 32- or 64-bit offsets (a LEB128 length, then the
//! bytes); a null takes only its bit. The other columns (lists, structs,
//! dictionaries, views …) go through `arrow-row`, as the keys do. A value
//! `arrow-row` writes to be ordered takes more: a null byte before each
//! value, strings in blocks of 8 and then 32 bytes each followed by a
//! continuation byte — the benchmark's 1 GiB Parquet table framed 135 bytes
//! a row with its six payload columns so, 116 bytes this way (issue 42).

use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{ArrowError, DataType, Schema};

/// How a compact column's values are written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Bytes per value, as the array's values buffer holds them.
    Fixed(usize),
    /// One byte, 0 or 1.
    Bool,
    /// A length, then the bytes; offsets of 64 bits (`Large…`) or 32.
    Bytes { large: bool },
}

impl Kind {
    fn of(t: &DataType) -> Option<Kind> {
        match t {
            DataType::Boolean => Some(Kind::Bool),
            DataType::Utf8 | DataType::Binary => Some(Kind::Bytes { large: false }),
            DataType::LargeUtf8 | DataType::LargeBinary => Some(Kind::Bytes { large: true }),
            DataType::FixedSizeBinary(w) => Some(Kind::Fixed(usize::try_from(*w).ok()?)),
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
}

/// A batch's payload columns as [`Payload::encode_row`] reads them.
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
        Ok(Payload { compact, rest })
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
    /// is not of its type (a damaged run).
    pub(crate) fn decode(&self, rows: &[&[u8]]) -> Result<Vec<(usize, ArrayRef)>, ArrowError> {
        let n = rows.len();
        let short = || ArrowError::InvalidArgumentError("a framed row's payload is cut short".into());
        let mut builders: Vec<Builder> = self.compact.iter().map(|(_, _, k)| Builder::new(*k, n)).collect();
        let mut rests: Vec<&[u8]> = Vec::with_capacity(if self.rest.is_some() { n } else { 0 });
        let nb = self.null_bytes();
        for row in rows {
            let nulls = row.get(..nb).ok_or_else(short)?;
            let mut at = nb;
            for (j, b) in builders.iter_mut().enumerate() {
                let null = nulls[j / 8] & (1 << (j % 8)) != 0;
                at = b.push(row, at, null).ok_or_else(short)?;
            }
            if self.rest.is_some() {
                rests.push(&row[at..]);
            } else if at != row.len() {
                return Err(ArrowError::InvalidArgumentError("a framed row's payload is too long".into()));
            }
        }
        let mut out = Vec::with_capacity(self.compact.len() + self.rest.as_ref().map_or(0, |r| r.1.len()));
        for ((f, t, _), b) in self.compact.iter().zip(builders) {
            out.push((*f, b.finish(t, n)?));
        }
        if let Some((c, fields)) = &self.rest {
            let p = c.parser();
            let arrays = c.convert_rows(rests.iter().map(|r| p.parse(r)))?;
            out.extend(fields.iter().copied().zip(arrays));
        }
        Ok(out)
    }
}

impl Encoding<'_> {
    /// Appends row `i`'s payload to `out`.
    pub(crate) fn encode_row(&self, i: usize, out: &mut Vec<u8>) {
        let nb = self.payload.null_bytes();
        let start = out.len();
        out.resize(start + nb, 0);
        for (j, (d, (_, _, kind))) in self.data.iter().zip(&self.payload.compact).enumerate() {
            if d.is_null(i) {
                out[start + j / 8] |= 1 << (j % 8);
                continue;
            }
            match *kind {
                Kind::Fixed(w) => {
                    let at = (d.offset() + i) * w;
                    out.extend_from_slice(&d.buffers()[0].as_slice()[at..at + w]);
                }
                Kind::Bool => {
                    let bits = d.buffers()[0].as_slice();
                    let k = d.offset() + i;
                    out.push((bits[k / 8] >> (k % 8)) & 1);
                }
                Kind::Bytes { large } => {
                    let (a, b) = if large {
                        let o = d.buffer::<i64>(0);
                        (o[i] as usize, o[i + 1] as usize)
                    } else {
                        let o = d.buffer::<i32>(0);
                        (o[i] as usize, o[i + 1] as usize)
                    };
                    leb128(out, (b - a) as u64);
                    out.extend_from_slice(&d.buffers()[1].as_slice()[a..b]);
                }
            }
        }
        if let Some(r) = &self.rest {
            out.extend_from_slice(r.row(i).data());
        }
    }
}

fn leb128(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
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

/// One compact column's values as they are decoded.
struct Builder {
    kind: Kind,
    nulls: BooleanBufferBuilder,
    any_null: bool,
    values: Vec<u8>,
    bits: BooleanBufferBuilder,
    offsets: Vec<i64>,
}

impl Builder {
    fn new(kind: Kind, n: usize) -> Builder {
        let values = match kind {
            Kind::Fixed(w) => Vec::with_capacity(w * n),
            _ => Vec::new(),
        };
        let mut offsets = Vec::new();
        if let Kind::Bytes { .. } = kind {
            offsets.reserve(n + 1);
            offsets.push(0);
        }
        Builder {
            kind,
            nulls: BooleanBufferBuilder::new(n),
            any_null: false,
            values,
            bits: BooleanBufferBuilder::new(if kind == Kind::Bool { n } else { 0 }),
            offsets,
        }
    }

    /// Takes the value at `row[at..]` (none when `null`); returns where it
    /// ends, `None` where the row does.
    #[inline]
    fn push(&mut self, row: &[u8], at: usize, null: bool) -> Option<usize> {
        self.nulls.append(!null);
        self.any_null |= null;
        match self.kind {
            Kind::Fixed(w) => {
                if null {
                    self.values.resize(self.values.len() + w, 0);
                    Some(at)
                } else {
                    self.values.extend_from_slice(row.get(at..at + w)?);
                    Some(at + w)
                }
            }
            Kind::Bool => {
                if null {
                    self.bits.append(false);
                    Some(at)
                } else {
                    self.bits.append(*row.get(at)? != 0);
                    Some(at + 1)
                }
            }
            Kind::Bytes { .. } => {
                if null {
                    self.offsets.push(self.values.len() as i64);
                    return Some(at);
                }
                let (len, at) = read_leb128(row, at)?;
                let end = at.checked_add(usize::try_from(len).ok()?)?;
                self.values.extend_from_slice(row.get(at..end)?);
                self.offsets.push(self.values.len() as i64);
                Some(end)
            }
        }
    }

    /// The array of type `t` of the `n` values taken.
    fn finish(mut self, t: &DataType, n: usize) -> Result<ArrayRef, ArrowError> {
        let nulls = self.any_null.then(|| NullBuffer::new(self.nulls.finish()));
        let buffers = match self.kind {
            Kind::Fixed(_) => vec![Buffer::from_vec(self.values)],
            Kind::Bool => vec![self.bits.finish().into_inner()],
            Kind::Bytes { large: true } => {
                vec![Buffer::from_vec(self.offsets), Buffer::from_vec(self.values)]
            }
            Kind::Bytes { large: false } => {
                let offsets =
                    self.offsets.iter().map(|&o| i32::try_from(o)).collect::<Result<Vec<i32>, _>>().map_err(
                        |_| ArrowError::InvalidArgumentError("2 GiB of values in one batch".into()),
                    )?;
                vec![Buffer::from_vec(offsets), Buffer::from_vec(self.values)]
            }
        };
        // Validated: the bytes come from a temporary file.
        let data = ArrayData::builder(t.clone()).len(n).buffers(buffers).nulls(nulls).build()?;
        Ok(make_array(data))
    }
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
        let mut vals: Vec<u64> = (0..n * 16).map(|_| r()).collect();
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
            let rows: Vec<Vec<u8>> = (0..b.num_rows())
                .map(|i| {
                    let mut v = Vec::new();
                    enc.encode_row(i, &mut v);
                    v
                })
                .collect();
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
            let compact_only: Vec<usize> = fields.iter().copied().filter(|&f| f < 9).collect();
            let p = Payload::new(&b.schema(), &compact_only).unwrap();
            let enc = p.encoding(&b).unwrap();
            let mut v = Vec::new();
            enc.encode_row(3, &mut v);
            assert!(p.decode(&[&v[..v.len() - 1]]).is_err());
            assert!(p.decode(&[&v[..]]).is_ok());
        }
    }
}
