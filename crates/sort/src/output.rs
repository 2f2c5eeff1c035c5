//! Where the sorted data goes: an atomically replaced file, standard
//! output, a device or FIFO, a writer, or a program reading the items.
//!
//! The sort's last phase (the last merge, or run formation when the input
//! makes a single run) writes the result through [`Output::open`], in
//! blocks, as it produces it; nothing is copied from a file first:
//!
//! | [`Sink`] | how it is written |
//! |---|---|
//! | a path that can be replaced ([`OutputTarget::Replace`]) | beside its target through a stream of the plan's output kind, renamed over it by [`Output::commit`] ([`AtomicFile`]: symbolic links followed, mode, owner and attributes kept); it may name an input |
//! | a character or block device, a FIFO ([`OutputTarget::WriteInto`]) | written into as the result is produced; a FIFO is opened (waiting for its reader, cancellably) only when the first sorted byte is ready |
//! | a file this user may write but not replace | the result goes to a temporary file first and is copied in only when complete (so a failure never leaves it truncated) |
//! | [`Sink::Stdout`], [`Sink::Writer`] | written as produced |
//! | a channel ([`crate::Sorter`]'s iterator) | blocks of whole items: the write-behind's own blocks, lent to the reader and given back when it drops them ([`Block`]); only an item two blocks share is copied |
//!
//! Errors about the output name it, never its temporary file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Mutex, OnceLock};

use emsort_io::{
    AtomicFile, Dest, Error, ErrorKind, IntoKind, OutputTarget, Place, Result, TempDir, WriteBack,
};

use crate::byte_stream::{AlignedBuf, BlockSink, ByteInput, ByteOutput};
use crate::plan::SortPlan;

/// Where the sorted data goes.
pub enum Sink<'a> {
    /// A file, replaced atomically when complete (it may be an input); a
    /// device or a FIFO is written into.
    Path(&'a Path),
    /// The process's standard output.
    Stdout,
    /// Any writer.
    Writer(&'a mut (dyn Write + Send)),
}

/// The name of standard output in messages.
pub const STDOUT_NAME: &str = "<standard output>";

/// The first input's header (`--header`, module `header`), set once it is
/// read, written first by the output.
pub(crate) type HeaderSlot = std::sync::Arc<OnceLock<Vec<u8>>>;

/// Blocks of whole items for a reader in another thread.
pub(crate) type ItemBlocks = SyncSender<Block>;

/// A block of whole sorted items ([`crate::Blocks`]): the last merge's own
/// output buffer, lent to the reader and given back to the merge when
/// dropped (no copy), or bytes of its own (an item that straddled two of
/// the merge's blocks, the output of a sort without a merge).
pub struct Block(Held);

enum Held {
    Owned(Vec<u8>),
    Lent { buf: Option<AlignedBuf>, len: usize, back: Sender<AlignedBuf> },
}

impl Block {
    /// The block's bytes as a `Vec` (copied when lent).
    pub fn into_vec(mut self) -> Vec<u8> {
        match &mut self.0 {
            Held::Owned(v) => std::mem::take(v),
            Held::Lent { .. } => self.to_vec(),
        }
    }
}

#[cfg(test)]
impl Block {
    /// Whether the block is one of the merge's own buffers.
    pub(crate) fn is_lent(&self) -> bool {
        matches!(self.0, Held::Lent { .. })
    }
}

impl std::ops::Deref for Block {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Held::Owned(v) => v,
            Held::Lent { buf, len, .. } => &buf.as_ref().expect("held until dropped").bytes()[..*len],
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Held::Lent { buf, back, .. } = &mut self.0 {
            // A merge that has ended no longer takes it: it is freed.
            let _ = buf.take().map(|b| back.send(b));
        }
    }
}

/// Where the whole items of a block end: called with the block and where
/// its bytes not seen before start, returns the length of its whole items
/// (the rest waits for the next block). Made from the item codec by
/// [`crate::Sorter`].
pub(crate) type ItemCut = Box<dyn FnMut(&[u8], usize) -> usize + Send>;

/// The output a [`crate::Sorter`]'s caller chooses after its input ended.
pub(crate) enum Choice {
    /// A file, replaced atomically.
    Path(PathBuf),
    /// Blocks of whole items, cut where `ItemCut` says.
    Items(ItemBlocks, ItemCut),
}

/// An output chosen once the sort is ready for it.
pub(crate) struct Later<'a> {
    /// Told (once) when the output is first needed.
    ready: Mutex<Option<SyncSender<()>>>,
    choice: Mutex<Receiver<Choice>>,
    chosen: OnceLock<Output<'a>>,
}

enum Kind<'a> {
    Atomic(AtomicFile),
    /// A path to replace, when descriptors are scarce: checked at the
    /// start as `Atomic`, its directory given back, and its temporary file
    /// made only when the last phase opens it ([`FEW_DESCRIPTORS`]).
    Deferred {
        place: Mutex<Option<Place>>,
        made: OnceLock<Box<Output<'a>>>,
    },
    Into(Place, IntoKind),
    /// A file that cannot be replaced, open for writing since the start
    /// (not truncated); the complete result is kept in `spool/output` until
    /// the commit copies it in.
    InPlace {
        file: std::fs::File,
        place: Place,
        spool: TempDir,
    },
    Stdout,
    Writer(Mutex<Option<&'a mut (dyn Write + Send)>>),
    Channel(Mutex<Option<(ItemBlocks, ItemCut)>>),
    Later(Box<Later<'a>>),
}

/// The output of one sort, from before its first byte to its commit.
pub(crate) struct Output<'a> {
    kind: Kind<'a>,
    name: PathBuf,
    unit: usize,
    cfg: emsort_io::StreamConfig,
    /// Where a file that cannot be replaced is spooled.
    temp_root: Option<PathBuf>,
    cancel: &'a AtomicBool,
    /// The header written before the sorted data (`--header`).
    header: HeaderSlot,
}

/// Free descriptors below which a file to replace is made only when the
/// last phase opens it, its directory held only then and at the commit:
/// held from the start, the two descriptors would leave a merge none
/// (GNU's `sort -m -o out out …` under `ulimit -n` with three free).
const FEW_DESCRIPTORS: u64 = 8;

/// How the path `p` is written.
fn path_kind<'a>(p: &Path, temp_root: Option<&Path>) -> Result<Kind<'a>> {
    Ok(match OutputTarget::classify(p)? {
        OutputTarget::Replace(place) if emsort_io::rusage::free_descriptors() < FEW_DESCRIPTORS => {
            // Checked now as it will be made (a target this user may not
            // write is refused before the sort); the check's file vanishes.
            drop(AtomicFile::at(place)?);
            let mut place = Place::resolve(p)?;
            place.release()?;
            Kind::Deferred { place: Mutex::new(Some(place)), made: OnceLock::new() }
        }
        OutputTarget::Replace(place) => Kind::Atomic(AtomicFile::at(place)?),
        OutputTarget::WriteInto(place, IntoKind::InPlace) => {
            let root =
                temp_root.ok_or_else(|| Error::new(ErrorKind::Io("no temporary directory given"), p))?;
            // Opened now, as GNU sort checks it: a file this user may not
            // write is refused before the sort.
            let file = emsort_io::open_into(&place, IntoKind::InPlace, &AtomicBool::new(false))?;
            Kind::InPlace { file, place, spool: TempDir::new_in(root, "emsort-out-")? }
        }
        OutputTarget::WriteInto(place, kind) => Kind::Into(place, kind),
    })
}

/// How `sink` is written, and its name.
fn kind_of<'a>(sink: Sink<'a>, temp_root: Option<&Path>) -> Result<(Kind<'a>, PathBuf)> {
    Ok(match sink {
        Sink::Path(p) => (path_kind(p, temp_root)?, p.to_path_buf()),
        Sink::Stdout => (Kind::Stdout, PathBuf::from(STDOUT_NAME)),
        Sink::Writer(w) => (Kind::Writer(Mutex::new(Some(w))), PathBuf::from(STDOUT_NAME)),
    })
}

impl<'a> Output<'a> {
    /// Prepares `sink`: a path is classified and, when it is to be
    /// replaced, its temporary file is made now (so a target this user may
    /// not write is refused before the sort starts).
    pub fn prepare(plan: &SortPlan, sink: Sink<'a>, cancel: &'a AtomicBool) -> Result<Output<'a>> {
        let (kind, name) = kind_of(sink, plan.temp_dirs().first().map(PathBuf::as_path))?;
        Ok(Output::new(plan, kind, name, cancel))
    }

    /// An output chosen when first needed: `ready` is told, and the choice
    /// comes through `choice` ([`crate::Sorter`]).
    pub fn later(
        plan: &SortPlan,
        ready: SyncSender<()>,
        choice: Receiver<Choice>,
        cancel: &'a AtomicBool,
    ) -> Output<'a> {
        let later =
            Later { ready: Mutex::new(Some(ready)), choice: Mutex::new(choice), chosen: OnceLock::new() };
        Output::new(plan, Kind::Later(Box::new(later)), PathBuf::from("<sorted items>"), cancel)
    }

    fn new(plan: &SortPlan, kind: Kind<'a>, name: PathBuf, cancel: &'a AtomicBool) -> Output<'a> {
        let temp_root = plan.temp_dirs().first().cloned();
        Output {
            kind,
            name,
            unit: plan.unit(),
            cfg: plan.file_config(false),
            temp_root,
            cancel,
            header: HeaderSlot::default(),
        }
    }

    /// The output a deferred or later one turns out to be: `kind`, named
    /// `name`, with this one's format and streams.
    fn chosen(&self, kind: Kind<'a>, name: PathBuf) -> Output<'a> {
        Output {
            kind,
            name,
            unit: self.unit,
            cfg: self.cfg.clone(),
            temp_root: None,
            cancel: self.cancel,
            header: HeaderSlot::default(),
        }
    }

    /// The output's name for messages.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// Where the header goes, once read ([`crate::header`]): written
    /// first when the output opens.
    pub fn header(&self) -> HeaderSlot {
        self.header.clone()
    }

    /// Opens the output for the sorted data, its header written; a stream
    /// it writes through gets blocks of `block` bytes. Called once.
    pub fn open(&self, block: usize) -> Result<Box<dyn BlockSink + '_>> {
        let mut sink = self.open_sink(block)?;
        if let Some(h) = self.header.get() {
            sink.write(h)?;
        }
        Ok(sink)
    }

    /// [`Output::open`] without the header.
    fn open_sink(&self, block: usize) -> Result<Box<dyn BlockSink + '_>> {
        let cfg = self.cfg.clone().block_size(block.max(self.unit));
        Ok(match &self.kind {
            Kind::Atomic(f) => {
                let target = f.target();
                let sink = Box::new(ByteOutput::create_in(Dest::Open(f.file(), &target), self.unit, &cfg)?);
                match cfg.kind.bypasses_cache() {
                    true => sink,
                    // Made after the stream, which starts the file anew.
                    false => Box::new(HandOver { sink, back: f.writer()? }),
                }
            }
            Kind::InPlace { spool, .. } => {
                Box::new(ByteOutput::create(&spool.path().join("output"), self.unit, &cfg)?)
            }
            Kind::Deferred { place, made } => {
                let mut place = place.lock().unwrap_or_else(|e| e.into_inner()).take().expect("opened once");
                place.reattach()?;
                let mut file = AtomicFile::at(place)?;
                file.release_dir()?;
                let _ = made.set(Box::new(self.chosen(Kind::Atomic(file), self.name.clone())));
                made.get().expect("just set").open_sink(block)?
            }
            Kind::Into(place, kind) => {
                let file = emsort_io::open_into(place, *kind, self.cancel)?;
                Box::new(FdSink { file, name: place.path(), cancel: self.cancel })
            }
            Kind::Stdout => {
                use std::os::fd::AsFd;
                let fd = std::io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(|e| Error::from_io("dup", &self.name, e))?;
                Box::new(FdSink {
                    file: std::fs::File::from(fd),
                    name: self.name.clone(),
                    cancel: self.cancel,
                })
            }
            Kind::Writer(w) => {
                let w = w.lock().unwrap_or_else(|e| e.into_inner()).take().expect("opened once");
                Box::new(WriterSink { w, name: &self.name })
            }
            Kind::Later(later) => {
                if let Some(ready) = later.ready.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = ready.send(());
                }
                let choice = later.choice.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let chosen = match choice {
                    Ok(Choice::Path(p)) => self.chosen(path_kind(&p, self.temp_root.as_deref())?, p),
                    Ok(Choice::Items(tx, cut)) => {
                        self.chosen(Kind::Channel(Mutex::new(Some((tx, cut)))), self.name.clone())
                    }
                    Err(_) => return Err(Error::new(ErrorKind::Interrupted, &self.name)),
                };
                let _ = later.chosen.set(chosen);
                later.chosen.get().expect("just set").open_sink(block)?
            }
            Kind::Channel(tx) => {
                let (tx, cut) = tx.lock().unwrap_or_else(|e| e.into_inner()).take().expect("opened once");
                let block = block.max(self.unit);
                Box::new(ChannelSink { tx, cut, block, carry: Vec::new(), name: &self.name })
            }
        })
    }

    /// Makes the complete result the output: renames the temporary file
    /// over its target, or copies the spooled result into a file that could
    /// not be replaced ([`commit_in_place`]).
    pub fn commit(self) -> Result<()> {
        match self.kind {
            Kind::Atomic(f) => f.commit(),
            Kind::InPlace { file, place, spool } => {
                commit_in_place(&file, &place, spool, &self.cfg, self.cancel)
            }
            Kind::Later(later) => match later.chosen.into_inner() {
                Some(o) => o.commit(),
                None => Ok(()),
            },
            Kind::Deferred { made, .. } => match made.into_inner() {
                Some(o) => o.commit(),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// Copies the complete result (`spool/output`) over a file that cannot
/// be replaced (open as `file`), so that the file ends up holding its old
/// content or the whole result whatever happens (issue 37: a Ctrl-C during
/// this copy lost the file):
///
/// 1. a stop asked for before the copy leaves the file untouched;
/// 2. the copy runs under an [`emsort_io::temp::ExitHold`] and ignores the
///    cancel flag: it is a bounded local copy, and the binary's watchdog
///    waits for it, so a SIGINT or SIGTERM now ends the process right
///    after it;
/// 3. the spool is marked kept ([`TempDir::set_kept`]) while the file is
///    being rewritten: if the process dies there (SIGKILL, a power cut) the
///    cleaners leave the complete result and say where it is;
/// 4. the result is written over the old bytes from the start, then the
///    file is cut to its length and synced: overwriting needs no new space
///    on most file systems, so a full disk rarely stops it halfway; if a
///    write fails anyway, the spool is kept, reported, and the error
///    returned.
fn commit_in_place(
    file: &std::fs::File,
    place: &Place,
    spool: TempDir,
    cfg: &emsort_io::StreamConfig,
    cancel: &AtomicBool,
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let target = place.path();
    let _hold = emsort_io::temp::hold_exit();
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::new(ErrorKind::Interrupted, &target));
    }
    let from = spool.path().join("output");
    let note = format!(
        "the complete sorted result for {} is {} (emsort stopped while it copied the result there; \
         copy it by hand, then remove this directory)",
        target.display(),
        from.display()
    );
    spool.set_kept(Some(&note))?;
    let copy = || -> Result<()> {
        let mut inp = ByteInput::open(&from, 1, cfg)?;
        let mut buf = vec![0u8; cfg.block_size.max(4096)];
        let mut at = 0u64;
        loop {
            let n = inp.read(&mut buf)?;
            if n == 0 {
                break;
            }
            file.write_all_at(&buf[..n], at).map_err(|e| Error::from_io("write", &target, e))?;
            at += n as u64;
        }
        file.set_len(at).map_err(|e| Error::from_io("ftruncate", &target, e))?;
        file.sync_all().map_err(|e| Error::from_io("fsync", &target, e))
    };
    match copy() {
        Ok(()) => spool.set_kept(None),
        Err(e) => {
            emsort_io::temp::report_kept(spool.into_kept(), note);
            Err(e)
        }
    }
}

/// `e`, naming `to` instead of an atomic output's temporary file.
pub(crate) fn about_output(e: Error, to: &Path) -> Error {
    let temp =
        e.path().file_name().and_then(|n| n.to_str()).is_some_and(emsort_io::temp::is_atomic_temp_name);
    if temp {
        e.with_path(to)
    } else {
        e
    }
}

/// An output written through the page cache (every kind but `direct` and
/// `uring-direct`), handed to the disk as it is written ([`WriteBack`]):
/// else the commit's `fsync` waits for all of it (a 1 GiB sort of lines
/// with `--io uring`: 0.70 s, the CPUs idle).
struct HandOver<'s> {
    sink: Box<dyn BlockSink + 's>,
    back: WriteBack,
}

impl BlockSink for HandOver<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.sink.write(bytes)?;
        self.back.wrote(bytes.len() as u64);
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        self.sink.close()
    }
    fn write_block(
        &mut self,
        buf: AlignedBuf,
        len: usize,
        back: &std::sync::mpsc::Sender<AlignedBuf>,
    ) -> Result<Option<AlignedBuf>> {
        let kept = self.sink.write_block(buf, len, back)?;
        self.back.wrote(len as u64);
        Ok(kept)
    }
    fn keeps_blocks(&self) -> bool {
        self.sink.keeps_blocks()
    }
}

/// A device, a FIFO or standard output, written with `write(2)`; a full
/// pipe is waited for while the cancel flag is clear.
struct FdSink<'c> {
    file: std::fs::File,
    name: PathBuf,
    cancel: &'c AtomicBool,
}

impl BlockSink for FdSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        emsort_io::write_into(&self.file, bytes, &self.name, self.cancel)
    }
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

struct WriterSink<'w> {
    w: &'w mut (dyn Write + Send),
    name: &'w Path,
}

impl BlockSink for WriterSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes).map_err(|e| Error::from_io("write", self.name, e))
    }
    fn close(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| Error::from_io("write", self.name, e))
    }
}

/// Sends blocks of whole items (lines with their terminator): the bytes after the
/// block's last whole item wait for the next block. A write larger than the
/// block (a single run written whole from its chunk buffer) is sent in
/// pieces of the block, so at most about two blocks are in flight, not a
/// copy of the whole run.
struct ChannelSink<'n> {
    tx: ItemBlocks,
    /// Where its blocks' whole items end.
    cut: ItemCut,
    /// The most bytes of a write sent in one block.
    block: usize,
    carry: Vec<u8>,
    name: &'n Path,
}

impl ChannelSink<'_> {
    fn send(&mut self, block: Vec<u8>) -> Result<()> {
        if block.is_empty() {
            return Ok(());
        }
        self.send_block(Block(Held::Owned(block)))
    }

    fn send_block(&mut self, block: Block) -> Result<()> {
        self.tx.send(block).map_err(|_| Error::new(ErrorKind::Interrupted, self.name))
    }
}

impl BlockSink for ChannelSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        for piece in bytes.chunks(self.block) {
            let mut block = std::mem::take(&mut self.carry);
            block.extend_from_slice(piece);
            let whole = (self.cut)(&block, block.len() - piece.len());
            self.carry = block.split_off(whole);
            self.send(block)?;
        }
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        let rest = std::mem::take(&mut self.carry);
        self.send(rest)
    }
    /// A block that starts an item is lent to the reader as it is, its
    /// whole items (the rest, an item it cuts, is carried); else copied.
    fn write_block(
        &mut self,
        buf: AlignedBuf,
        len: usize,
        back: &Sender<AlignedBuf>,
    ) -> Result<Option<AlignedBuf>> {
        if !self.carry.is_empty() || len > self.block {
            self.write(&buf.bytes()[..len])?;
            return Ok(Some(buf));
        }
        let whole = (self.cut)(&buf.bytes()[..len], 0);
        self.carry.extend_from_slice(&buf.bytes()[whole..len]);
        if whole == 0 {
            return Ok(Some(buf));
        }
        self.send_block(Block(Held::Lent { buf: Some(buf), len: whole, back: back.clone() }))?;
        Ok(None)
    }
    fn keeps_blocks(&self) -> bool {
        true
    }
}
