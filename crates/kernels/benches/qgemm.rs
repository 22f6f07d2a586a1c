//! Batched quantized matmul on SmolLM2-135M's shapes: GMAC/s per kernel and batch size, against the portable loop in the same run.

use deepdebug_kernels::qgemm::{Format, Kernel, Matrix, BLOCK};
use std::time::Instant;

/// GGUF bytes of `n × k` blocks with varied values (scale 2^-7, a negative minimum for Q4_1).
fn gguf(format: Format, n: usize, k: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for b in 0..n * k / BLOCK {
        out.extend_from_slice(&0x2000u16.to_le_bytes());
        match format {
            Format::Q4_1 => {
                out.extend_from_slice(&0xa000u16.to_le_bytes());
                out.extend((0..16).map(|j| ((b * 7 + j * 13) % 256) as u8));
            }
            Format::Q8_0 => out.extend((0..32).map(|j| ((b * 5 + j * 11) % 256) as u8)),
        }
    }
    out
}

/// Multiply-adds per second of `w` on `m` rows with `kernel`, best of a few repeats.
fn gmacs(w: &Matrix, m: usize, kernel: Kernel) -> f64 {
    let x: Vec<f32> = (0..m * w.cols()).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
    let mut out = vec![0f32; m * w.rows()];
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..4 {
            w.matmul_with(&x, m, &mut out, kernel).expect("shapes match");
        }
        best = best.min(start.elapsed().as_secs_f64() / 4.0);
    }
    (w.rows() * w.cols() * m) as f64 / best / 1e9
}

fn main() {
    let threads = rayon::current_num_threads();
    println!("kernels on this CPU: {:?} ({threads} threads)", Kernel::available());
    let shapes = [("q4_1 gate 1536x576", Format::Q4_1, 1536, 576), ("q8_0 output 49152x576", Format::Q8_0, 49152, 576)];
    for (name, format, n, k) in shapes {
        let w = Matrix::from_gguf(format, n, k, &gguf(format, n, k)).expect("a well-formed matrix");
        for m in [1, 4, 16] {
            let scalar = gmacs(&w, m, Kernel::Scalar);
            let best = gmacs(&w, m, Kernel::best());
            println!(
                "{name:<22} m={m:<3} scalar {scalar:>6.2} GMAC/s  {:?} {best:>6.2} GMAC/s  ({:.1}x)",
                Kernel::best(),
                best / scalar
            );
        }
    }
}
