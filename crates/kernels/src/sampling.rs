//! Sampling helpers over a vocabulary: log-softmax of logit rows in parallel, and nucleus (top-p) selection without sorting the whole vocabulary.

use rayon::prelude::*;

/// The most likely tokens ordered first; the whole vocabulary is sorted only when their mass
/// stays below `top_p` (a flat distribution).
const FIRST_CUT: usize = 256;

/// The shortest run of most likely tokens (by descending probability, ties by index, as a
/// stable sort orders them) whose mass, summed in that order, reaches `top_p`.
pub fn nucleus(prs: &[f32], top_p: f32) -> Vec<usize> {
    let order = |&i: &usize, &j: &usize| prs[j].total_cmp(&prs[i]).then(i.cmp(&j));
    let mut indices: Vec<usize> = (0..prs.len()).collect();
    if prs.len() > FIRST_CUT {
        indices.select_nth_unstable_by(FIRST_CUT - 1, order);
        let head = &mut indices[..FIRST_CUT];
        head.sort_unstable_by(order);
        if let Some(n) = reach(prs, head, top_p) {
            indices.truncate(n);
            return indices;
        }
    }
    indices.sort_unstable_by(order);
    let n = reach(prs, &indices, top_p).unwrap_or(indices.len());
    indices.truncate(n);
    indices
}

/// How many of `ordered` are kept: up to and including the one whose mass makes the running
/// sum reach `top_p`; `None` when all of them stay below it.
fn reach(prs: &[f32], ordered: &[usize], top_p: f32) -> Option<usize> {
    let mut cumsum = 0f32;
    for (n, &i) in ordered.iter().enumerate() {
        if cumsum >= top_p {
            return Some(n);
        }
        cumsum += prs[i];
    }
    None
}

/// Each row of `logits` (rows of `vocab` values) replaced by its log-softmax, the rows in
/// parallel: `x - max - ln Σ exp(x - max)`.
pub fn log_softmax_rows(logits: &mut [f32], vocab: usize) {
    logits.par_chunks_mut(vocab.max(1)).for_each(log_softmax);
}

/// `row` replaced by its log-softmax.
pub fn log_softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = row.iter().map(|&x| (x - max).exp()).sum();
    let lse = max + sum.ln();
    for x in row.iter_mut() {
        *x -= lse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_rows_are_normalized_log_probabilities_row_by_row() {
        let mut rows: Vec<f32> = (0..3000).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        let copy = rows.clone();
        log_softmax_rows(&mut rows, 1000);
        for (got, x) in rows.chunks(1000).zip(copy.chunks(1000)) {
            let total: f64 = got.iter().map(|&v| f64::from(v).exp()).sum();
            assert!((total - 1.0).abs() < 1e-4, "{total}");
            let lse = x.iter().map(|&v| f64::from(v).exp()).sum::<f64>().ln();
            assert!((f64::from(got[5]) - (f64::from(x[5]) - lse)).abs() < 1e-4);
        }
        let mut equal = vec![1f32; 4];
        log_softmax(&mut equal);
        assert!(equal.iter().all(|&v| (f64::from(v) + 4f64.ln()).abs() < 1e-6));
    }

    #[test]
    fn the_nucleus_is_the_most_likely_run_reaching_top_p_ties_by_index() {
        let prs = [0.1f32, 0.4, 0.1, 0.3, 0.1];
        assert_eq!(nucleus(&prs, 0.5), vec![1, 3]);
        assert_eq!(nucleus(&prs, 0.75), vec![1, 3, 0]);
        assert_eq!(nucleus(&prs, 0.4), vec![1]);
        // A flat distribution past the first cut: powers of two sum exactly.
        let flat = vec![1.0 / 1024.0; 1024];
        assert_eq!(nucleus(&flat, 0.5), (0..512).collect::<Vec<_>>());
    }
}
