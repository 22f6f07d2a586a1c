//! Batched matmul on 4- and 8-bit GGUF weights (Q4_1, Q8_0): each weight block is unpacked once and applied to every row of a batch.

// A language model's generation step multiplies a few rows of activations (one per sampled
// sequence) by every weight matrix. Dequantizing the weights to f32 reads 4 bytes per
// parameter per step; multiplying one row at a time re-reads and re-unpacks the 4-bit blocks
// for every row. Here the activations are quantized to 8 bits per 32-value block (as ggml's
// `Q8_1`), and each weight block, once loaded, is multiplied with the same block of every
// row (AVX2 `maddubs` on x86-64, a portable loop elsewhere), so a step reads each weight byte
// once whatever the batch size. Output rows are split across rayon's threads.

mod act;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod scalar;

use rayon::prelude::*;

/// Values per quantization block (both formats).
pub const BLOCK: usize = 32;

/// How the weights are stored, as in GGUF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// 32 unsigned 4-bit values with an f16 scale and an f16 minimum: `w = d·q + m`.
    Q4_1,
    /// 32 signed 8-bit values with an f16 scale: `w = d·q`.
    Q8_0,
}

impl Format {
    /// Bytes of one GGUF block.
    #[must_use]
    pub fn block_bytes(self) -> usize {
        match self {
            Format::Q4_1 => 20,
            Format::Q8_0 => 34,
        }
    }
}

pub use crate::Error;

/// A quantized weight matrix of `n` output rows by `k` inputs, unpacked from GGUF blocks into
/// separate scale, minimum and value arrays.
#[derive(Debug, Clone)]
pub struct Matrix {
    format: Format,
    n: usize,
    k: usize,
    /// `n · k / 32` block scales.
    scales: Vec<f32>,
    /// `n · k / 32` block minimums (Q4_1; empty for Q8_0).
    mins: Vec<f32>,
    /// Q8_0: `-128 · d · Σ q` per block, which corrects a product with activations offset to
    /// unsigned (`q + 128`) as the AVX-512 kernel multiplies them. Empty for Q4_1.
    corr: Vec<f32>,
    /// Packed values: 16 bytes per Q4_1 block (low nibbles are values 0–15, high 16–31), 32
    /// per Q8_0 block (two's complement).
    qs: Vec<u8>,
}

impl Matrix {
    /// Unpack `n × k` weights from the bytes of a GGUF tensor of this format (row-major blocks).
    ///
    /// # Errors
    /// When `k` is not a multiple of [`BLOCK`] or `bytes` has the wrong length.
    pub fn from_gguf(format: Format, n: usize, k: usize, bytes: &[u8]) -> Result<Matrix, Error> {
        if !k.is_multiple_of(BLOCK) {
            return Err(Error::Width(k));
        }
        let blocks = n * k / BLOCK;
        let size = format.block_bytes();
        if bytes.len() != blocks * size {
            return Err(Error::Length("GGUF bytes", blocks * size, bytes.len()));
        }
        let mut m = Matrix {
            format,
            n,
            k,
            scales: Vec::with_capacity(blocks),
            mins: Vec::new(),
            corr: Vec::new(),
            qs: Vec::new(),
        };
        for block in bytes.chunks_exact(size) {
            let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
            m.scales.push(d);
            match format {
                Format::Q4_1 => {
                    m.mins.push(f16_to_f32(u16::from_le_bytes([block[2], block[3]])));
                    m.qs.extend_from_slice(&block[4..]);
                }
                Format::Q8_0 => {
                    let sum: i32 = block[2..].iter().map(|&q| i32::from(q as i8)).sum();
                    #[allow(clippy::cast_precision_loss)]
                    m.corr.push(-128.0 * d * sum as f32);
                    m.qs.extend_from_slice(&block[2..]);
                }
            }
        }
        Ok(m)
    }

    #[must_use]
    pub fn format(&self) -> Format {
        self.format
    }

    /// Output rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.n
    }

    /// Inputs per row.
    #[must_use]
    pub fn cols(&self) -> usize {
        self.k
    }

    /// Blocks per row.
    fn blocks(&self) -> usize {
        self.k / BLOCK
    }

    /// The weights as f32, row-major `n × k`.
    #[must_use]
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.n * self.k);
        for (b, &d) in self.scales.iter().enumerate() {
            match self.format {
                Format::Q4_1 => {
                    let qs = &self.qs[b * 16..b * 16 + 16];
                    let m = self.mins[b];
                    out.extend(qs.iter().map(|q| f32::from(q & 0x0f) * d + m));
                    out.extend(qs.iter().map(|q| f32::from(q >> 4) * d + m));
                }
                Format::Q8_0 => {
                    out.extend(self.qs[b * 32..b * 32 + 32].iter().map(|&q| f32::from(q as i8) * d));
                }
            }
        }
        out
    }

    /// `out = x · Wᵀ` for `m` rows of `x` (`m × k`, row-major) into `out` (`m × n`).
    ///
    /// # Errors
    /// When `x` or `out` has the wrong length.
    pub fn matmul(&self, x: &[f32], m: usize, out: &mut [f32]) -> Result<(), Error> {
        matmul_many(&[self], x, m, &mut [out], Kernel::best())
    }

    /// [`Matrix::matmul`] with a chosen kernel (tests compare them).
    ///
    /// # Errors
    /// As [`Matrix::matmul`].
    pub fn matmul_with(&self, x: &[f32], m: usize, out: &mut [f32], kernel: Kernel) -> Result<(), Error> {
        matmul_many(&[self], x, m, &mut [out], kernel)
    }
}

/// `outs[i] = x · Wᵢᵀ` for several matrices with the same input width (a layer's query, key
/// and value projections): the activations are quantized once and all output rows are shared
/// out to the threads in one go.
///
/// # Errors
/// When the widths differ, or `x` or an output has the wrong length.
pub fn matmul_many(ws: &[&Matrix], x: &[f32], m: usize, outs: &mut [&mut [f32]], kernel: Kernel) -> Result<(), Error> {
    let Some(k) = ws.first().map(|w| w.k) else { return Ok(()) };
    if x.len() != m * k {
        return Err(Error::Length("input", m * k, x.len()));
    }
    if outs.len() != ws.len() {
        return Err(Error::Length("outputs", ws.len(), outs.len()));
    }
    for (w, out) in ws.iter().zip(outs.iter()) {
        if w.k != k {
            return Err(Error::Length("input width", k, w.k));
        }
        if out.len() != m * w.n {
            return Err(Error::Length("output", m * w.n, out.len()));
        }
    }
    if m == 0 {
        return Ok(());
    }
    let a = act::quantize(x, m, k);
    let expanded = (kernel == Kernel::Avx512).then(|| act::Expanded::new(&a));
    // Results by output row first (`t[o·m + r]`), so each task writes one contiguous run.
    let mut ts: Vec<Vec<f32>> = ws.iter().map(|w| vec![0f32; w.n * m]).collect();
    let rows: usize = ws.iter().map(|w| w.n).sum();
    // Below 64k multiply-adds waking a second thread costs more than it saves.
    let parallel = rows * k * m >= 1 << 16;
    let chunk = if parallel { (rows / (rayon::current_num_threads() * 4)).max(8) } else { rows };
    let mut jobs: Vec<(&Matrix, usize, &mut [f32])> = Vec::new();
    for (w, t) in ws.iter().zip(ts.iter_mut()) {
        for (c, dst) in t.chunks_mut(chunk * m).enumerate() {
            jobs.push((w, c * chunk, dst));
        }
    }
    let run = |(w, o0, dst): (&Matrix, usize, &mut [f32])| {
        for (i, row) in dst.chunks_exact_mut(m).enumerate() {
            kernel.row(w, o0 + i, &a, expanded.as_ref(), row);
        }
    };
    if parallel {
        jobs.into_par_iter().for_each(run);
    } else {
        jobs.into_iter().for_each(run);
    }
    for ((w, t), out) in ws.iter().zip(&ts).zip(outs.iter_mut()) {
        for (o, row) in t.chunks_exact(m).enumerate() {
            for (r, v) in row.iter().enumerate() {
                out[r * w.n + o] = *v;
            }
        }
    }
    Ok(())
}

static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();

/// Which inner loop runs (ordered: a later kernel needs every feature of an earlier one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// Plain Rust, any CPU.
    Scalar,
    /// AVX2 and FMA (x86-64).
    Avx2,
    /// AVX-512 with VNNI (x86-64): two blocks per register; matrices with an odd number of
    /// blocks per row run the AVX2 loop.
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    #[must_use]
    pub fn best() -> Kernel {
        *BEST.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx512f") && has!("avx512bw") && has!("avx512vnni") && has!("avx2") && has!("fma") {
                    return Kernel::Avx512;
                }
                if has!("avx2") && has!("fma") {
                    return Kernel::Avx2;
                }
            }
            Kernel::Scalar
        })
    }

    /// The kernels this CPU runs, slowest first.
    #[must_use]
    pub fn available() -> Vec<Kernel> {
        let all = [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512];
        all.into_iter().filter(|&k| k <= Kernel::best()).collect()
    }

    /// Output row `o` for every activation row into `dst` (`m` values).
    fn row(self, w: &Matrix, o: usize, a: &act::Quantized, e: Option<&act::Expanded>, dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        match (self, e) {
            (Kernel::Avx512, Some(e)) if Kernel::best() == Kernel::Avx512 && w.blocks().is_multiple_of(2) => {
                // SAFETY: the CPU has AVX-512 F, BW and VNNI (checked by `best`).
                return unsafe { avx512::row(w, o, a, e, dst) };
            }
            (Kernel::Avx2 | Kernel::Avx512, _) if Kernel::best() >= Kernel::Avx2 => {
                // SAFETY: the CPU has AVX2 and FMA (checked by `best`).
                return unsafe { avx2::row(w, o, a, dst) };
            }
            _ => {}
        }
        scalar::row(w, o, a, dst);
    }
}

/// IEEE half precision bits to f32.
#[must_use]
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exp = u32::from((bits >> 10) & 0x1f);
    let mant = u32::from(bits & 0x3ff);
    match exp {
        0 => {
            #[allow(clippy::cast_precision_loss)]
            let v = mant as f32 * (1.0 / 16_777_216.0);
            if sign == 0 {
                v
            } else {
                -v
            }
        }
        31 => f32::from_bits(sign | 0x7f80_0000 | (mant << 13)),
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (mant << 13)),
    }
}

#[cfg(test)]
mod tests;
