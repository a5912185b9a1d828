//! The compressors: gzip by libdeflate for a whole body at once (a cached
//! file, or a proxied body that came in one read), and by flate2 on zlib-rs
//! for a stream (libdeflate has no streaming API), brotli by the `brotli` crate (Dropbox's port of Google's
//! encoder), zstd by the `zstd` crate (bindings to the reference library).
//!
//! A streamed body goes through an [`Encoder`] piece by piece, each piece
//! flushed so that what the upstream sent so far reaches the client (a
//! server-sent event is not held back to fill a block). A cached body is
//! compressed at once ([`compress`]), with the window sized to it.

use std::cell::RefCell;
use std::io::{self, Write};

use crate::semantics::negotiation::Coding;

use super::stats;
use super::Levels;

/// brotli's window for a body of unknown length: 256 KiB, a quarter of its
/// default, as the encoder's memory grows with it and each stream has its
/// own.
const BR_STREAM_LGWIN: u32 = 18;
const BR_BUFFER: usize = 4096;

/// gzip compressors kept per core for reuse: making one costs more than
/// compressing a small body (its tables are allocated and cleared), and a
/// reset one clears only its hash table.
const GZIP_POOLED: usize = 8;

thread_local! {
    /// One libdeflate compressor per level, per core.
    static DEFLATERS: RefCell<Vec<(u32, libdeflater::Compressor)>> = const { RefCell::new(Vec::new()) };
    static GZIP_POOL: RefCell<Vec<(GzipKey, flate2::Compress)>> = const { RefCell::new(Vec::new()) };
}

/// (level, window bits): what a pooled compressor was made with.
type GzipKey = (u32, u8);

/// A gzip stream on zlib's own gzip wrapper (header and trailer included).
struct Gzip {
    c: Option<flate2::Compress>,
    key: GzipKey,
    out: Vec<u8>,
}

impl Gzip {
    fn new(level: u32, len: Option<u64>) -> Gzip {
        // The smallest window that holds the whole body, as nginx picks:
        // less memory to clear, the same output.
        let bits = len.map_or(15, |n| window_for(n as usize).clamp(9, 15) as u8);
        Gzip {
            c: None,
            key: (level, bits),
            out: Vec::new(),
        }
    }

    /// The stream's compressor, from this core's pool where one is idle;
    /// taken only when the body streams (a whole one needs none).
    fn compressor(&mut self) -> &mut flate2::Compress {
        let key = self.key;
        self.c.get_or_insert_with(|| {
            let pooled = GZIP_POOL.with(|p| {
                let mut p = p.borrow_mut();
                let i = p.iter().position(|(k, _)| *k == key)?;
                Some(p.swap_remove(i).1)
            });
            pooled.unwrap_or_else(|| {
                flate2::Compress::new_gzip(flate2::Compression::new(key.0), key.1)
            })
        })
    }

    fn deflate(&mut self, mut input: &[u8], flush: flate2::FlushCompress) -> io::Result<()> {
        self.compressor();
        let c = self.c.as_mut().expect("taken just now");
        loop {
            if self.out.capacity() - self.out.len() < 512 {
                self.out.reserve(input.len() / 2 + 1024);
            }
            let before = c.total_in();
            let status = c
                .compress_vec(input, &mut self.out, flush)
                .map_err(io::Error::other)?;
            input = &input[(c.total_in() - before) as usize..];
            if status == flate2::Status::StreamEnd {
                return Ok(());
            }
            // Done when zlib took everything and stopped short of the end
            // of the output: it had nothing more to give.
            let room = self.out.capacity() > self.out.len();
            if input.is_empty() && room && flush != flate2::FlushCompress::Finish {
                return Ok(());
            }
        }
    }
}

impl Drop for Gzip {
    fn drop(&mut self) {
        if let Some(mut c) = self.c.take() {
            c.reset();
            GZIP_POOL.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < GZIP_POOLED {
                    p.push((self.key, c));
                }
            });
        }
    }
}

/// A whole body as gzip, in one call.
fn gzip_whole(level: u32, data: &[u8]) -> io::Result<Vec<u8>> {
    DEFLATERS.with(|d| {
        let mut d = d.borrow_mut();
        let i = match d.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                let lvl = libdeflater::CompressionLvl::new(level as i32)
                    .map_err(|_| io::Error::other("gzip level out of range"))?;
                d.push((level, libdeflater::Compressor::new(lvl)));
                d.len() - 1
            }
        };
        let c = &mut d[i].1;
        let mut out = vec![0u8; c.gzip_compress_bound(data.len())];
        let n = c
            .gzip_compress(data, &mut out)
            .map_err(|e| io::Error::other(format!("libdeflate: {e:?}")))?;
        out.truncate(n);
        Ok(out)
    })
}

enum Kind {
    Gzip(Gzip),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

/// One body's compressor; its output collects inside until taken.
pub struct Encoder {
    kind: Kind,
    input: u64,
    /// The body's length, where known.
    len: Option<u64>,
    /// The whole body went out in one call (gzip: libdeflate).
    whole: bool,
}

impl Encoder {
    /// `len`: the body's length where known, to size the compressor to it.
    pub fn new(coding: Coding, levels: &Levels, len: Option<u64>) -> io::Result<Encoder> {
        let level = levels.of(coding);
        let kind = match coding {
            Coding::Gzip => Kind::Gzip(Gzip::new(level, len)),
            Coding::Br => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: level as i32,
                    lgwin: len.map_or(BR_STREAM_LGWIN, |n| {
                        window_for(n as usize).min(BR_STREAM_LGWIN)
                    }) as i32,
                    size_hint: len.unwrap_or(0) as usize,
                    ..Default::default()
                };
                Kind::Br(Box::new(brotli::CompressorWriter::with_params(
                    Vec::new(),
                    BR_BUFFER,
                    &params,
                )))
            }
            Coding::Zstd => {
                let mut e = zstd::stream::write::Encoder::new(Vec::new(), level as i32)?;
                // A known size lets zstd pick tables to fit it.
                e.set_pledged_src_size(len)?;
                Kind::Zstd(e)
            }
        };
        stats::count(coding);
        Ok(Encoder {
            kind,
            input: 0,
            len,
            whole: false,
        })
    }

    /// What a body of known length still lacks; `None` for a stream.
    pub fn remaining(&self) -> Option<u64> {
        self.len.map(|n| n.saturating_sub(self.input))
    }

    /// Compresses `data`; with `flush`, what the output holds then decodes
    /// to everything written so far. Take it with [`Encoder::take`].
    pub fn write(&mut self, data: &[u8], flush: bool) -> io::Result<()> {
        if let Kind::Gzip(g) = &mut self.kind {
            if self.input == 0 && self.len == Some(data.len() as u64) {
                // The whole body at once: libdeflate, and nothing to finish.
                self.input = data.len() as u64;
                self.whole = true;
                g.out = gzip_whole(g.key.0, data)?;
                return Ok(());
            }
        }
        self.input += data.len() as u64;
        match &mut self.kind {
            Kind::Gzip(g) => g.deflate(
                data,
                if flush {
                    flate2::FlushCompress::Sync
                } else {
                    flate2::FlushCompress::None
                },
            ),
            Kind::Br(e) => {
                e.write_all(data)?;
                if flush {
                    e.flush()?;
                }
                Ok(())
            }
            Kind::Zstd(e) => {
                e.write_all(data)?;
                if flush {
                    e.flush()?;
                }
                Ok(())
            }
        }
    }

    /// The output so far, leaving the encoder's buffer empty.
    pub fn take(&mut self) -> Vec<u8> {
        let out = match &mut self.kind {
            Kind::Gzip(g) => std::mem::take(&mut g.out),
            Kind::Br(e) => std::mem::take(e.get_mut()),
            Kind::Zstd(e) => std::mem::take(e.get_mut()),
        };
        stats::output(out.len() as u64);
        out
    }

    /// Ends the body; the rest of the output (with the coding's trailer).
    pub fn finish(mut self) -> io::Result<Vec<u8>> {
        let before = self.take();
        let mut rest = match self.kind {
            Kind::Gzip(_) if self.whole => Vec::new(),
            Kind::Gzip(mut g) => {
                g.deflate(&[], flate2::FlushCompress::Finish)?;
                std::mem::take(&mut g.out)
            }
            // Finishes the stream (its last block) on the way out.
            Kind::Br(e) => (*e).into_inner(),
            Kind::Zstd(e) => e.finish()?,
        };
        stats::input(self.input);
        stats::output(rest.len() as u64);
        let mut out = before;
        out.append(&mut rest);
        Ok(out)
    }
}

/// Compresses a whole body at once, for the cache.
pub fn compress(coding: Coding, levels: &Levels, data: &[u8]) -> io::Result<Vec<u8>> {
    let level = levels.of(coding);
    let out = match coding {
        Coding::Gzip => gzip_whole(level, data)?,
        Coding::Br => {
            let mut out = Vec::with_capacity(data.len() / 3 + 64);
            let params = brotli::enc::BrotliEncoderParams {
                quality: level as i32,
                lgwin: window_for(data.len()) as i32,
                size_hint: data.len(),
                ..Default::default()
            };
            brotli::BrotliCompress(&mut &data[..], &mut out, &params)?;
            out
        }
        Coding::Zstd => zstd::bulk::compress(data, level as i32)?,
    };
    stats::count(coding);
    stats::input(data.len() as u64);
    stats::output(out.len() as u64);
    Ok(out)
}

/// brotli's window for a body of `len` bytes: the smallest that holds it
/// (10 to 24 bits), so a small file costs a small encoder.
fn window_for(len: usize) -> u32 {
    let bits = usize::BITS - len.max(1).saturating_sub(1).leading_zeros();
    bits.clamp(10, 24)
}
