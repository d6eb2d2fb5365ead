use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use futures_util::FutureExt;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use tokio::sync::oneshot;

use crate::onnx::OnnxEncoder;
use crate::{BoxFuture, EmbedConfig, EmbedError, Embedder, Pooling, Runtime, SentenceConfig};

/// The vector length of all-MiniLM-L6-v2.
pub const MINILM_DIMENSIONS: usize = 384;
/// The vector length of all-mpnet-base-v2.
pub const MPNET_DIMENSIONS: usize = 768;
/// The name a local model's vectors carry unless `model` is set: by the directory's
/// `model_type`.
pub const MINILM_NAME: &str = "all-MiniLM-L6-v2";
/// See [`MINILM_NAME`].
pub const MPNET_NAME: &str = "all-mpnet-base-v2";
/// Texts per forward pass unless configured otherwise.
pub const DEFAULT_BATCH_SIZE: usize = 32;
/// all-MiniLM-L6-v2's `max_seq_length` (longer texts are truncated), used when the model
/// directory has no `sentence_bert_config.json`.
const DEFAULT_MAX_SEQ_LEN: usize = 256;
/// Bytes kept per token of the window (see `Inner::max_text_bytes`).
const BYTES_PER_TOKEN_BOUND: usize = 32;

/// A BERT-family (all-MiniLM-L6-v2) or MPNet (all-mpnet-base-v2) sentence-embedding model run
/// on the CPU, by candle (BERT only) or by ONNX Runtime ([`crate::Runtime`]): tokenise with truncation and per-batch
/// padding, run the encoder, pool (mean over the
/// attention mask, or the CLS token, as the model directory or the settings say),
/// L2-normalise. Query and passage instructions are added by [`Embedder::embed_query`] and
/// [`Embedder::embed_passages`]. Inference runs on a thread of its own, one forward pass at a time (a pass
/// already uses every core); requests that arrive while it works are coalesced into the next
/// pass, so concurrent callers share batches instead of queueing one by one.
pub struct LocalMiniLm {
    inner: Arc<Inner>,
    jobs: std::sync::mpsc::Sender<Job>,
    name: String,
    query_prefix: String,
    passage_prefix: String,
    /// Whether the tokenizer lowercases (all-MiniLM-L6-v2's does).
    uncased: bool,
}

/// Texts to embed and where their vectors go.
struct Job {
    texts: Vec<String>,
    reply: oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
}

/// The inference thread: takes a job, adds every job already waiting (up to a batch of
/// texts), runs them together and hands each caller its share. Ends when the model is dropped.
fn run_inference(inner: Arc<Inner>, jobs: std::sync::mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut taken = first.texts.len();
        let mut batch = vec![first];
        while taken < inner.batch_size {
            match jobs.try_recv() {
                Ok(job) => {
                    taken += job.texts.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        let texts: Vec<String> = batch.iter().flat_map(|j| j.texts.iter().cloned()).collect();
        match inner.embed(&texts) {
            Ok(mut vectors) => {
                for job in batch.into_iter().rev() {
                    let share = vectors.split_off(vectors.len() - job.texts.len());
                    let _ = job.reply.send(Ok(share));
                }
            }
            Err(err) => {
                for job in batch {
                    let _ = job.reply.send(Err(EmbedError::Inference(err.to_string())));
                }
            }
        }
    }
}

struct Inner {
    encoder: Encoder,
    tokenizer: Tokenizer,
    dimensions: usize,
    batch_size: usize,
    /// The token that fills a text out to its batch's longest (masked out).
    pad_id: u32,
    /// Texts are cut to this many bytes before tokenizing, so that a huge text is never
    /// tokenized whole; the tokenizer then truncates to the window exactly. Ordinary text fills
    /// the window long before the cut (about 4 bytes per token); only runs of unknown words
    /// lose a part the window could have held.
    max_text_bytes: usize,
    pooling: Pooling,
}

/// What runs the encoder: candle, or ONNX Runtime.
enum Encoder {
    Candle(Box<BertModel>),
    Onnx(OnnxEncoder),
}

impl Encoder {
    /// The last hidden states, `n × len × hidden`, row-major.
    fn forward(
        &self,
        ids: Vec<u32>,
        type_ids: Vec<u32>,
        mask: &[u32],
        n: usize,
        len: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        match self {
            Encoder::Onnx(onnx) => onnx.forward(&ids, &type_ids, mask, n, len),
            Encoder::Candle(model) => {
                let inference = |e: candle_core::Error| EmbedError::Inference(e.to_string());
                let device = Device::Cpu;
                let ids = Tensor::from_vec(ids, (n, len), &device).map_err(inference)?;
                let type_ids = Tensor::from_vec(type_ids, (n, len), &device).map_err(inference)?;
                let mask = Tensor::from_vec(mask.to_vec(), (n, len), &device).map_err(inference)?;
                model
                    .forward(&ids, &type_ids, Some(&mask))
                    .and_then(|hidden| hidden.flatten_all())
                    .and_then(|hidden| hidden.to_vec1::<f32>())
                    .map_err(inference)
            }
        }
    }
}

/// The runtime settings `load_with` needs.
enum LoadRuntime {
    Candle,
    Onnx {
        library: PathBuf,
        quantized: bool,
        threads: usize,
    },
}

impl LocalMiniLm {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `dir` (no network).
    /// Blocking: reads about 90 MB.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::from_config(&EmbedConfig {
            model_dir: Some(dir.as_ref().to_path_buf()),
            ..Default::default()
        })
    }

    pub(crate) fn from_config(config: &EmbedConfig) -> Result<Self, EmbedError> {
        let dir = config.model_dir.as_deref().ok_or_else(|| {
            EmbedError::Config("provider \"local\" needs model_dir (see scripts/models.sh)".into())
        })?;
        let model = config.model.as_deref();
        let mut sentence = SentenceConfig::read(dir)?;
        if let Some(pooling) = config.pooling {
            sentence.pooling = pooling;
        }
        if let Some(prefix) = &config.query_prefix {
            sentence.query_prefix = Some(prefix.clone());
        }
        if let Some(prefix) = &config.passage_prefix {
            sentence.passage_prefix = Some(prefix.clone());
        }
        let runtime = match config.runtime() {
            Runtime::Candle if config.quantized => {
                return Err(EmbedError::Config(
                    "quantized weights need runtime \"onnx\"".into(),
                ));
            }
            Runtime::Candle => LoadRuntime::Candle,
            Runtime::Onnx => LoadRuntime::Onnx {
                library: config.onnxruntime_library.clone().ok_or_else(|| {
                    EmbedError::Config(
                        "runtime \"onnx\" needs onnxruntime_library (scripts/models.sh \
                         --onnxruntime prints it)"
                            .into(),
                    )
                })?,
                quantized: config.quantized,
                threads: config.threads.unwrap_or(0),
            },
        };
        let batch_size = config.batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        let mut loaded = Self::load_with(dir, model, batch_size, sentence.pooling, &runtime)?;
        loaded.query_prefix = sentence.query_prefix.unwrap_or_default();
        loaded.passage_prefix = sentence.passage_prefix.unwrap_or_default();
        Ok(loaded)
    }

    fn load_with(
        dir: &Path,
        model_name: Option<&str>,
        batch_size: usize,
        pooling: Pooling,
        runtime: &LoadRuntime,
    ) -> Result<Self, EmbedError> {
        let load_err = |what: &str, e: &dyn std::fmt::Display| {
            EmbedError::Load(format!("{}: {what}: {e}", dir.display()))
        };

        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| load_err("config.json", &e))?;
        let model_config: ModelConfig =
            serde_json::from_str(&config_text).map_err(|e| load_err("config.json", &e))?;
        let mpnet = model_config.is_mpnet();
        let model_name = model_name.unwrap_or(if mpnet { MPNET_NAME } else { MINILM_NAME });

        let max_seq_len = read_max_seq_len(dir)?
            .unwrap_or(DEFAULT_MAX_SEQ_LEN)
            .min(model_config.positions());

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_err("tokenizer.json", &e))?;
        // The directory's own padding token (MPNet's `<pad>`, whose id its position ids
        // count from), else BERT's `[PAD]`.
        let pad_id = tokenizer
            .get_padding()
            .map(|p| p.pad_id)
            .or_else(|| tokenizer.token_to_id("[PAD]"))
            .unwrap_or(model_config.pad_token_id);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_len,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| load_err("tokenizer truncation", &e))?;
        // Each pass pads its texts itself (`Inner::embed_pass`), to that pass's longest.
        tokenizer.with_padding(None);

        let (encoder, name) = match runtime {
            LoadRuntime::Candle if mpnet => {
                return Err(EmbedError::Config(format!(
                    "{}: MPNet runs on ONNX Runtime only: set onnxruntime_library \
                     (scripts/models.sh --onnxruntime prints it) and export the model \
                     (scripts/models.sh --onnx {MPNET_NAME})",
                    dir.display()
                )));
            }
            LoadRuntime::Candle => {
                let bert_config: BertConfig =
                    serde_json::from_str(&config_text).map_err(|e| load_err("config.json", &e))?;
                // Buffered rather than memory-mapped: mapping a file needs `unsafe`, and the
                // weights are small.
                let weights = std::fs::read(dir.join("model.safetensors"))
                    .map_err(|e| load_err("model.safetensors", &e))?;
                let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
                    .map_err(|e| load_err("model.safetensors", &e))?;
                let model =
                    BertModel::load(vb, &bert_config).map_err(|e| load_err("weights", &e))?;
                (
                    Encoder::Candle(Box::new(model)),
                    format!("local/{model_name}"),
                )
            }
            LoadRuntime::Onnx {
                library,
                quantized,
                threads,
            } => {
                let graph = crate::onnx::graph_path(dir, *quantized);
                let encoder =
                    OnnxEncoder::load(&graph, library, *threads, model_config.hidden_size)?;
                // Full precision computes the vectors candle does (cosine 1 − 1e-7); int8
                // weights do not, so their vectors carry a name of their own.
                let name = if *quantized {
                    format!("local/{model_name} int8")
                } else {
                    format!("local/{model_name}")
                };
                (Encoder::Onnx(encoder), name)
            }
        };
        let uncased = lowercases(&tokenizer).map_err(|e| load_err("tokenizer", &e))?;

        tracing::info!(
            dir = %dir.display(),
            %name,
            runtime = if matches!(encoder, Encoder::Candle(_)) { "candle" } else { "onnx" },
            dimensions = model_config.hidden_size,
            max_seq_len,
            ?pooling,
            "local embedding model loaded"
        );
        let inner = Arc::new(Inner {
            encoder,
            tokenizer,
            dimensions: model_config.hidden_size,
            batch_size: batch_size.max(1),
            pad_id,
            max_text_bytes: max_seq_len * BYTES_PER_TOKEN_BOUND,
            pooling,
        });
        let (jobs, queue) = std::sync::mpsc::channel();
        let worker = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("embed-inference".into())
            .spawn(move || run_inference(worker, queue))
            .map_err(|e| EmbedError::Load(format!("inference thread: {e}")))?;
        Ok(Self {
            inner,
            jobs,
            name,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            uncased,
        })
    }

    /// Embeds on the calling thread (blocking). [`Embedder::embed`] runs on the inference
    /// thread instead.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }
}

/// What the embedder reads of `config.json`, for BERT and MPNet alike (MPNet's lacks BERT's
/// `type_vocab_size`, so candle's BERT config cannot read it).
#[derive(serde::Deserialize)]
pub(crate) struct ModelConfig {
    #[serde(default)]
    model_type: Option<String>,
    hidden_size: usize,
    max_position_embeddings: usize,
    #[serde(default)]
    pad_token_id: u32,
}

impl ModelConfig {
    fn is_mpnet(&self) -> bool {
        self.model_type.as_deref() == Some("mpnet")
    }

    /// The longest input the position embeddings cover: MPNet's position ids start after the
    /// padding token's id (as RoBERTa's do), so its first `pad_token_id + 1` rows are unused.
    fn positions(&self) -> usize {
        if self.is_mpnet() {
            self.max_position_embeddings
                .saturating_sub(self.pad_token_id as usize + 1)
        } else {
            self.max_position_embeddings
        }
    }
}

/// Whether `dir/config.json` is an MPNet model's (`model_type` "mpnet"); false when it cannot
/// be read (loading the model then says why).
pub(crate) fn is_mpnet_dir(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<ModelConfig>(&text).ok())
        .is_some_and(|c| c.is_mpnet())
}

/// Whether the tokenizer gives a word and its lowercase the same tokens (its normaliser
/// lowercases), whatever kind of normaliser the model directory declares.
fn lowercases(tokenizer: &Tokenizer) -> Result<bool, tokenizers::Error> {
    let ids = |text: &str| -> Result<Vec<u32>, tokenizers::Error> {
        Ok(tokenizer.encode(text, false)?.get_ids().to_vec())
    };
    Ok(ids("Query ÉTÉ")? == ids("query été")?)
}

/// `max_seq_length` from sentence-transformers' `sentence_bert_config.json`, when present.
fn read_max_seq_len(dir: &Path) -> Result<Option<usize>, EmbedError> {
    let path = dir.join("sentence_bert_config.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EmbedError::Load(format!("{}: {e}", path.display()))),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| EmbedError::Load(format!("{}: {e}", path.display())))?;
    Ok(value
        .get("max_seq_length")
        .and_then(serde_json::Value::as_u64)
        .map(|n| n as usize))
}

/// The cost of one forward pass beyond its tokens, in tokens: about what a short sentence
/// costs (measured on ONNX Runtime: a pass of one ten-token query takes as long as two or
/// three such queries in a pass of 32).
const PASS_OVERHEAD_TOKENS: usize = 16;

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let cut: Vec<&str> = texts
            .iter()
            .map(|t| crate::truncate_bytes(t, self.max_text_bytes))
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(cut, true)
            .map_err(|e| EmbedError::Inference(format!("tokenizer: {e}")))?;
        // Texts of similar length go through a pass together, so that little padding is
        // computed; the vectors are then put back in the callers' order.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let lengths: Vec<usize> = order.iter().map(|&i| encodings[i].len()).collect();
        let mut out = vec![Vec::new(); texts.len()];
        let mut start = 0;
        for end in passes(&lengths, self.batch_size) {
            let pass: Vec<&Encoding> = order[start..end].iter().map(|&i| &encodings[i]).collect();
            let vectors = self.embed_pass(&pass)?;
            for (&i, v) in order[start..end].iter().zip(vectors) {
                out[i] = v;
            }
            start = end;
        }
        Ok(out)
    }

    /// One forward pass over `encodings`, each padded to the longest.
    fn embed_pass(&self, encodings: &[&Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let n = encodings.len();
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(n * len);
        let mut type_ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for e in encodings {
            let padding = len - e.len();
            ids.extend_from_slice(e.get_ids());
            ids.extend(std::iter::repeat_n(self.pad_id, padding));
            type_ids.extend_from_slice(e.get_type_ids());
            type_ids.extend(std::iter::repeat_n(0, padding));
            mask.extend_from_slice(e.get_attention_mask());
            mask.extend(std::iter::repeat_n(0, padding));
        }
        let hidden = self.encoder.forward(ids, type_ids, &mask, n, len)?;
        if hidden.len() != n * len * self.dimensions {
            return Err(EmbedError::Inference(format!(
                "the model gave {} values for {n} × {len} tokens of {} dimensions",
                hidden.len(),
                self.dimensions
            )));
        }
        let mut vectors = pool(&hidden, &mask, len, self.dimensions, self.pooling);
        for v in &mut vectors {
            crate::normalize(v);
        }
        Ok(vectors)
    }
}

/// Where the forward passes over texts of `lengths` (tokens, ascending) end: at most `max`
/// texts a pass, split where the padded tokens plus each pass's overhead
/// ([`PASS_OVERHEAD_TOKENS`]) cost least. Short leads and long passages that arrive together
/// thus go through passes of their own instead of the leads being padded to the passages.
fn passes(lengths: &[usize], max: usize) -> Vec<usize> {
    let n = lengths.len();
    // cost[j]: the least cost of the first j texts; from[j]: where their last pass starts.
    let mut cost = vec![0usize; n + 1];
    let mut from = vec![0usize; n + 1];
    for j in 1..=n {
        cost[j] = usize::MAX;
        for i in j.saturating_sub(max.max(1))..j {
            let c = cost[i] + (j - i) * lengths[j - 1] + PASS_OVERHEAD_TOKENS;
            if c < cost[j] {
                (cost[j], from[j]) = (c, i);
            }
        }
    }
    let mut ends = Vec::new();
    let mut j = n;
    while j > 0 {
        ends.push(j);
        j = from[j];
    }
    ends.reverse();
    ends
}

/// One vector per text from the hidden states (`n × len × dim`): the CLS token's, or the mean
/// over the real (unpadded) tokens.
fn pool(hidden: &[f32], mask: &[u32], len: usize, dim: usize, pooling: Pooling) -> Vec<Vec<f32>> {
    hidden
        .chunks_exact(len * dim)
        .zip(mask.chunks_exact(len))
        .map(|(states, mask)| match pooling {
            Pooling::Cls => states[..dim].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; dim];
                let mut count = 0f32;
                for (token, _) in states.chunks_exact(dim).zip(mask).filter(|(_, m)| **m != 0) {
                    count += 1.0;
                    for (s, x) in sum.iter_mut().zip(token) {
                        *s += x;
                    }
                }
                let count = count.max(1e-9);
                sum.iter_mut().for_each(|s| *s /= count);
                sum
            }
        })
        .collect()
}

impl Embedder for LocalMiniLm {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn query_prefix(&self) -> &str {
        &self.query_prefix
    }

    fn passage_prefix(&self) -> &str {
        &self.passage_prefix
    }

    fn uncased(&self) -> bool {
        self.uncased
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let (reply, answer) = oneshot::channel();
            self.jobs
                .send(Job {
                    texts: texts.to_vec(),
                    reply,
                })
                .map_err(|_| EmbedError::Inference("the inference thread has stopped".into()))?;
            answer
                .await
                .map_err(|_| EmbedError::Inference("the inference thread has stopped".into()))?
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::{PASS_OVERHEAD_TOKENS, passes};

    #[test]
    fn short_and_long_texts_go_through_passes_of_their_own() {
        // 16 leads of 12 tokens and 16 passages of 40, as concurrent decisions bring them.
        let lengths: Vec<usize> = [vec![12; 16], vec![40; 16]].concat();
        assert_eq!(passes(&lengths, 32), vec![16, 32]);
    }

    #[test]
    fn texts_of_one_length_share_passes_up_to_the_maximum() {
        let ends = passes(&[20; 70], 32);
        assert_eq!((ends.len(), ends.last()), (3, Some(&70)), "{ends:?}");
        let mut start = 0;
        for end in ends {
            assert!(end - start <= 32);
            start = end;
        }
        assert_eq!(passes(&[20; 3], 32), vec![3]);
        assert_eq!(passes(&[], 32), Vec::<usize>::new());
    }

    #[test]
    fn a_pass_is_not_split_for_less_padding_than_its_overhead() {
        // One token of padding each is cheaper than a second pass.
        let lengths: Vec<usize> = [vec![10; 4], vec![11; 4]].concat();
        const { assert!(4 < PASS_OVERHEAD_TOKENS) };
        assert_eq!(passes(&lengths, 32), vec![8]);
    }

    #[test]
    fn a_maximum_of_zero_still_makes_progress() {
        assert_eq!(passes(&[5, 6], 0), vec![1, 2]);
    }
}
