//! The encoder (BERT or MPNet) run by ONNX Runtime, loaded at run time from its shared library
//! (the one the PyPI `onnxruntime` wheel ships; `scripts/models.sh --onnx` exports the graph
//! and prints where the library is). Inputs `input_ids`, `attention_mask` and, for BERT,
//! `token_type_ids` (int64, batch × sequence; MPNet has no token types), output
//! `last_hidden_state` (batch × sequence × hidden): the layout of Hugging Face's ONNX exports,
//! so a model directory's own `onnx/model.onnx` works too.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;

use crate::EmbedError;

/// The graph file under the model directory: full precision, or with int8 weights.
pub(crate) fn graph_path(model_dir: &Path, quantized: bool) -> PathBuf {
    let file = if quantized {
        "model_qint8.onnx"
    } else {
        "model.onnx"
    };
    model_dir.join("onnx").join(file)
}

/// ONNX Runtime allows one environment per process, bound to the library it was loaded from.
static RUNTIME: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

fn environment(library: &Path) -> Result<Environment, EmbedError> {
    let mut runtime = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((loaded, env)) = runtime.as_ref() {
        if loaded != library {
            return Err(EmbedError::Load(format!(
                "ONNX Runtime is already loaded from {} in this process; cannot also load {}",
                loaded.display(),
                library.display()
            )));
        }
        return Ok(env.clone());
    }
    let load_err = |e: &dyn std::fmt::Display| {
        EmbedError::Load(format!("ONNX Runtime ({}): {e}", library.display()))
    };
    let env = ort::init_from(library)
        .map_err(|e| load_err(&e))?
        .with_name("embed")
        .build()
        .map_err(|e| load_err(&e))?;
    *runtime = Some((library.to_path_buf(), env.clone()));
    Ok(env)
}

pub(crate) struct OnnxEncoder {
    /// `Session::run` takes `&mut self`; a pass already uses every configured thread.
    session: Mutex<Session>,
    hidden: usize,
    /// Whether the graph takes `token_type_ids` (BERT's do, MPNet's do not).
    token_types: bool,
}

impl OnnxEncoder {
    /// Loads `graph` with the ONNX Runtime library at `library`. `threads`: the intra-op
    /// threads (0: one per core). The threads never spin while idle, so the web workers on the
    /// same cores are not starved between passes.
    pub(crate) fn load(
        graph: &Path,
        library: &Path,
        threads: usize,
        hidden: usize,
    ) -> Result<Self, EmbedError> {
        let env = environment(library)?;
        let load_err =
            |e: &dyn std::fmt::Display| EmbedError::Load(format!("{}: {e}", graph.display()));
        if !graph.is_file() {
            return Err(EmbedError::Load(format!(
                "{}: no such file (scripts/models.sh --onnx exports it)",
                graph.display()
            )));
        }
        let session = Session::builder(&env)
            .and_then(|b| {
                b.with_optimization_level(GraphOptimizationLevel::All)
                    .map_err(Into::into)
            })
            .and_then(|b| b.with_intra_threads(threads).map_err(Into::into))
            .and_then(|b| b.with_inter_threads(1).map_err(Into::into))
            .and_then(|b| b.with_intra_op_spinning(false).map_err(Into::into))
            .and_then(|b| b.with_inter_op_spinning(false).map_err(Into::into))
            .and_then(|mut b| b.commit_from_file(graph))
            .map_err(|e| load_err(&e))?;
        let has_input = |name: &str| session.inputs().iter().any(|i| i.name() == name);
        for name in ["input_ids", "attention_mask"] {
            if !has_input(name) {
                return Err(load_err(&format!("the graph has no input `{name}`")));
            }
        }
        let token_types = has_input("token_type_ids");
        if !session
            .outputs()
            .iter()
            .any(|o| o.name() == "last_hidden_state")
        {
            return Err(load_err(&"the graph has no output `last_hidden_state`"));
        }
        Ok(Self {
            session: Mutex::new(session),
            hidden,
            token_types,
        })
    }

    /// The last hidden states, `n × len × hidden`, row-major.
    pub(crate) fn forward(
        &self,
        ids: &[u32],
        type_ids: &[u32],
        mask: &[u32],
        n: usize,
        len: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        let inference = |e: ort::Error| EmbedError::Inference(format!("ONNX Runtime: {e}"));
        let tensor = |values: &[u32]| {
            let values: Vec<i64> = values.iter().map(|&v| i64::from(v)).collect();
            Tensor::from_array(([n, len], values)).map_err(inference)
        };
        let mut inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask)?,
        ];
        if self.token_types {
            inputs.push(("token_type_ids".into(), tensor(type_ids)?.into()));
        }
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = session.run(inputs).map_err(inference)?;
        let (shape, hidden) = outputs["last_hidden_state"]
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let want = [n as i64, len as i64, self.hidden as i64];
        if shape.as_ref() != want {
            return Err(EmbedError::Inference(format!(
                "the graph answered shape {shape:?}, expected {want:?}"
            )));
        }
        Ok(hidden.to_vec())
    }
}
