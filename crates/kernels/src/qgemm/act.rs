//! Activation rows quantized to 8 bits per 32-value block, with each block's scale and scaled sum.

use super::BLOCK;

/// `m` rows of `k` activations: `q` holds `m · k` values (row-major blocks), `d[i]` and
/// `s[i] = d[i] · Σ q` belong to block `i = row · (k / 32) + b`.
pub(crate) struct Quantized {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub s: Vec<f32>,
}

/// Quantize `m × k` values (`k` a multiple of [`BLOCK`]) with a scale per block that maps its
/// largest magnitude to 127.
pub(crate) fn quantize(x: &[f32], m: usize, k: usize) -> Quantized {
    let blocks = k / BLOCK;
    let mut out = Quantized {
        q: Vec::with_capacity(m * k),
        d: Vec::with_capacity(m * blocks),
        s: Vec::with_capacity(m * blocks),
    };
    for block in x.chunks_exact(BLOCK) {
        let amax = block.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        let mut sum = 0i32;
        for v in block {
            #[allow(clippy::cast_possible_truncation)]
            let q = (v * id).round().clamp(-127.0, 127.0) as i8;
            sum += i32::from(q);
            out.q.push(q);
        }
        out.d.push(d);
        #[allow(clippy::cast_precision_loss)]
        out.s.push(d * sum as f32);
    }
    out
}

/// What the AVX-512 kernel reads beside [`Quantized`]: per block, eight copies of its scale
/// `d`, of `s / 8` and of `d / 8` (a register of two blocks holds eight lanes of each, whose sum
/// is the block's term), and the values offset to unsigned (`q + 128`, for Q8_0 weights).
pub(crate) struct Expanded {
    pub d8: Vec<f32>,
    s8: Vec<f32>,
    d8_8: Vec<f32>,
    pub qu: Vec<u8>,
}

impl Expanded {
    pub(crate) fn new(a: &Quantized) -> Expanded {
        let lanes = |f: &dyn Fn(usize) -> f32| (0..a.d.len()).flat_map(|i| [f(i); 8]).collect::<Vec<f32>>();
        Expanded {
            d8: lanes(&|i| a.d[i]),
            s8: lanes(&|i| a.s[i] / 8.0),
            d8_8: lanes(&|i| a.d[i] / 8.0),
            qu: a.q.iter().map(|&q| q.to_le_bytes()[0] ^ 0x80).collect(),
        }
    }

    /// The factor of a weight block's second term: Q4_1's minimum times the block's sum
    /// (`s`), or Q8_0's offset correction times its scale (`d`); eight lanes each.
    pub(crate) fn second8(&self, format: super::Format) -> &[f32] {
        match format {
            super::Format::Q4_1 => &self.s8,
            super::Format::Q8_0 => &self.d8_8,
        }
    }
}
