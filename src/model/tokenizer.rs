//! Byte-level BPE for Python code, trained with `tokenizers`; indentation runs are whole tokens.

use super::ModelError;
use std::path::Path;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, DecoderWrapper, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer};

pub const PAD: &str = "<pad>";
pub const EOS: &str = "</s>";
pub const UNK: &str = "<unk>";
pub const PAD_ID: u32 = 0;
pub const EOS_ID: u32 = 1;
pub const UNK_ID: u32 = 2;

/// Pre-tokenization: newlines, runs of 8 and 4 spaces (indentation), identifiers and numbers
/// with an optional leading space, punctuation runs, other whitespace.
const CODE_PATTERN: &str =
    r"\r?\n|\t+| {8}| {4}| ?[A-Za-z_][A-Za-z_0-9]*| ?[0-9]+(?:\.[0-9]+)?| ?[^\sA-Za-z_0-9]+| +|\s";

fn tok_err(e: impl std::fmt::Display) -> ModelError {
    ModelError::Tokenizer(e.to_string())
}

/// A tokenizer with the special tokens this crate relies on (`<pad>`=0, `</s>`=1, `<unk>`=2).
#[derive(Clone)]
pub struct CodeTokenizer {
    inner: Tokenizer,
}

impl std::fmt::Debug for CodeTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CodeTokenizer(vocab={})", self.vocab_size())
    }
}

fn empty_tokenizer() -> Result<Tokenizer, ModelError> {
    let mut tokenizer = Tokenizer::new(BPE::default());
    let split = Split::new(SplitPattern::Regex(CODE_PATTERN.into()), SplitDelimiterBehavior::Isolated, false)
        .map_err(tok_err)?;
    let byte_level = ByteLevel::new(false, false, false);
    tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
        PreTokenizerWrapper::Split(split),
        PreTokenizerWrapper::ByteLevel(byte_level),
    ]))));
    tokenizer.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevelDecoder::new(false, false, false))));
    Ok(tokenizer)
}

impl CodeTokenizer {
    /// Train a byte-level BPE with `vocab_size` entries (special tokens included) on `texts`.
    ///
    /// # Errors
    /// When `tokenizers` fails to train.
    pub fn train<I, S>(texts: I, vocab_size: usize) -> Result<CodeTokenizer, ModelError>
    where
        I: Iterator<Item = S> + Send,
        S: AsRef<str> + Send,
    {
        Self::train_with_tokens(texts, vocab_size, &[])
    }

    /// [`CodeTokenizer::train`], plus `atomic` strings (such as the neural debugger's
    /// `<|frame_sep|>`) that always encode to one token each and that `decode` keeps in the
    /// text. They are added after the `vocab_size` BPE entries, and BPE merges are learned
    /// only from the text between them.
    ///
    /// # Errors
    /// When `tokenizers` fails to train.
    pub fn train_with_tokens<I, S>(texts: I, vocab_size: usize, atomic: &[&str]) -> Result<CodeTokenizer, ModelError>
    where
        I: Iterator<Item = S> + Send,
        S: AsRef<str> + Send,
    {
        let mut tokenizer = empty_tokenizer()?;
        let specials = [PAD, EOS, UNK].map(|t| AddedToken::from(t, true)).to_vec();
        let trainer = BpeTrainerBuilder::new()
            .vocab_size(vocab_size)
            .min_frequency(2)
            .show_progress(false)
            .special_tokens(specials.clone())
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .build();
        let mut trainer = TrainerWrapper::BpeTrainer(trainer);
        // A newline is its own pre-token, so replacing an atomic string by one splits the
        // text there and no merge spans or spells out the atomic string.
        let texts = texts.map(|t| atomic.iter().fold(t.as_ref().to_string(), |acc, a| acc.replace(a, "\n")));
        tokenizer.train(&mut trainer, texts).map_err(tok_err)?;
        tokenizer.add_special_tokens(&specials);
        let added: Vec<AddedToken> = atomic.iter().map(|a| AddedToken::from(*a, false)).collect();
        tokenizer.add_tokens(&added);
        let out = CodeTokenizer { inner: tokenizer };
        out.check_specials()?;
        Ok(out)
    }

    /// The id of `text` when it is a single token (a special, atomic or BPE entry).
    #[must_use]
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.inner.token_to_id(text)
    }

    fn check_specials(&self) -> Result<(), ModelError> {
        for (tok, id) in [(PAD, PAD_ID), (EOS, EOS_ID), (UNK, UNK_ID)] {
            if self.inner.token_to_id(tok) != Some(id) {
                return Err(ModelError::Tokenizer(format!("special token {tok} must have id {id}")));
            }
        }
        Ok(())
    }

    /// Load a `tokenizer.json`.
    ///
    /// # Errors
    /// When the file is unreadable, malformed, or lacks the special tokens.
    pub fn load(path: &Path) -> Result<CodeTokenizer, ModelError> {
        let inner =
            Tokenizer::from_file(path).map_err(|e| ModelError::Tokenizer(format!("{}: {e}", path.display())))?;
        let out = CodeTokenizer { inner };
        out.check_specials()?;
        Ok(out)
    }

    /// Write `tokenizer.json`.
    ///
    /// # Errors
    /// On I/O or serialization errors.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        self.inner.save(path, false).map_err(tok_err)
    }

    #[must_use]
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text` (no special tokens added).
    ///
    /// # Errors
    /// When `tokenizers` fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self.inner.encode(text, false).map_err(tok_err)?.get_ids().to_vec())
    }

    /// Number of tokens in `text`; 0 on tokenizer failure is impossible for byte-level BPE.
    #[must_use]
    pub fn count(&self, text: &str) -> usize {
        self.inner.encode(text, false).map_or(text.len(), |e| e.len())
    }

    /// Text of `ids`, special tokens skipped.
    ///
    /// # Errors
    /// When `tokenizers` fails.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner.decode(ids, true).map_err(tok_err)
    }

    /// Tokens as strings (for inspection and tests).
    ///
    /// # Errors
    /// When `tokenizers` fails.
    pub fn tokens(&self, text: &str) -> Result<Vec<String>, ModelError> {
        Ok(self.inner.encode(text, false).map_err(tok_err)?.get_tokens().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_tokens_encode_whole_and_survive_decoding() {
        let atomic = ["<|frame_sep|>", "<|arg_sep|>", "<|src_sep|>"];
        let texts: Vec<String> =
            (0..40).map(|i| format!("<|frame_sep|><|src_sep|>    x = {i}<|arg_sep|>{{\"x\": \"{i}\"}}\n")).collect();
        let tok = CodeTokenizer::train_with_tokens(texts.iter(), 300, &atomic).unwrap();
        let text = "<|frame_sep|><|src_sep|>    y = 7<|arg_sep|>{}";
        let tokens = tok.tokens(text).unwrap();
        for a in atomic {
            assert_eq!(tok.encode(a).unwrap(), vec![tok.token_id(a).unwrap()]);
            assert!(tokens.iter().any(|t| t == a), "{a} is split in {tokens:?}");
        }
        assert_eq!(tok.decode(&tok.encode(text).unwrap()).unwrap(), text);
        // BPE learned no merges from the atomic strings (a plain tokenizer does).
        assert!(tok.token_id("|><|").is_none());
        // A plain tokenizer has no such tokens and splits them.
        let plain = CodeTokenizer::train(texts.iter(), 300).unwrap();
        assert!(plain.token_id("<|frame_sep|>").is_none() && plain.token_id("|><|").is_some());
        assert!(plain.encode("<|frame_sep|>").unwrap().len() > 1);
        assert_eq!(plain.decode(&plain.encode(text).unwrap()).unwrap(), text);
    }
}
