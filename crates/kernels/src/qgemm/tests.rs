//! Kernels against an f32 reference on the dequantized weights, and against each other.

use super::*;

/// A deterministic stream of values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            #[allow(clippy::cast_precision_loss)]
            let v = (s >> 40) as f32 / (1u64 << 24) as f32;
            v * 2.0 - 1.0
        })
        .collect()
}

/// GGUF bytes of `n × k` random blocks in `format` (f16 scales that are exact small powers of two).
fn gguf_bytes(format: Format, n: usize, k: usize, seed: u64) -> Vec<u8> {
    let raw = values(n * k, seed);
    let mut out = Vec::new();
    for (b, block) in raw.chunks_exact(BLOCK).enumerate() {
        let d: u16 = if b % 2 == 0 { 0x2000 } else { 0x1c00 }; // 2^-7, 2^-8
        out.extend_from_slice(&d.to_le_bytes());
        match format {
            Format::Q4_1 => {
                out.extend_from_slice(&0xa000u16.to_le_bytes()); // -2^-7·... a negative minimum
                for j in 0..16 {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let (lo, hi) = (((block[j] + 1.0) * 7.9) as u8, ((block[j + 16] + 1.0) * 7.9) as u8);
                    out.push((lo & 0x0f) | (hi << 4));
                }
            }
            Format::Q8_0 => {
                #[allow(clippy::cast_possible_truncation)]
                out.extend(block.iter().map(|v| ((v * 127.0) as i8).to_le_bytes()[0]));
            }
        }
    }
    out
}

fn reference(w: &Matrix, x: &[f32], m: usize) -> Vec<f32> {
    let dense = w.dequantize();
    let (n, k) = (w.rows(), w.cols());
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for o in 0..n {
            out[r * n + o] = (0..k).map(|i| x[r * k + i] * dense[o * k + i]).sum();
        }
    }
    out
}

fn check(format: Format, n: usize, k: usize, m: usize) {
    let w = Matrix::from_gguf(format, n, k, &gguf_bytes(format, n, k, 7)).unwrap();
    let x = values(m * k, 11);
    let want = reference(&w, &x, m);
    let scale = want.iter().fold(0f32, |a, v| a.max(v.abs()));
    for kernel in Kernel::available() {
        let mut got = vec![0f32; m * n];
        w.matmul_with(&x, m, &mut got, kernel).unwrap();
        let err = got.iter().zip(&want).fold(0f32, |a, (g, v)| a.max((g - v).abs()));
        assert!(err <= 0.02 * scale, "{format:?} {kernel:?} {n}x{k} m={m}: max error {err} of {scale}");
    }
    let mut a = vec![0f32; m * n];
    w.matmul_with(&x, m, &mut a, Kernel::Scalar).unwrap();
    for kernel in Kernel::available() {
        let mut b = vec![0f32; m * n];
        w.matmul_with(&x, m, &mut b, kernel).unwrap();
        for (u, v) in a.iter().zip(&b) {
            assert!((u - v).abs() <= 1e-4 * scale, "scalar {u} vs {kernel:?} {v}");
        }
    }
}

#[test]
fn q4_1_matches_the_dequantized_product_for_every_batch_size() {
    for m in [1, 2, 3, 5, 8, 13, 16] {
        check(Format::Q4_1, 48, 96, m); // three blocks a row: the AVX-512 kernel leaves it to AVX2
        check(Format::Q4_1, 40, 128, m);
    }
}

#[test]
fn q8_0_matches_the_dequantized_product_for_every_batch_size() {
    for m in [1, 4, 7, 9, 16] {
        check(Format::Q8_0, 40, 64, m);
    }
}

#[test]
fn large_matrices_split_across_threads_give_the_same_rows() {
    check(Format::Q4_1, 1536, 576, 16);
}

#[test]
fn dequantize_reads_gguf_block_layout() {
    // One Q4_1 block: d = 1.0 (0x3c00), m = -8.0 (0xc800), values 0..15 low, 15..0 high.
    let mut bytes = vec![0x00, 0x3c, 0x00, 0xc8];
    bytes.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let w = Matrix::from_gguf(Format::Q4_1, 1, 32, &bytes).unwrap();
    let d = w.dequantize();
    assert_eq!(d[0], -8.0);
    assert_eq!(d[15], 7.0);
    assert_eq!(d[16], 7.0);
    assert_eq!(d[31], -8.0);
}

#[test]
fn bad_shapes_are_errors() {
    assert_eq!(Matrix::from_gguf(Format::Q8_0, 1, 30, &[]).unwrap_err(), Error::Width(30));
    assert!(matches!(Matrix::from_gguf(Format::Q8_0, 1, 32, &[0; 33]), Err(Error::Length(..))));
    let w = Matrix::from_gguf(Format::Q8_0, 1, 32, &[0; 34]).unwrap();
    assert!(w.matmul(&[0.0; 31], 1, &mut [0.0]).is_err());
    assert!(w.matmul(&[0.0; 32], 1, &mut [0.0; 2]).is_err());
}

#[test]
fn half_floats_convert() {
    assert_eq!(f16_to_f32(0x3c00), 1.0);
    assert_eq!(f16_to_f32(0xc000), -2.0);
    assert_eq!(f16_to_f32(0x0001), 1.0 / 16_777_216.0);
    assert_eq!(f16_to_f32(0x7bff), 65504.0);
    assert!(f16_to_f32(0x7c00).is_infinite());
}

#[test]
fn several_matrices_of_one_input_give_what_each_gives_alone() {
    let (q, v) = (
        Matrix::from_gguf(Format::Q4_1, 64, 96, &gguf_bytes(Format::Q4_1, 64, 96, 3)).unwrap(),
        Matrix::from_gguf(Format::Q8_0, 24, 96, &gguf_bytes(Format::Q8_0, 24, 96, 4)).unwrap(),
    );
    let m = 5;
    let x = values(m * 96, 5);
    let (mut a, mut b) = (vec![0f32; m * 64], vec![0f32; m * 24]);
    matmul_many(&[&q, &v], &x, m, &mut [&mut a, &mut b], Kernel::best()).unwrap();
    let (mut a1, mut b1) = (vec![0f32; m * 64], vec![0f32; m * 24]);
    q.matmul(&x, m, &mut a1).unwrap();
    v.matmul(&x, m, &mut b1).unwrap();
    assert_eq!((a, b), (a1, b1));
    let narrow = Matrix::from_gguf(Format::Q8_0, 1, 64, &[0; 68]).unwrap();
    assert!(
        matmul_many(&[&q, &narrow], &x, m, &mut [&mut vec![0f32; m * 64], &mut vec![0f32; m]], Kernel::best()).is_err()
    );
}
