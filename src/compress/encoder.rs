//! One streaming encoder over the four codings, with bounded output.
//!
//! Every call appends at most [`EncoderParams::out_budget`] bytes to the
//! caller's `Vec`, so a filter can stop when its output queue is full and
//! go on when the socket drained: [`Encoder::feed`] returns how much input
//! it took, [`Encoder::flush_sync`] and [`Encoder::finish`] return
//! [`Progress::More`] until they are complete. The libraries keep what does
//! not fit (zlib's pending buffer, brotli's and zstd's blocks), so memory
//! per stream stays the library's own, not the body's size.
//!
//! gzip is zlib with a gzip header and trailer (CRC-32, length: RFC 1952);
//! `deflate` is zlib-wrapped (RFC 1950), which is what lighttpd sends
//! (`deflateInit2` with positive windowBits) and what browsers decode.

use std::fmt;

use brotli::enc::encode::{
    BrotliEncoderOperation, BrotliEncoderParameter, BrotliEncoderStateStruct,
};
use brotli::enc::interface::{
    InputPair, InputReferenceMut, PredictionModeContextMap, StaticCommand,
};
use brotli::enc::StandardAlloc;
use zlib_rs::{DeflateConfig, DeflateFlush, Method, Status, Strategy};
use zstd::zstd_safe::{self, zstd_sys::ZSTD_EndDirective, CParameter, InBuffer, OutBuffer};

use super::negotiate::brotli_mode_for;
use super::spec::EncoderParams;
use super::Coding;

/// Output written per library call: 16 KiB keeps the zero-fill of the
/// output window under a microsecond while one call still covers a TLS record.
const STEP: usize = 16 * 1024;

/// Whether a flush or finish is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Done,
    /// The output budget ran out: drain `out`, then call again.
    More,
}

/// A library refused: a bad parameter, an allocation, or misuse (feeding
/// after `finish`). The encoder is unusable after one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressError(pub String);

impl fmt::Display for CompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CompressError {}

fn err<T>(msg: impl Into<String>) -> Result<T, CompressError> {
    Err(CompressError(msg.into()))
}

enum Inner {
    Zlib(zlib_rs::Deflate),
    Brotli(Box<BrotliEncoderStateStruct<StandardAlloc>>),
    Zstd(zstd_safe::CCtx<'static>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Flush,
    Finish,
}

/// A streaming compressor for one response body.
pub struct Encoder {
    coding: Coding,
    inner: Inner,
    budget: usize,
    /// A flush or finish that returned `More` and must complete first.
    pending: Option<Op>,
    /// brotli: the FLUSH/FINISH operation was issued for the pending op.
    issued: bool,
    finished: bool,
    failed: bool,
    bytes_in: u64,
    bytes_out: u64,
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder")
            .field("coding", &self.coding)
            .field("bytes_in", &self.bytes_in)
            .field("bytes_out", &self.bytes_out)
            .finish_non_exhaustive()
    }
}

impl Encoder {
    /// An encoder for `coding` with lighttpd's resolved parameters. For
    /// brotli, `content_type` picks the mode when the params leave it
    /// generic, and a known `size` is the size hint, as lighttpd sets them.
    pub fn new(
        coding: Coding,
        params: &EncoderParams,
        content_type: Option<&str>,
        size: Option<u64>,
    ) -> Result<Encoder, CompressError> {
        let inner = match coding {
            Coding::Gzip | Coding::XGzip | Coding::Deflate => Inner::Zlib(zlib(coding, params)?),
            Coding::Br => Inner::Brotli(brotli(params, content_type, size)?),
            Coding::Zstd => Inner::Zstd(zstd(params)?),
        };
        Ok(Encoder {
            coding,
            inner,
            budget: params.out_budget.max(1),
            pending: None,
            issued: false,
            finished: false,
            failed: false,
            bytes_in: 0,
            bytes_out: 0,
        })
    }

    pub fn coding(&self) -> Coding {
        self.coding
    }

    /// Input taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Output produced so far.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// Compress from `input`, appending at most the budget to `out`.
    /// Returns how many bytes of `input` were taken; fewer than all means
    /// the budget ran out: drain `out` and feed the rest. An unfinished
    /// flush is completed first.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        self.usable()?;
        let start = out.len();
        if let Some(op) = self.pending {
            if self.run_op(op, out, start)? == Progress::More {
                return Ok(0);
            }
        }
        let mut taken = 0;
        while taken < input.len() {
            let room = self.budget.saturating_sub(out.len() - start);
            if room == 0 {
                break;
            }
            let before = out.len();
            let n = match self.step_feed(&input[taken..], out, room) {
                Ok(n) => n,
                Err(e) => return self.fail(e),
            };
            taken += n;
            if n == 0 && out.len() == before {
                break;
            }
        }
        self.bytes_in += taken as u64;
        self.bytes_out += (out.len() - start) as u64;
        Ok(taken)
    }

    /// Emit everything taken so far, decodable by the client now (zlib
    /// Z_SYNC_FLUSH, brotli FLUSH, zstd e_flush): for `deflate.sync-flush`
    /// and server-sent events.
    pub fn flush_sync(&mut self, out: &mut Vec<u8>) -> Result<Progress, CompressError> {
        self.usable()?;
        let start = out.len();
        if self.pending == Some(Op::Finish) {
            return err("flush_sync during finish");
        }
        let p = self.run_op(Op::Flush, out, start)?;
        self.bytes_out += (out.len() - start) as u64;
        Ok(p)
    }

    /// End the stream (trailer, checksums). Call until `Done`; after that
    /// the encoder takes nothing more.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<Progress, CompressError> {
        if self.finished {
            return Ok(Progress::Done);
        }
        self.usable()?;
        let start = out.len();
        if self.pending == Some(Op::Flush) && self.run_op(Op::Flush, out, start)? == Progress::More
        {
            self.bytes_out += (out.len() - start) as u64;
            return Ok(Progress::More);
        }
        let p = self.run_op(Op::Finish, out, start)?;
        self.bytes_out += (out.len() - start) as u64;
        if p == Progress::Done {
            self.finished = true;
        }
        Ok(p)
    }

    fn usable(&self) -> Result<(), CompressError> {
        if self.failed {
            err("encoder failed earlier")
        } else if self.finished {
            err("encoder already finished")
        } else {
            Ok(())
        }
    }

    fn fail<T>(&mut self, e: CompressError) -> Result<T, CompressError> {
        self.failed = true;
        Err(e)
    }

    /// Drive a flush or finish until complete or out of budget.
    fn run_op(
        &mut self,
        op: Op,
        out: &mut Vec<u8>,
        start: usize,
    ) -> Result<Progress, CompressError> {
        if self.pending != Some(op) {
            self.pending = Some(op);
            self.issued = false;
        }
        loop {
            let room = self.budget.saturating_sub(out.len() - start);
            if room == 0 {
                return Ok(Progress::More);
            }
            let before = out.len();
            let complete = match self.step_op(op, out, room) {
                Ok(c) => c,
                Err(e) => return self.fail(e),
            };
            if complete {
                self.pending = None;
                return Ok(Progress::Done);
            }
            if out.len() == before {
                return self.fail(CompressError(format!(
                    "{}: no progress while flushing",
                    self.coding.label()
                )));
            }
        }
    }

    /// One library call taking input; appends at most `room`. Returns input taken.
    fn step_feed(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        room: usize,
    ) -> Result<usize, CompressError> {
        match &mut self.inner {
            Inner::Zlib(z) => {
                let (taken, _, _) = zlib_call(z, input, out, room, DeflateFlush::NoFlush)?;
                Ok(taken)
            }
            Inner::Brotli(b) => {
                if b.has_more_output() {
                    brotli_drain(b, out, room);
                    return Ok(0);
                }
                let taken =
                    brotli_call(b, BrotliEncoderOperation::BROTLI_OPERATION_PROCESS, input)?;
                brotli_drain(b, out, room);
                Ok(taken)
            }
            Inner::Zstd(c) => {
                let (taken, _) =
                    zstd_call(c, input, out, room, ZSTD_EndDirective::ZSTD_e_continue)?;
                Ok(taken)
            }
        }
    }

    /// One library call of a flush or finish; `true` when it is complete.
    fn step_op(&mut self, op: Op, out: &mut Vec<u8>, room: usize) -> Result<bool, CompressError> {
        match &mut self.inner {
            Inner::Zlib(z) => {
                let flush = if op == Op::Flush {
                    DeflateFlush::SyncFlush
                } else {
                    DeflateFlush::Finish
                };
                let (_, status, full) = zlib_call(z, &[], out, room, flush)?;
                Ok(match (op, status) {
                    (_, Status::StreamEnd) => true,
                    // A repeated sync flush with nothing new is BufError: done.
                    (Op::Flush, Status::BufError) => true,
                    (Op::Flush, Status::Ok) => !full,
                    (Op::Finish, Status::Ok) => false,
                    (Op::Finish, Status::BufError) => return err("zlib: no progress finishing"),
                })
            }
            Inner::Brotli(b) => {
                if b.has_more_output() {
                    brotli_drain(b, out, room);
                    return Ok(false);
                }
                let done = if op == Op::Flush {
                    self.issued
                } else {
                    b.is_finished()
                };
                if done {
                    return Ok(true);
                }
                let operation = match op {
                    Op::Flush => BrotliEncoderOperation::BROTLI_OPERATION_FLUSH,
                    Op::Finish => BrotliEncoderOperation::BROTLI_OPERATION_FINISH,
                };
                brotli_call(b, operation, &[])?;
                self.issued = true;
                brotli_drain(b, out, room);
                // Complete when nothing is left to take (and, finishing, the
                // stream reached its end); else the next round drains.
                Ok(!b.has_more_output() && (op == Op::Flush || b.is_finished()))
            }
            Inner::Zstd(c) => {
                let directive = match op {
                    Op::Flush => ZSTD_EndDirective::ZSTD_e_flush,
                    Op::Finish => ZSTD_EndDirective::ZSTD_e_end,
                };
                let (_, remaining) = zstd_call(c, &[], out, room, directive)?;
                Ok(remaining == 0)
            }
        }
    }
}

fn zlib(coding: Coding, p: &EncoderParams) -> Result<zlib_rs::Deflate, CompressError> {
    // zlib-rs asserts on a bad config, so check each value first.
    if !(-1..=9).contains(&p.gzip_level)
        || !(9..=15).contains(&p.gzip_window_bits)
        || !(1..=9).contains(&p.gzip_mem_level)
    {
        return err(format!(
            "zlib: level {} windowBits {} memLevel {} out of range",
            p.gzip_level, p.gzip_window_bits, p.gzip_mem_level
        ));
    }
    let Ok(strategy) = Strategy::try_from(p.gzip_strategy as i32) else {
        return err(format!(
            "zlib: strategy {} out of range 0 ... 4",
            p.gzip_strategy
        ));
    };
    let wbits = p.gzip_window_bits as i32;
    Ok(zlib_rs::Deflate::new_with_config(DeflateConfig {
        level: p.gzip_level,
        method: Method::Deflated,
        // 16 + windowBits: a gzip header and trailer instead of zlib's.
        window_bits: if coding == Coding::Deflate {
            wbits
        } else {
            wbits + 16
        },
        mem_level: p.gzip_mem_level as i32,
        strategy,
    }))
}

/// One zlib call into at most `room` (≤ STEP) new bytes of `out`.
/// Returns (input taken, status, whether the output window was filled).
fn zlib_call(
    z: &mut zlib_rs::Deflate,
    input: &[u8],
    out: &mut Vec<u8>,
    room: usize,
    flush: DeflateFlush,
) -> Result<(usize, Status, bool), CompressError> {
    let n = room.min(STEP);
    let start = out.len();
    out.resize(start + n, 0);
    let (in0, out0) = (z.total_in(), z.total_out());
    let result = z.compress(input, &mut out[start..], flush);
    let written = (z.total_out() - out0) as usize;
    out.truncate(start + written);
    match result {
        Ok(status) => Ok(((z.total_in() - in0) as usize, status, written == n)),
        Err(e) => err(format!("zlib: {e:?}")),
    }
}

fn brotli(
    p: &EncoderParams,
    content_type: Option<&str>,
    size: Option<u64>,
) -> Result<Box<BrotliEncoderStateStruct<StandardAlloc>>, CompressError> {
    if p.brotli_quality > 11 || !(10..=24).contains(&p.brotli_lgwin) || p.brotli_mode > 2 {
        return err(format!(
            "brotli: quality {} lgwin {} mode {} out of range",
            p.brotli_quality, p.brotli_lgwin, p.brotli_mode
        ));
    }
    let mut b = Box::new(BrotliEncoderStateStruct::new(StandardAlloc::default()));
    let mode = if p.brotli_mode != 0 {
        p.brotli_mode
    } else {
        brotli_mode_for(content_type)
    };
    let mut ok = b.set_parameter(
        BrotliEncoderParameter::BROTLI_PARAM_QUALITY,
        p.brotli_quality,
    ) && b.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_LGWIN, p.brotli_lgwin)
        && b.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_MODE, mode);
    // lighttpd gives the size hint when it fits in 31 bits after halving.
    if let Some(len) = size.filter(|&len| len >> 1 < (u32::MAX >> 1) as u64) {
        ok &= b.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_SIZE_HINT, len as u32);
    }
    if !ok {
        return err("brotli: parameter refused");
    }
    Ok(b)
}

fn nop_metablock(
    _: &mut PredictionModeContextMap<InputReferenceMut>,
    _: &mut [StaticCommand],
    _: InputPair,
    _: &mut StandardAlloc,
) {
}

/// One brotli call with no output window (the output stays in the encoder
/// for [`brotli_drain`]). Returns input taken.
fn brotli_call(
    b: &mut BrotliEncoderStateStruct<StandardAlloc>,
    op: BrotliEncoderOperation,
    input: &[u8],
) -> Result<usize, CompressError> {
    let mut avail_in = input.len();
    let mut in_offset = 0;
    let mut avail_out = 0;
    let mut out_offset = 0;
    let mut total_out = None;
    let ok = b.compress_stream(
        op,
        &mut avail_in,
        input,
        &mut in_offset,
        &mut avail_out,
        &mut [],
        &mut out_offset,
        &mut total_out,
        &mut nop_metablock,
    );
    if ok {
        Ok(in_offset)
    } else {
        err("brotli: encoder refused the stream operation")
    }
}

/// Move at most `room` bytes of the encoder's pending output to `out`.
fn brotli_drain(b: &mut BrotliEncoderStateStruct<StandardAlloc>, out: &mut Vec<u8>, room: usize) {
    // take_output treats a size of 0 as "all"; room is never 0 here. It
    // returns the whole pending slice but consumes only `size` of it (and
    // sets `size` to that), so only that much is copied.
    let mut size = room.max(1);
    if b.has_more_output() {
        let pending = b.take_output(&mut size);
        out.extend_from_slice(&pending[..size.min(pending.len())]);
    }
}

fn zstd(p: &EncoderParams) -> Result<zstd_safe::CCtx<'static>, CompressError> {
    use zstd_safe::Strategy as S;
    let mut c = zstd_safe::CCtx::try_create()
        .ok_or_else(|| CompressError("zstd: cannot allocate a context".into()))?;
    let set = |c: &mut zstd_safe::CCtx, param: CParameter| {
        c.set_parameter(param).map(|_| ()).map_err(|code| {
            CompressError(format!(
                "zstd: {:?}: {}",
                param,
                zstd_safe::get_error_name(code)
            ))
        })
    };
    if let Some(level) = p.zstd_level {
        set(&mut c, CParameter::CompressionLevel(level))?;
    }
    if let Some(s) = p.zstd_strategy {
        let strategy = match s {
            1 => S::ZSTD_fast,
            2 => S::ZSTD_dfast,
            3 => S::ZSTD_greedy,
            4 => S::ZSTD_lazy,
            5 => S::ZSTD_lazy2,
            6 => S::ZSTD_btlazy2,
            7 => S::ZSTD_btopt,
            8 => S::ZSTD_btultra,
            9 => S::ZSTD_btultra2,
            _ => return err(format!("zstd: strategy {s} out of range 1 ... 9")),
        };
        set(&mut c, CParameter::Strategy(strategy))?;
    }
    if let Some(w) = p.zstd_window_log {
        set(&mut c, CParameter::WindowLog(w))?;
    }
    Ok(c)
}

/// One zstd call into at most `room` (≤ STEP) new bytes of `out`.
/// Returns (input taken, bytes zstd still holds for a flush/end).
fn zstd_call(
    c: &mut zstd_safe::CCtx<'static>,
    input: &[u8],
    out: &mut Vec<u8>,
    room: usize,
    directive: ZSTD_EndDirective,
) -> Result<(usize, usize), CompressError> {
    let n = room.min(STEP);
    let start = out.len();
    out.resize(start + n, 0);
    let mut inb = InBuffer::around(input);
    let (result, written) = {
        let mut outb = OutBuffer::around(&mut out[start..]);
        let r = c.compress_stream2(&mut outb, &mut inb, directive);
        (r, outb.pos())
    };
    out.truncate(start + written);
    match result {
        Ok(remaining) => Ok((inb.pos, remaining)),
        Err(code) => err(format!("zstd: {}", zstd_safe::get_error_name(code))),
    }
}
