//! Model runs: a content brief, an autonomous marketing cycle or a competitor watch. The route
//! checks the caller's BYOK model credential (422 without one), records the run and publishes
//! its task on `model.run` (see [`crate::run_queue`]); every memory-api process consumes that
//! queue. The worker writes the caller's memory as context (the agent bridge's file, within
//! [`CONTEXT_BUDGET`] tokens), asks the deployment's OpenAI-compatible endpoint for one JSON
//! object with the owner's own key, and records the object (`completed`) or why there is none
//! (`failed`). A model failure fails the run at once (nothing is made up, the caller may run
//! again); a database failure is retried, and recorded as the run's error on the last attempt.

use std::sync::Arc;

use http_kit::ApiError;
use llm::ChatModel;
use queue::{Broker, DeliveryInfo, HandlerResult};
use secrets::Kek;
use serde_json::Value;
use store::Pool;
use uuid::Uuid;

use crate::byok;
use crate::db::model_runs::{self as db, Run};
use crate::db::owner::Owner;
use crate::run_queue::{RunKind, RunQueue};

/// `model_runs`, queued on `model.run`.
pub static MODEL_RUNS: RunKind = RunKind {
    table: "model_runs",
    queue: "model.run",
    kind: "model_run",
    id_field: "run_id",
    name: "model run",
};

/// The model runs' publisher.
pub fn model_run_queue(broker: &Broker, prefix: &str) -> RunQueue {
    RunQueue::new(&MODEL_RUNS, broker, prefix)
}

/// o200k_base tokens of memory given to the model as context.
pub const CONTEXT_BUDGET: usize = 2_000;
/// The newest decisions the context considers.
const CONTEXT_DECISIONS: i64 = 20;

/// What a run asks the model for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ContentBrief,
    AutonomousMarketing,
    CompetitorWatch,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContentBrief => "content_brief",
            Self::AutonomousMarketing => "autonomous_marketing",
            Self::CompetitorWatch => "competitor_watch",
        }
    }

    fn parse(kind: &str) -> Option<Self> {
        [
            Self::ContentBrief,
            Self::AutonomousMarketing,
            Self::CompetitorWatch,
        ]
        .into_iter()
        .find(|k| k.as_str() == kind)
    }

    /// What the model is told to do and to answer (the shape of `result`).
    fn instructions(self) -> &'static str {
        match self {
            Self::ContentBrief => {
                "You write content briefs for a marketing team. From the request (a JSON \
                 object), write a brief. Answer with one JSON object with the keys: \"title\" \
                 (string), \"angle\" (string), \"audience\" (string), \"outline\" (array of \
                 section headings), \"key_messages\" (array of strings), \"keywords\" (array \
                 of strings) and \"call_to_action\" (string)."
            }
            Self::AutonomousMarketing => {
                "You run one cycle of autonomous marketing for a team. From the request (a \
                 JSON object with the goal, the channels and the horizon in days), plan the \
                 cycle. Answer with one JSON object with the keys: \"summary\" (string), \
                 \"actions\" (array of objects with \"channel\", \"action\", \"rationale\" and \
                 \"priority\" from 1 to 5) and \"metrics_to_watch\" (array of strings)."
            }
            Self::CompetitorWatch => {
                "You watch competitors for a team. You cannot browse: use only what you know, \
                 the memory and the request's \"web\" entries (what was read of the \
                 competitors' pages just now, and what changed since the last read), and say \
                 when you are unsure. From the request (a JSON object naming the competitors \
                 and the focus), answer with one JSON object with the \
                 keys: \"summary\" (string), \"competitors\" (array of objects with \"name\", \
                 \"positioning\", \"threats\" and \"opportunities\") and \
                 \"recommended_responses\" (array of strings)."
            }
        }
    }
}

/// The system message: the instructions, then the caller's memory.
fn system_message(kind: Kind, memory: &str) -> String {
    format!(
        "{}\nUse the memory below for facts about the team, its products and its decisions; \
         do not invent facts that contradict it.\n\n<memory>\n{memory}\n</memory>",
        kind.instructions()
    )
}

/// What the worker needs.
#[derive(Clone)]
pub struct Worker {
    pub pool: Pool,
    pub kek: Arc<Kek>,
    /// The deployment's endpoint (`MEMORY_LLM__…`); `None`: runs fail saying so.
    pub model: Option<Arc<ChatModel>>,
    /// Reads the competitor watches' URLs.
    pub web: Arc<crate::competitor_watch::fetch::WebReader>,
}

/// Handles one `model_run` job: asks the model unless the run finished.
pub async fn handle(worker: &Worker, run_id: Uuid, info: &DeliveryInfo) -> HandlerResult {
    let handled = run(worker, run_id).await;
    MODEL_RUNS
        .answer(
            &worker.pool,
            run_id,
            info,
            handled,
            "the run could not be carried out",
        )
        .await
}

/// Carries out run `run_id`; answers its status (`None` when the run is gone). `Err`: a
/// failure worth another attempt. No connection is held while the model (or a watched site)
/// answers: that may take as long as its timeout, and the process's few connections serve
/// every other job meanwhile.
async fn run(worker: &Worker, run_id: Uuid) -> Result<Option<String>, String> {
    let run = {
        let mut conn = store::conn(&worker.pool).await.map_err(|e| e.to_string())?;
        let Some(run) = db::by_id(&mut conn, run_id)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        if run.is_finished() {
            return Ok(Some(run.status));
        }
        MODEL_RUNS
            .start(&mut conn, run_id)
            .await
            .map_err(|e| e.to_string())?;
        run
    };
    let outcome = ask(worker, &run).await?;
    let mut conn = store::conn(&worker.pool).await.map_err(|e| e.to_string())?;
    match outcome {
        // An autonomous cycle's plan is proposed, action by action, for a person to decide.
        Ok((model, result)) if run.kind == Kind::AutonomousMarketing.as_str() => {
            let actions = crate::domain::marketing::planned_actions(&result);
            crate::db::action_proposals::complete_with_proposals(
                &mut conn, &run, &model, &result, &actions,
            )
            .await
            .map(drop)
        }
        Ok((model, result)) => db::complete(&mut conn, run_id, &model, &result)
            .await
            .map(drop),
        Err(err) => {
            let error = format!(
                "{}: {}",
                err.code().unwrap_or("MODEL_RUN_FAILED"),
                err.message
            );
            tracing::info!(run = %run_id, %error, "model run failed");
            MODEL_RUNS.fail(&mut conn, run_id, &error).await
        }
    }
    .map_err(|e| e.to_string())?;
    let finished = db::by_id(&mut conn, run_id)
        .await
        .map_err(|e| e.to_string())?;
    Ok(finished.map(|r| r.status))
}

/// The model's answer for the run: `Ok(Ok(model, object))`, `Ok(Err(why))` when the run fails
/// for good, `Err` when it should be tried again.
async fn ask(worker: &Worker, run: &Run) -> Result<Result<(String, Value), ApiError>, String> {
    let Some(kind) = Kind::parse(&run.kind) else {
        return Ok(Err(ApiError::internal(format!(
            "unknown run kind {}",
            run.kind
        ))));
    };
    let Some(model) = worker.model.as_deref() else {
        return Ok(Err(llm::not_configured()));
    };
    let owner = Owner {
        user_id: run.user_id,
        environment: &run.environment,
    };
    let (credential, rendered) = {
        let mut conn = store::conn(&worker.pool).await.map_err(|e| e.to_string())?;
        let credential = byok::take_on(&mut conn, &worker.kek, owner, byok::MODEL_SERVICE)
            .await
            .map_err(|e| e.to_string())?;
        let Some(credential) = credential else {
            return Ok(Err(byok::no_model_credential()));
        };
        let (rendered, _) =
            crate::bridge::write(&mut conn, run.view(), CONTEXT_BUDGET, CONTEXT_DECISIONS)
                .await
                .map_err(|e| e.to_string())?;
        (credential, rendered)
    };
    let model = model.with_api_key(credential.into_api_key());
    let system = system_message(kind, &rendered.content);
    // A competitor watch first reads its competitors' URLs; what it found is the request's and
    // the result's `web`.
    let mut request = run.input.clone();
    let mut web = None;
    if kind == Kind::CompetitorWatch {
        match crate::competitor_watch::observe(&worker.web, &worker.pool, run, &model).await? {
            Ok(observed) if observed.is_empty() => {}
            Ok(observed) => {
                request["web"] = Value::from(observed.clone());
                web = Some(observed);
            }
            Err(failure) => return Ok(Err(failure)),
        }
    }
    let answer = model.json_object(&system, &request.to_string()).await;
    Ok(answer.map(|mut object| {
        if let Some(web) = web {
            object["web"] = Value::from(web);
        }
        (model.model.clone(), object)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_read_back_from_its_name() {
        for kind in [
            Kind::ContentBrief,
            Kind::AutonomousMarketing,
            Kind::CompetitorWatch,
        ] {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(Kind::parse("other"), None);
    }

    #[test]
    fn the_system_message_holds_the_instructions_and_the_memory() {
        let message = system_message(Kind::CompetitorWatch, "# Agent context\nAda");
        assert!(message.starts_with("You watch competitors"));
        assert!(message.ends_with("<memory>\n# Agent context\nAda\n</memory>"));
    }
}
