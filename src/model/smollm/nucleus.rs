//! Nucleus (top-p) sampling that draws exactly what candle's `LogitsProcessor` draws, without sorting the whole vocabulary.

use candle_core::{Device, Tensor};
use deepdebug_kernels::sampling::nucleus;
use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::SeedableRng;

/// Temperature and top-p sampling from logits, seeded. For the same seed, temperature, `top_p`
/// and logits it draws the tokens `LogitsProcessor::from_sampling(seed, Sampling::TopP { .. })`
/// draws (same probabilities, same nucleus, same random stream), at the cost of a selection
/// instead of a sort of 49k entries per token.
#[derive(Debug, Clone)]
pub struct Nucleus {
    rng: rand::rngs::StdRng,
    temperature: f64,
    top_p: f64,
}

impl Nucleus {
    #[must_use]
    pub fn new(seed: u64, temperature: f64, top_p: f64) -> Nucleus {
        Nucleus { rng: rand::rngs::StdRng::seed_from_u64(seed), temperature, top_p }
    }

    /// One token drawn from `softmax(logits / temperature)` restricted to its nucleus.
    ///
    /// # Errors
    /// On a tensor error, or logits with no positive probability.
    pub fn sample(&mut self, logits: &[f32]) -> candle_core::Result<u32> {
        let scaled = (Tensor::new(logits, &Device::Cpu)? / self.temperature)?;
        let prs = candle_nn::ops::softmax_last_dim(&scaled)?.to_vec1::<f32>()?;
        #[allow(clippy::cast_possible_truncation)]
        let top_p = self.top_p as f32;
        let drawn = if self.top_p <= 0.0 || self.top_p >= 1.0 {
            WeightedIndex::new(&prs).map_err(candle_core::Error::wrap)?.sample(&mut self.rng)
        } else {
            // Zeros outside the nucleus add nothing to the cumulative weights, so the nucleus
            // alone, in vocabulary order, gives the same draw from the same random number.
            let mut kept = nucleus(&prs, top_p);
            kept.sort_unstable();
            let distr = WeightedIndex::new(kept.iter().map(|&i| prs[i])).map_err(candle_core::Error::wrap)?;
            kept[distr.sample(&mut self.rng)]
        };
        u32::try_from(drawn).map_err(candle_core::Error::wrap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_transformers::generation::{LogitsProcessor, Sampling};

    /// Logits of several shapes: peaked (a small nucleus), flat (a nucleus past the first
    /// cut), and with ties at the nucleus boundary.
    fn logits(kind: usize, step: u64, vocab: usize) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(step * 31 + kind as u64);
        let uniform = rand::distr::Uniform::new(0f32, 1f32).expect("a range");
        (0..vocab)
            .map(|i| match kind {
                0 => 12.0 * uniform.sample(&mut rng).powi(8),
                1 => uniform.sample(&mut rng) * 0.5,
                _ => [0.0f32, 1.0, 3.0][i % 3] + if i < 5 { 4.0 } else { 0.0 },
            })
            .collect()
    }

    #[test]
    fn draws_the_tokens_candles_logits_processor_draws_for_every_seed_temperature_and_top_p() {
        for (kind, vocab) in [(0, 49_152), (1, 2_000), (2, 3_000), (0, 100)] {
            for (temperature, top_p) in [(0.8, 0.95), (1.2, 0.9), (0.5, 1.0), (1.0, 0.3)] {
                for seed in [0u64, 7] {
                    let mut ours = Nucleus::new(seed, temperature, top_p);
                    let mut theirs = LogitsProcessor::from_sampling(seed, Sampling::TopP { p: top_p, temperature });
                    for step in 0..12 {
                        let l = logits(kind, step, vocab);
                        let expected = theirs.sample(&Tensor::new(l.as_slice(), &Device::Cpu).unwrap()).unwrap();
                        assert_eq!(ours.sample(&l).unwrap(), expected, "kind {kind}, T {temperature}, p {top_p}");
                    }
                }
            }
        }
    }
}
