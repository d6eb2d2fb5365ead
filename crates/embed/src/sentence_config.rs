//! What a sentence-transformers model directory says about how the model is used: its pooling
//! (`1_Pooling/config.json`, or the directory `modules.json` names) and its query and passage
//! instructions (`prompts` of `config_sentence_transformers.json`). Everything optional: a
//! directory with only `config.json`, `tokenizer.json` and `model.safetensors` is a mean-pooled
//! model without instructions, like all-MiniLM-L6-v2.

use std::path::Path;

use serde::Deserialize;

use crate::EmbedError;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// The mean over the real (unpadded) tokens (all-MiniLM-L6-v2, E5, GTE).
    #[default]
    Mean,
    /// The first token's vector (BGE).
    Cls,
}

/// The parts of the directory's sentence-transformers files the embedder uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentenceConfig {
    pub pooling: Pooling,
    pub query_prefix: Option<String>,
    pub passage_prefix: Option<String>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
    path: String,
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
}

#[derive(Deserialize)]
struct StConfigFile {
    #[serde(default)]
    prompts: std::collections::HashMap<String, String>,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, EmbedError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EmbedError::Load(format!("{}: {e}", path.display()))),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| EmbedError::Load(format!("{}: {e}", path.display())))
}

impl SentenceConfig {
    pub fn read(dir: &Path) -> Result<Self, EmbedError> {
        let modules: Option<Vec<Module>> = read_json(&dir.join("modules.json"))?;
        let pooling_dir = modules
            .unwrap_or_default()
            .into_iter()
            .find(|m| m.kind.ends_with(".Pooling"))
            .map_or_else(|| "1_Pooling".to_owned(), |m| m.path);
        let pooling = match read_json::<PoolingFile>(&dir.join(pooling_dir).join("config.json"))? {
            Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
            _ => Pooling::Mean,
        };
        let prompts = read_json::<StConfigFile>(&dir.join("config_sentence_transformers.json"))?
            .map(|c| c.prompts)
            .unwrap_or_default();
        let non_empty = |key: &str| prompts.get(key).filter(|p| !p.is_empty()).cloned();
        Ok(Self {
            pooling,
            query_prefix: non_empty("query"),
            passage_prefix: non_empty("passage").or_else(|| non_empty("document")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "embed-st-{}-{}",
            std::process::id(),
            files.len() + files.iter().map(|f| f.1.len()).sum::<usize>()
        ));
        for (name, body) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn bare_directory_is_mean_pooled_without_prompts() {
        let dir = dir_with(&[]);
        assert_eq!(
            SentenceConfig::read(&dir).unwrap(),
            SentenceConfig::default()
        );
    }

    #[test]
    fn reads_cls_pooling_and_prompts() {
        let dir = dir_with(&[
            (
                "modules.json",
                r#"[{"idx":1,"name":"1","path":"pool","type":"sentence_transformers.models.Pooling"}]"#,
            ),
            ("pool/config.json", r#"{"pooling_mode_cls_token":true}"#),
            (
                "config_sentence_transformers.json",
                r#"{"prompts":{"query":"query: ","document":"passage: "}}"#,
            ),
        ]);
        let c = SentenceConfig::read(&dir).unwrap();
        assert_eq!(c.pooling, Pooling::Cls);
        assert_eq!(c.query_prefix.as_deref(), Some("query: "));
        assert_eq!(c.passage_prefix.as_deref(), Some("passage: "));
    }
}
