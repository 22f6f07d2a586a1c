//! AVX2 inner loops: a weight block is loaded and unpacked once, then multiplied (`maddubs`) with that block of up to eight activation rows.

use super::act::Quantized;
use super::{Format, Matrix, BLOCK};
use std::arch::x86_64::{
    __m128i, __m256, __m256i, _mm256_and_si256, _mm256_castps256_ps128, _mm256_cvtepi32_ps, _mm256_extractf128_ps,
    _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16,
    _mm256_set1_epi8, _mm256_set1_ps, _mm256_set_m128i, _mm256_setzero_ps, _mm256_sign_epi8, _mm_add_ps, _mm_add_ss,
    _mm_cvtss_f32, _mm_loadu_si128, _mm_movehdup_ps, _mm_movehl_ps, _mm_srli_epi16,
};

/// Output row `o` of `w` for every activation row of `a` into `dst`, eight rows at a time.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn row(w: &Matrix, o: usize, a: &Quantized, dst: &mut [f32]) {
    let mut r = 0;
    while r < dst.len() {
        let left = dst.len() - r;
        let out = &mut dst[r..];
        // SAFETY (all four): AVX2 and FMA are enabled in this function's context.
        match left {
            8.. => unsafe { group::<8>(w, o, a, r, out) },
            4..=7 => unsafe { group::<4>(w, o, a, r, out) },
            2..=3 => unsafe { group::<2>(w, o, a, r, out) },
            _ => unsafe { group::<1>(w, o, a, r, out) },
        }
        r += match left {
            8.. => 8,
            4..=7 => 4,
            2..=3 => 2,
            _ => 1,
        };
    }
}

/// Output row `o` for activation rows `r0..r0 + R` into `out[..R]`.
#[target_feature(enable = "avx2,fma")]
unsafe fn group<const R: usize>(w: &Matrix, o: usize, a: &Quantized, r0: usize, out: &mut [f32]) {
    let nb = w.blocks();
    assert!(out.len() >= R && (r0 + R) * nb <= a.d.len() && (o + 1) * nb <= w.scales.len());
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); R];
    for b in 0..nb {
        let wi = o * nb + b;
        let dw = w.scales[wi];
        // Unsigned weights (Q4_1 nibbles, or Q8_0 magnitudes) for `maddubs`; for Q8_0 the
        // weights' signs move onto the activations.
        let (wu, signs) = match w.format {
            Format::Q4_1 => {
                // SAFETY: block `wi` has 16 bytes at `wi · 16` (checked by the assert on scales).
                let packed = unsafe { _mm_loadu_si128(w.qs.as_ptr().add(wi * 16).cast::<__m128i>()) };
                let both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
                (_mm256_and_si256(both, _mm256_set1_epi8(0x0f)), None)
            }
            Format::Q8_0 => {
                // SAFETY: block `wi` has 32 bytes at `wi · 32`.
                let v = unsafe { _mm256_loadu_si256(w.qs.as_ptr().add(wi * BLOCK).cast::<__m256i>()) };
                (_mm256_sign_epi8(v, v), Some(v))
            }
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let ai = (r0 + r) * nb + b;
            // SAFETY: activation block `ai` has 32 values (checked by the assert on `a.d`).
            let av = unsafe { _mm256_loadu_si256(a.q.as_ptr().add(ai * BLOCK).cast::<__m256i>()) };
            let av = match signs {
                Some(s) => _mm256_sign_epi8(av, s),
                None => av,
            };
            let dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu, av), ones);
            *acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d[ai]), _mm256_cvtepi32_ps(dot), *acc);
        }
    }
    for r in 0..R {
        // Q4_1's minimums: `Σ_b m_b · s_b`, a float dot product kept out of the integer loop.
        let mins = match w.format {
            Format::Q4_1 => fdot(&w.mins[o * nb..(o + 1) * nb], &a.s[(r0 + r) * nb..(r0 + r + 1) * nb]),
            Format::Q8_0 => 0.0,
        };
        out[r] = hsum(acc[r]) + mins;
    }
}

/// `Σ x_i · y_i` of two slices of one length, eight lanes at a time.
#[target_feature(enable = "avx2,fma")]
fn fdot(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` values are left in both slices.
        let (xv, yv) = unsafe { (_mm256_loadu_ps(x.as_ptr().add(i)), _mm256_loadu_ps(y.as_ptr().add(i))) };
        acc = _mm256_fmadd_ps(xv, yv, acc);
        i += 8;
    }
    hsum(acc) + x[i..n].iter().zip(&y[i..n]).map(|(a, b)| a * b).sum::<f32>()
}

#[target_feature(enable = "avx2,fma")]
fn hsum(x: __m256) -> f32 {
    let res = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    let res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    let res = _mm_add_ss(res, _mm_movehdup_ps(res));
    _mm_cvtss_f32(res)
}
