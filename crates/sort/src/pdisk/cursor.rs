//! A run's items across block boundaries, as a merge reads them.
//!
//! A [`RunCursor`] holds a run's leading block and the position of its
//! next item. Items need not be aligned to blocks: a 104-byte record or a
//! line may begin in one block and end in the next, or (a line longer than
//! B) span several. The cursor copies the part of such an item that lies
//! in a depleted block into its *carry* buffer and completes it from the
//! next block, so the depleted block can be given back at once and a run
//! never holds more than one block (its leading block).
//!
//! ```text
//!   block j−1: [ … item  item  it|     block j: |em  item  item … ]
//!                               └─ carry ──────┘
//! ```
//!
//! [`RunCursor::settle`] finds the next head after the previous one was
//! consumed (or a block was installed): an item in the block
//! ([`Head::Item`]), a completed carried item ([`Head::Carry`]), or it
//! reports that the block is depleted and block `next` is needed (the
//! cursor's head is then [`Head::Wait`]: a placeholder until that block
//! participates), or that the run is exhausted ([`Head::Done`]).

use emsort_io::disks::Block;

use crate::codec::{Codec, HeadKey};

/// What the run offers the merge now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// An item in the leading block, at `start`, `len` bytes.
    Item {
        /// Offset in the block.
        start: usize,
        /// Length in bytes.
        len: usize,
    },
    /// An item assembled in the carry buffer.
    Carry,
    /// The next item needs block `next`, which has not begun participating.
    Wait,
    /// The run is exhausted.
    Done,
}

/// What [`RunCursor::settle`] found.
#[derive(Debug)]
pub(crate) enum Settle {
    /// The head is an item.
    Ready,
    /// The leading block is depleted (given back here, with its length, if
    /// there was one) and block `next` is needed.
    Need(Option<(Block, usize)>),
    /// The run is exhausted; `truncated` when it ended inside an item.
    End(Option<(Block, usize)>, bool),
}

/// One run's read position in a merge.
#[derive(Debug)]
pub(crate) struct RunCursor {
    block: Option<Block>,
    len: usize,
    pos: usize,
    carry: Vec<u8>,
    /// The current head.
    pub head: Head,
    /// The next block to begin participating.
    pub next: u64,
    /// Blocks in the run.
    pub blocks: u64,
    /// The forecasting key of block `next` while the head is
    /// [`Head::Wait`] (SRM's placeholder head).
    pub key: Vec<u8>,
    /// The head's key (of its item, or of its forecasting key).
    pub hk: HeadKey,
}

impl RunCursor {
    /// A cursor over a run of `blocks` blocks, before its first block.
    pub fn new(blocks: u64) -> RunCursor {
        RunCursor {
            block: None,
            len: 0,
            pos: 0,
            carry: Vec::new(),
            head: Head::Wait,
            next: 0,
            blocks,
            key: Vec::new(),
            hk: HeadKey::default(),
        }
    }

    /// Makes `block` (`len` bytes), block `next` of the run, the leading
    /// block.
    pub fn install(&mut self, block: Block, len: usize) {
        debug_assert!(self.block.is_none(), "a run has one leading block");
        self.block = Some(block);
        self.len = len;
        self.pos = 0;
        self.next += 1;
    }

    /// The head item's bytes ([`Head::Item`] or [`Head::Carry`]).
    #[inline]
    pub fn item(&self) -> &[u8] {
        match self.head {
            Head::Item { start, len } => {
                &self.block.as_ref().expect("an item's block").as_slice()[start..start + len]
            }
            _ => &self.carry,
        }
    }

    /// The head's raw key: its item's ([`Codec::raw_key`]) or the
    /// placeholder's forecasting key, for the tie rules.
    #[inline]
    pub fn raw_key(&self, c: &dyn Codec) -> &[u8] {
        match self.head {
            Head::Wait => &self.key,
            Head::Done => &[],
            _ => c.raw_key(self.item()),
        }
    }

    /// Takes the head's key (its item's, or the placeholder's forecasting
    /// key's) into [`RunCursor::hk`]; returns its prefix.
    #[inline]
    pub fn take_key(&mut self, c: &dyn Codec) -> u64 {
        match self.head {
            Head::Wait => self.hk.forecast(c, &self.key),
            Head::Item { start, len } => {
                let b = self.block.as_ref().expect("an item's block");
                self.hk.item(c, &b.as_slice()[start..start + len])
            }
            Head::Carry => self.hk.item(c, &self.carry),
            Head::Done => {}
        }
        self.hk.prefix
    }

    /// The head item has been output: step past it.
    #[inline]
    pub fn consume(&mut self) {
        match self.head {
            Head::Item { start, len } => self.pos = start + len,
            Head::Carry => self.carry.clear(),
            _ => debug_assert!(false, "consume without an item"),
        }
    }

    /// The common case of [`RunCursor::settle`]: the next item lies whole
    /// in the leading block; it becomes the head, and its prefix is
    /// returned. `None`: [`RunCursor::settle`] must decide.
    #[inline]
    pub fn next_in_block(&mut self, c: &dyn Codec) -> Option<u64> {
        if !self.carry.is_empty() {
            return None;
        }
        let data = &self.block.as_ref()?.as_slice()[self.pos..self.len];
        let n = c.item_len(data)?;
        self.head = Head::Item { start: self.pos, len: n };
        if c.normalises() {
            self.hk.item(c, &data[..n]);
            return Some(self.hk.prefix);
        }
        Some(c.item_prefix(&data[..n]))
    }

    /// Finds the next head (see the module docs).
    #[inline]
    pub fn settle(&mut self, c: &dyn Codec) -> Settle {
        if let Some(b) = &self.block {
            let data = &b.as_slice()[self.pos..self.len];
            if self.carry.is_empty() {
                if let Some(n) = c.item_len(data) {
                    self.head = Head::Item { start: self.pos, len: n };
                    return Settle::Ready;
                }
                self.carry.extend_from_slice(data);
            } else {
                match c.rest_len(&self.carry, data) {
                    Some(n) => {
                        self.carry.extend_from_slice(&data[..n]);
                        self.pos += n;
                        self.head = Head::Carry;
                        return Settle::Ready;
                    }
                    None => self.carry.extend_from_slice(data),
                }
            }
            self.pos = self.len;
        }
        let depleted = self.block.take().map(|b| (b, self.len));
        if self.next >= self.blocks {
            self.head = Head::Done;
            return Settle::End(depleted, !self.carry.is_empty());
        }
        self.head = Head::Wait;
        Settle::Need(depleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    /// Reads `data` cut into blocks of `b` bytes through a cursor: the
    /// items of `format` ending in `eol`.
    fn items(format: Format, eol: u8, data: &[u8], b: usize) -> Vec<Vec<u8>> {
        let fmt = crate::codec::of(format, false, eol, None);
        let blocks: Vec<&[u8]> = data.chunks(b).collect();
        let mut c = RunCursor::new(blocks.len() as u64);
        let mut out = vec![];
        loop {
            match c.settle(&*fmt) {
                Settle::Ready => {
                    out.push(c.item().to_vec());
                    c.consume();
                }
                Settle::Need(_) => {
                    let src = blocks[c.next as usize];
                    let mut blk = Block::new(b);
                    blk.as_mut_slice()[..src.len()].copy_from_slice(src);
                    c.install(blk, src.len());
                }
                Settle::End(_, truncated) => {
                    assert!(!truncated);
                    return out;
                }
            }
        }
    }

    #[test]
    fn carries_items_across_blocks() {
        let recs: Vec<u8> = (0..50u8).collect();
        for b in [1, 3, 5, 10, 64] {
            let got = items("rec:5:0:1".parse().unwrap(), b'\n', &recs, b);
            assert_eq!(got, recs.chunks(5).map(|c| c.to_vec()).collect::<Vec<_>>(), "B = {b}");
        }
        let text = b"a\n\nlonger line here\nb\nccccccccccccccccccccc\n";
        for b in [1, 2, 4, 7, 100] {
            let got = items(Format::Lines, b'\n', text, b);
            let want: Vec<Vec<u8>> = text.split_inclusive(|&c| c == b'\n').map(|l| l.to_vec()).collect();
            assert_eq!(got, want, "B = {b}");
        }
        // -z: NUL ends a line, a newline is one of its bytes.
        let text = b"a\nb\0\0longer\nline\n\0c\0";
        for b in [1, 2, 4, 7, 100] {
            let got = items(Format::Lines, 0, text, b);
            let want: Vec<Vec<u8>> = text.split_inclusive(|&c| c == 0).map(|l| l.to_vec()).collect();
            assert_eq!(got, want, "B = {b}");
        }
    }
}
