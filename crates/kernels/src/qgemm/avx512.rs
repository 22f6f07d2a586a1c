//! AVX-512 VNNI inner loops: two blocks per 512-bit register, `vpdpbusd` for the 8-bit products, block scales and minimums applied as vectors.

use super::act::{Expanded, Quantized};
use super::{Format, Matrix, BLOCK};
use std::arch::x86_64::{
    __m256i, __m512, _mm256_and_si256, _mm256_castps_si256, _mm256_loadu_si256, _mm256_set1_epi8, _mm256_set1_ps,
    _mm256_srli_epi16, _mm512_castps_si512, _mm512_castsi256_si512, _mm512_castsi512_ps, _mm512_cvtepi32_ps,
    _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_inserti64x4, _mm512_loadu_ps, _mm512_loadu_si512, _mm512_mul_ps,
    _mm512_reduce_add_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512, _mm512_shuffle_i64x2,
};

/// Output row `o` of `w` for every activation row of `a` into `dst`, eight rows at a time.
/// `w` has an even number of blocks per row.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn row(w: &Matrix, o: usize, a: &Quantized, e: &Expanded, dst: &mut [f32]) {
    let mut r = 0;
    while r < dst.len() {
        let left = dst.len() - r;
        let out = &mut dst[r..];
        // SAFETY (all four): the features are enabled in this function's context.
        let step = match left {
            8.. => unsafe { group::<8>(w, o, a, e, r, out) },
            4..=7 => unsafe { group::<4>(w, o, a, e, r, out) },
            2..=3 => unsafe { group::<2>(w, o, a, e, r, out) },
            _ => unsafe { group::<1>(w, o, a, e, r, out) },
        };
        r += step;
    }
}

/// `[x; 8]` then `[y; 8]`.
#[target_feature(enable = "avx512f")]
fn pair(x: f32, y: f32) -> __m512 {
    let high = _mm256_castps_si256(_mm256_set1_ps(y));
    _mm512_castsi512_ps(_mm512_inserti64x4::<1>(_mm512_castps_si512(_mm512_set1_ps(x)), high))
}

/// Output row `o` for activation rows `r0..r0 + R` into `out[..R]`; returns `R`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn group<const R: usize>(
    w: &Matrix,
    o: usize,
    a: &Quantized,
    e: &Expanded,
    r0: usize,
    out: &mut [f32],
) -> usize {
    let nb = w.blocks();
    assert!(nb.is_multiple_of(2) && out.len() >= R && (r0 + R) * nb <= a.d.len() && (o + 1) * nb <= w.scales.len());
    assert!(e.d8.len() == a.d.len() * 8 && e.second8(w.format).len() == a.d.len() * 8);
    let zero = _mm512_setzero_si512();
    let mut acc = [_mm512_setzero_ps(); R];
    let second8 = e.second8(w.format);
    for p in (0..nb).step_by(2) {
        let wi = o * nb + p;
        let scale = pair(w.scales[wi], w.scales[wi + 1]);
        let (wv, second) = match w.format {
            Format::Q4_1 => {
                // SAFETY: blocks `wi` and `wi + 1` have 16 bytes each at `wi · 16`.
                let packed = unsafe { _mm256_loadu_si256(w.qs.as_ptr().add(wi * 16).cast::<__m256i>()) };
                let mask = _mm256_set1_epi8(0x0f);
                let lo = _mm256_and_si256(packed, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), mask);
                // [lo b, lo b+1, hi b, hi b+1] → [lo b, hi b, lo b+1, hi b+1]: values 0–31 of
                // each block in order, as the activations lie.
                let both = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                (_mm512_shuffle_i64x2::<0b11_01_10_00>(both, both), pair(w.mins[wi], w.mins[wi + 1]))
            }
            // SAFETY: blocks `wi` and `wi + 1` have 32 bytes each at `wi · 32`.
            Format::Q8_0 => unsafe {
                (_mm512_loadu_si512(w.qs.as_ptr().add(wi * BLOCK).cast()), pair(w.corr[wi], w.corr[wi + 1]))
            },
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let ai = (r0 + r) * nb + p;
            // SAFETY: activation blocks `ai`, `ai + 1` exist (asserted above), 32 values and 8
            // expanded scales each.
            unsafe {
                let dot = match w.format {
                    Format::Q4_1 => {
                        _mm512_dpbusd_epi32(zero, wv, _mm512_loadu_si512(a.q.as_ptr().add(ai * BLOCK).cast()))
                    }
                    Format::Q8_0 => {
                        _mm512_dpbusd_epi32(zero, _mm512_loadu_si512(e.qu.as_ptr().add(ai * BLOCK).cast()), wv)
                    }
                };
                let da = _mm512_loadu_ps(e.d8.as_ptr().add(ai * 8));
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(scale, da), *acc);
                *acc = _mm512_fmadd_ps(second, _mm512_loadu_ps(second8.as_ptr().add(ai * 8)), *acc);
            }
        }
    }
    for (o, acc) in out.iter_mut().zip(acc) {
        *o = _mm512_reduce_add_ps(acc);
    }
    R
}
