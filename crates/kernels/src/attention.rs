//! Attention of one new position per row over a prefix cached once for every row and each row's own cached positions.

use crate::Error;
use rayon::prelude::*;

/// Sizes of one attention call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Rows of the batch, each with one new position.
    pub rows: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention: `heads / kv_heads` queries share one).
    pub kv_heads: usize,
    /// Head size.
    pub dim: usize,
}

/// A prefix every row continues: keys transposed (`kv_heads × dim × len`, so one query
/// component meets all positions contiguously) and values (`kv_heads × len × dim`).
#[derive(Debug, Clone, Copy)]
pub struct Shared<'a> {
    pub keys_t: &'a [f32],
    pub values: &'a [f32],
    pub len: usize,
}

/// Each row's own positions, new one included: keys and values `rows × kv_heads × len × dim`.
#[derive(Debug, Clone, Copy)]
pub struct Own<'a> {
    pub keys: &'a [f32],
    pub values: &'a [f32],
    pub len: usize,
}

/// `out = softmax(q·Kᵀ/√dim)·V` for queries `q` (`rows × heads × dim`, rotated) over the shared
/// prefix then the row's own positions, into `out` (`rows × heads × dim`). No mask: every
/// cached position precedes the new one.
///
/// # Errors
/// When a buffer's length does not fit `shape`, or heads are not a multiple of KV heads.
pub fn attend_one(
    shape: Shape,
    q: &[f32],
    shared: Option<Shared<'_>>,
    own: Own<'_>,
    out: &mut [f32],
) -> Result<(), Error> {
    let Shape { rows, heads, kv_heads, dim } = shape;
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(Error::Length("query heads per KV head", kv_heads, heads));
    }
    let want = rows * heads * dim;
    for (what, len) in [("queries", q.len()), ("output", out.len())] {
        if len != want {
            return Err(Error::Length(what, want, len));
        }
    }
    let own_len = rows * kv_heads * own.len * dim;
    for (what, len) in [("own keys", own.keys.len()), ("own values", own.values.len())] {
        if len != own_len {
            return Err(Error::Length(what, own_len, len));
        }
    }
    if let Some(s) = shared {
        let n = kv_heads * s.len * dim;
        for (what, len) in [("shared keys", s.keys_t.len()), ("shared values", s.values.len())] {
            if len != n {
                return Err(Error::Length(what, n, len));
            }
        }
    }
    let per_kv = heads / kv_heads;
    // Blocks of up to QUERIES queries that read the same KV head (every row's heads of it).
    let blocks: Vec<(usize, Vec<(usize, usize)>)> = (0..kv_heads)
        .flat_map(|g| {
            let queries: Vec<(usize, usize)> =
                (0..rows).flat_map(|row| (g * per_kv..(g + 1) * per_kv).map(move |head| (row, head))).collect();
            queries.chunks(QUERIES).map(|c| (g, c.to_vec())).collect::<Vec<_>>()
        })
        .collect();
    let simd = crate::qgemm::Kernel::best();
    let run = |(g, queries): &(usize, Vec<(usize, usize)>)| {
        let block = Block { g: *g, queries, shape, shared, own };
        match simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512 F and BW (`Kernel::best` checked them).
            crate::qgemm::Kernel::Avx512 => unsafe { block_avx512(&block, q) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 and FMA (`Kernel::best` checked them).
            crate::qgemm::Kernel::Avx2 => unsafe { block_avx2(&block, q) },
            _ => block.tiled::<Separate>(q),
        }
    };
    let results: Vec<Vec<f32>> =
        if blocks.len() > kv_heads { blocks.par_iter().map(run).collect() } else { blocks.iter().map(run).collect() };
    for ((_, queries), result) in blocks.iter().zip(results) {
        for (&(row, head), values) in queries.iter().zip(result.chunks_exact(dim)) {
            out[(row * heads + head) * dim..][..dim].copy_from_slice(values);
        }
    }
    Ok(())
}

/// Queries per block (at most): the shared prefix's keys and values are read once per block.
const QUERIES: usize = 8;
/// Keys (and value components) per step of the inner loops: one 512-bit register of f32.
const LANES: usize = 16;

/// `a·b + c`: fused where the CPU has FMA (a call to libm's `fmaf` elsewhere), else a
/// multiply and an add.
trait Madd {
    fn madd(a: f32, b: f32, c: f32) -> f32;
}

struct Fused;
struct Separate;

impl Madd for Fused {
    #[inline(always)]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

impl Madd for Separate {
    #[inline(always)]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// Queries `(row, head)` of KV head `g`, attended together.
struct Block<'a> {
    g: usize,
    queries: &'a [(usize, usize)],
    shape: Shape,
    shared: Option<Shared<'a>>,
    own: Own<'a>,
}

/// [`Block::attend`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_avx2(block: &Block<'_>, q: &[f32]) -> Vec<f32> {
    block.tiled::<Fused>(q)
}

/// [`Block::attend`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
fn block_avx512(block: &Block<'_>, q: &[f32]) -> Vec<f32> {
    block.tiled::<Fused>(q)
}

impl Block<'_> {
    /// [`Block::attend`] with the smallest tile of queries that holds the block.
    #[inline(always)]
    fn tiled<M: Madd>(&self, q: &[f32]) -> Vec<f32> {
        match self.queries.len() {
            5.. => self.attend::<M, 8>(q),
            3..=4 => self.attend::<M, 4>(q),
            2 => self.attend::<M, 2>(q),
            _ => self.attend::<M, 1>(q),
        }
    }

    /// The block's outputs, `queries × dim` (inlined into the SIMD variants, whose fixed-size
    /// loops the compiler turns into register tiles).
    #[inline(always)]
    fn attend<M: Madd, const Q: usize>(&self, q: &[f32]) -> Vec<f32> {
        let Shape { heads, dim, .. } = self.shape;
        #[allow(clippy::cast_precision_loss)]
        let scale = 1.0 / (dim as f32).sqrt();
        // Scaled queries, padded with zeros to a whole block.
        let mut qs = vec![0f32; Q * dim];
        for (dst, &(row, head)) in qs.chunks_exact_mut(dim).zip(self.queries) {
            for (d, v) in dst.iter_mut().zip(&q[(row * heads + head) * dim..][..dim]) {
                *d = v * scale;
            }
        }
        let n = self.shared.map_or(0, |s| s.len) + self.own.len;
        let mut scores = vec![0f32; Q * n];
        self.shared_scores::<M, Q>(&qs, &mut scores, n);
        for (qq, &(row, _)) in self.queries.iter().enumerate() {
            let p = n - self.own.len;
            let row_scores = &mut scores[qq * n..(qq + 1) * n];
            for (score, k) in row_scores[p..].iter_mut().zip(self.own_rows(self.own.keys, row)) {
                *score = qs[qq * dim..(qq + 1) * dim].iter().zip(k).map(|(a, b)| a * b).sum();
            }
            softmax(row_scores);
        }
        self.weighted_values::<M, Q>(&scores, n)
    }

    /// This block's KV head's positions of `row` in an own-cache buffer, one slice each.
    #[inline(always)]
    fn own_rows<'b>(&self, buf: &'b [f32], row: usize) -> std::slice::ChunksExact<'b, f32> {
        let dim = self.shape.dim;
        let base = (row * self.shape.kv_heads + self.g) * self.own.len * dim;
        buf[base..base + self.own.len * dim].chunks_exact(dim)
    }

    /// Scores against the shared prefix into `scores[q·n + j]`, `LANES` keys by `Q`
    /// queries at a time.
    #[inline(always)]
    fn shared_scores<M: Madd, const Q: usize>(&self, qs: &[f32], scores: &mut [f32], n: usize) {
        let Some(s) = self.shared else { return };
        let (dim, p) = (self.shape.dim, s.len);
        let keys = &s.keys_t[self.g * dim * p..(self.g + 1) * dim * p];
        for j0 in (0..p).step_by(LANES) {
            let w = LANES.min(p - j0);
            let mut acc = [[0f32; LANES]; Q];
            for i in 0..dim {
                let k = lanes(keys, i * p + j0, w);
                for (qq, acc) in acc.iter_mut().enumerate() {
                    let a = qs[qq * dim + i];
                    for (acc, k) in acc.iter_mut().zip(&k) {
                        *acc = M::madd(a, *k, *acc);
                    }
                }
            }
            for (qq, acc) in acc.iter().enumerate().take(self.queries.len()) {
                scores[qq * n + j0..qq * n + j0 + w].copy_from_slice(&acc[..w]);
            }
        }
    }

    /// `Σ_j score[q][j] · value[j]` over the shared prefix then the query's own positions.
    #[inline(always)]
    fn weighted_values<M: Madd, const Q: usize>(&self, scores: &[f32], n: usize) -> Vec<f32> {
        let dim = self.shape.dim;
        let p = n - self.own.len;
        let mut out = vec![0f32; self.queries.len() * dim];
        for d0 in (0..dim).step_by(LANES) {
            let w = LANES.min(dim - d0);
            let mut acc = [[0f32; LANES]; Q];
            if let Some(s) = self.shared {
                let values = &s.values[self.g * p * dim..(self.g + 1) * p * dim];
                for j in 0..p {
                    let v = lanes(values, j * dim + d0, w);
                    for (qq, acc) in acc.iter_mut().enumerate() {
                        let a = scores.get(qq * n + j).copied().unwrap_or(0.0);
                        for (acc, v) in acc.iter_mut().zip(&v) {
                            *acc = M::madd(a, *v, *acc);
                        }
                    }
                }
            }
            for (qq, &(row, _)) in self.queries.iter().enumerate() {
                for (j, v) in self.own_rows(self.own.values, row).enumerate() {
                    let a = scores[qq * n + p + j];
                    for (acc, v) in acc[qq][..w].iter_mut().zip(&v[d0..d0 + w]) {
                        *acc += a * v;
                    }
                }
                out[qq * dim + d0..qq * dim + d0 + w].copy_from_slice(&acc[qq][..w]);
            }
        }
        out
    }
}

/// `src[at..at + w]` padded with zeros to [`LANES`] values (a fixed-size copy when whole).
#[inline(always)]
fn lanes(src: &[f32], at: usize, w: usize) -> [f32; LANES] {
    if w == LANES {
        if let Ok(whole) = <[f32; LANES]>::try_from(&src[at..at + LANES]) {
            return whole;
        }
    }
    let mut out = [0f32; LANES];
    out[..w].copy_from_slice(&src[at..at + w]);
    out
}

#[inline(always)]
fn softmax(xs: &mut [f32]) {
    let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for x in xs.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    for x in xs.iter_mut() {
        *x /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain attention over explicit key and value lists.
    fn reference(q: &[f32], keys: &[Vec<f32>], values: &[Vec<f32>]) -> Vec<f32> {
        #[allow(clippy::cast_precision_loss)]
        let scale = 1.0 / (q.len() as f32).sqrt();
        let mut s: Vec<f32> = keys.iter().map(|k| q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale).collect();
        softmax(&mut s);
        (0..q.len()).map(|i| s.iter().zip(values).map(|(a, v)| a * v[i]).sum()).collect()
    }

    fn value(i: usize, salt: usize) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let v = ((i * 7919 + salt * 104_729) % 1000) as f32;
        v / 500.0 - 1.0
    }

    #[test]
    fn one_position_attends_over_the_shared_prefix_and_its_own_positions() {
        // Six queries per KV head (one block), and twenty (blocks of 8, 8 and 4) with a head
        // size that is not a whole number of lanes.
        check(Shape { rows: 3, heads: 4, kv_heads: 2, dim: 8 }, 5, 2);
        check(Shape { rows: 5, heads: 4, kv_heads: 1, dim: 24 }, 37, 3);
        check(Shape { rows: 1, heads: 3, kv_heads: 3, dim: 16 }, 0, 4);
    }

    fn check(shape: Shape, p: usize, s: usize) {
        let Shape { rows, heads, kv_heads: kv, dim } = shape;
        let per_kv = heads / kv;
        let q: Vec<f32> = (0..rows * heads * dim).map(|i| value(i, 1)).collect();
        // Shared keys as `kv × p × dim`, then transposed for the kernel.
        let sk: Vec<f32> = (0..kv * p * dim).map(|i| value(i, 2)).collect();
        let sv: Vec<f32> = (0..kv * p * dim).map(|i| value(i, 3)).collect();
        let mut skt = vec![0f32; sk.len()];
        for g in 0..kv {
            for j in 0..p {
                for i in 0..dim {
                    skt[(g * dim + i) * p + j] = sk[(g * p + j) * dim + i];
                }
            }
        }
        let ok: Vec<f32> = (0..rows * kv * s * dim).map(|i| value(i, 4)).collect();
        let ov: Vec<f32> = (0..rows * kv * s * dim).map(|i| value(i, 5)).collect();
        let mut out = vec![0f32; q.len()];
        let shared = (p > 0).then_some(Shared { keys_t: &skt, values: &sv, len: p });
        let own = Own { keys: &ok, values: &ov, len: s };
        attend_one(shape, &q, shared, own, &mut out).unwrap();
        for row in 0..rows {
            for head in 0..heads {
                let g = head / per_kv;
                let vecs = |shared: &[f32], own: &[f32]| -> Vec<Vec<f32>> {
                    let mut all: Vec<Vec<f32>> = (0..p).map(|j| shared[(g * p + j) * dim..][..dim].to_vec()).collect();
                    all.extend((0..s).map(|j| own[((row * kv + g) * s + j) * dim..][..dim].to_vec()));
                    all
                };
                let i = row * heads + head;
                let want = reference(&q[i * dim..][..dim], &vecs(&sk, &ok), &vecs(&sv, &ov));
                for (a, b) in out[i * dim..][..dim].iter().zip(&want) {
                    assert!((a - b).abs() < 1e-5, "{shape:?} row {row} head {head}: {a} vs {b}");
                }
            }
        }
        assert!(attend_one(shape, &q[1..], shared, own, &mut out).is_err());
    }
}
