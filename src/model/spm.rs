//! SentencePiece-BPE tokenizer rebuilt from a GGUF's `tokenizer.ggml.*` metadata (`model = llama`, e.g. Gemma 3).

use super::ModelError;
use candle_core::quantized::gguf_file;
use std::collections::HashMap;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::replace::Replace;
use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper, Tokenizer};

/// SentencePiece's word-boundary mark: a space in the text.
const SPACE: &str = "\u{2581}";

/// GGUF token types (llama.cpp's `llama_token_type`).
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// The pieces and scores of a SentencePiece-BPE vocabulary, in id order.
pub(crate) struct Vocabulary {
    pub tokens: Vec<String>,
    pub scores: Vec<f32>,
    pub types: Vec<i32>,
}

impl Vocabulary {
    /// Read `tokenizer.ggml.{tokens,scores,token_type}`.
    pub(crate) fn from_gguf(ct: &gguf_file::Content) -> Result<Vocabulary, ModelError> {
        let get =
            |key: &str| ct.metadata.get(key).ok_or_else(|| ModelError::Config(format!("GGUF metadata lacks {key}")));
        let tokens: Vec<String> =
            get("tokenizer.ggml.tokens")?.to_vec()?.iter().map(|v| v.to_string().cloned()).collect::<Result<_, _>>()?;
        let scores: Vec<f32> =
            get("tokenizer.ggml.scores")?.to_vec()?.iter().map(gguf_file::Value::to_f32).collect::<Result<_, _>>()?;
        let types: Vec<i32> = get("tokenizer.ggml.token_type")?
            .to_vec()?
            .iter()
            .map(gguf_file::Value::to_i32)
            .collect::<Result<_, _>>()?;
        if scores.len() != tokens.len() || types.len() != tokens.len() {
            return Err(ModelError::Config("GGUF tokenizer tokens, scores and types differ in length".into()));
        }
        Ok(Vocabulary { tokens, scores, types })
    }

    /// BPE merges equivalent to SentencePiece's rule (merge the adjacent pair whose joined
    /// piece scores highest): every split of a normal piece into two pieces of the vocabulary,
    /// ranked by the joined piece's score (ties: by id), as Hugging Face's converter does.
    pub(crate) fn merges(&self) -> Vec<(String, String)> {
        let ids: HashMap<&str, usize> = self.tokens.iter().enumerate().map(|(i, t)| (t.as_str(), i)).collect();
        let mut ranked: Vec<(f32, usize, usize, usize, usize)> = Vec::new();
        for (id, piece) in self.tokens.iter().enumerate().filter(|&(i, _)| self.types[i] == NORMAL) {
            for (at, _) in piece.char_indices().skip(1) {
                if let (Some(&a), Some(&b)) = (ids.get(&piece[..at]), ids.get(&piece[at..])) {
                    ranked.push((self.scores[id], id, a, b, at));
                }
            }
        }
        ranked.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)).then(x.3.cmp(&y.3)));
        ranked
            .into_iter()
            .map(|(_, id, _, _, at)| (self.tokens[id][..at].to_string(), self.tokens[id][at..].to_string()))
            .collect()
    }
}

/// The tokenizer: spaces become `▁`, BPE with byte fallback; control tokens (`<bos>`,
/// `<end_of_turn>`) are special, user-defined ones (runs of spaces, tabs and newlines) are
/// matched whole in the raw text first.
pub(crate) fn tokenizer(vocab: &Vocabulary) -> Result<Tokenizer, ModelError> {
    let table: tokenizers::models::bpe::Vocab =
        vocab.tokens.iter().enumerate().map(|(i, t)| (t.clone(), u32::try_from(i).unwrap_or(u32::MAX))).collect();
    let unk = vocab.tokens.iter().position(|t| t == "<unk>").map(|i| vocab.tokens[i].clone());
    let mut builder = BPE::builder().vocab_and_merges(table, vocab.merges()).byte_fallback(true);
    if let Some(unk) = unk {
        builder = builder.unk_token(unk);
    }
    let bpe = builder.build().map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    let mut tok = Tokenizer::new(bpe);
    let to_space = Replace::new(" ", SPACE).map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    tok.with_normalizer(Some(NormalizerWrapper::Replace(to_space)));
    let from_space = Replace::new(SPACE, " ").map_err(|e| ModelError::Tokenizer(e.to_string()))?;
    tok.with_decoder(Some(DecoderWrapper::Sequence(Sequence::new(vec![
        DecoderWrapper::Replace(from_space),
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
    ]))));
    let of_type = |kind: i32, special: bool| -> Vec<AddedToken> {
        (0..vocab.tokens.len())
            .filter(|&i| vocab.types[i] == kind)
            .map(|i| AddedToken::from(vocab.tokens[i].clone(), special).normalized(false))
            .collect()
    };
    tok.add_special_tokens(&of_type(CONTROL, true));
    tok.add_tokens(&of_type(USER_DEFINED, false));
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Vocabulary {
        // id order = score order, as in SentencePiece vocabularies.
        let pieces = [
            "<unk>", "<bos>", "  ", "\n", "▁r", "re", "ret", "retu", "retur", "return", "▁x", "r", "e", "t", "u", "n",
            "▁", "x",
        ];
        let types = [2, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        #[allow(clippy::cast_precision_loss)]
        let scores = (0..pieces.len()).map(|i| -(i as f32)).collect();
        let mut tokens: Vec<String> = pieces.iter().map(|p| (*p).to_string()).collect();
        tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
        let mut types: Vec<i32> = types.to_vec();
        types.extend(std::iter::repeat_n(6, 256));
        let mut scores: Vec<f32> = scores;
        scores.extend(std::iter::repeat_n(0.0, 256));
        Vocabulary { tokens, scores, types }
    }

    #[test]
    fn merges_follow_the_score_of_the_joined_piece() {
        let merges = vocabulary().merges();
        let first: Vec<(&str, &str)> = merges.iter().take(3).map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(first, vec![("▁", "r"), ("r", "e"), ("re", "t")]);
    }

    #[test]
    fn spaces_runs_and_unknown_bytes_round_trip() {
        let tok = tokenizer(&vocabulary()).unwrap();
        let text = "  return x\n€";
        let enc = tok.encode(text, false).unwrap();
        let pieces: Vec<&str> = enc.get_tokens().iter().map(String::as_str).take(4).collect();
        assert_eq!(pieces, vec!["  ", "return", "▁x", "\n"]);
        // `€` is not in the vocabulary: three byte tokens, decoded back to the character.
        assert_eq!(enc.get_ids().len(), 7);
        assert_eq!(tok.decode(enc.get_ids(), false).unwrap(), text);
        let bos = tok.encode("<bos>return", false).unwrap();
        assert_eq!(bos.get_ids()[0], 1);
    }
}
