//! Portable inner loops: one output row against every activation row, integer dot products per block.

use super::act::Quantized;
use super::{Format, Matrix, BLOCK};

/// Output row `o` of `w` for every activation row of `a` into `dst`.
pub(crate) fn row(w: &Matrix, o: usize, a: &Quantized, dst: &mut [f32]) {
    let nb = w.blocks();
    for (r, out) in dst.iter_mut().enumerate() {
        let mut acc = 0f32;
        for b in 0..nb {
            let wi = o * nb + b;
            let ai = r * nb + b;
            let aq = &a.q[ai * BLOCK..(ai + 1) * BLOCK];
            let dot: i32 = match w.format {
                Format::Q4_1 => {
                    let qs = &w.qs[wi * 16..wi * 16 + 16];
                    let lo: i32 = qs.iter().zip(&aq[..16]).map(|(q, v)| i32::from(q & 0x0f) * i32::from(*v)).sum();
                    let hi: i32 = qs.iter().zip(&aq[16..]).map(|(q, v)| i32::from(q >> 4) * i32::from(*v)).sum();
                    lo + hi
                }
                Format::Q8_0 => {
                    let qs = &w.qs[wi * BLOCK..(wi + 1) * BLOCK];
                    qs.iter().zip(aq).map(|(q, v)| i32::from(*q as i8) * i32::from(*v)).sum()
                }
            };
            #[allow(clippy::cast_precision_loss)]
            let dot = dot as f32;
            acc += w.scales[wi] * a.d[ai] * dot;
            if w.format == Format::Q4_1 {
                acc += w.mins[wi] * a.s[ai];
            }
        }
        *out = acc;
    }
}
