//! Fixed-size plain elements that streams carry.
//!
//! An [`Element`] is a `Copy` value whose bytes are its native-endian
//! representation (`u32`, `i32`, `u64`, `i64`, `f32`, `f64`, `u8` and `u16`
//! arrays …). Streams move elements as raw bytes; the element size always
//! divides the page size, so a page-aligned window never splits an element.

/// A fixed-size plain value that can be written to and read from a file as
/// its native-endian bytes.
///
/// Implemented for every [`bytemuck::Pod`] type whose size is a power of two
/// no larger than 4096 bytes (checked at compile time where the element is
/// used through [`Element::SIZE`]).
pub trait Element: bytemuck::Pod + Send + Sync + 'static {
    /// Size of one element in bytes (a power of two, ≤ 4096).
    const SIZE: usize = {
        let s = std::mem::size_of::<Self>();
        assert!(s.is_power_of_two() && s <= 4096, "element size must be a power of two ≤ 4096");
        s
    };
}

impl<T: bytemuck::Pod + Send + Sync + 'static> Element for T {}

/// Views a slice of elements as bytes.
pub fn as_bytes<T: Element>(xs: &[T]) -> &[u8] {
    bytemuck::cast_slice(xs)
}

/// Views a mutable slice of elements as bytes.
pub fn as_bytes_mut<T: Element>(xs: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(xs)
}

/// Reads one element from the first `T::SIZE` bytes of `bytes` (any alignment).
#[inline]
pub fn from_bytes<T: Element>(bytes: &[u8]) -> T {
    bytemuck::pod_read_unaligned(&bytes[..T::SIZE])
}
