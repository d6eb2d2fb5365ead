//! One pass's batch of due enrollments, as the engine advances them in one transaction: what
//! the batch reads once before its steps run (the steps that ran before, which contacts may
//! not be mailed, each automation's steps, each template), and what it writes once after they
//! ran (the emails with their outbox jobs, the step runs, the moves). The enrollments are
//! locked for the transaction, so nothing else changes what was read about them; steps that
//! change a contact (tags, properties) still write at once, as a later branch may read them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use uuid::Uuid;

use crate::db::automation_runs::{self as runs, Due, Move, StepRun};
use crate::db::automations as db;
use crate::db::emails::{self, NewEmail};
use crate::domain::automation::AutomationStep;

/// A batch of due enrollments being advanced.
#[derive(Default)]
pub struct Batch {
    /// The (enrollment, step) pairs that ran before.
    pub ran: HashSet<(Uuid, i32)>,
    /// Why an enrollment's contact may not be mailed, by enrollment.
    pub blocked: HashMap<Uuid, String>,
    steps: HashMap<Uuid, Arc<Vec<AutomationStep>>>,
    templates: HashMap<(Uuid, Uuid), Option<String>>,
    /// Written at the end.
    pub emails: Vec<NewEmail>,
    pub step_runs: Vec<StepRun>,
    pub moves: Vec<Move>,
}

impl Batch {
    /// What the steps of `due` read before they run.
    pub async fn read(conn: &mut AsyncPgConnection, due: &[Due]) -> Result<Self, ApiError> {
        Ok(Self {
            ran: runs::steps_ran(conn, due).await?,
            blocked: runs::blocked(conn, due).await?,
            ..Self::default()
        })
    }

    /// The steps of the enrollment's automation.
    pub fn steps_of(&mut self, due: &Due) -> Result<Arc<Vec<AutomationStep>>, ApiError> {
        if let Some(steps) = self.steps.get(&due.automation_id) {
            return Ok(Arc::clone(steps));
        }
        let steps: Arc<Vec<AutomationStep>> = Arc::new(serde_json::from_value(due.steps.clone())?);
        self.steps.insert(due.automation_id, Arc::clone(&steps));
        Ok(steps)
    }

    /// The HTML of the project's template `id`, if it is one.
    pub async fn template_html(
        &mut self,
        conn: &mut AsyncPgConnection,
        project_id: Uuid,
        id: Uuid,
    ) -> Result<Option<String>, ApiError> {
        if let Some(html) = self.templates.get(&(project_id, id)) {
            return Ok(html.clone());
        }
        let html = db::template_html(conn, project_id, id).await?;
        self.templates.insert((project_id, id), html.clone());
        Ok(html)
    }

    /// Writes the emails (each with its outbox job in `send_queue`), the step runs and the
    /// moves: the `(email id, project id)` of the jobs, to publish after the commit.
    pub async fn write(
        self,
        conn: &mut AsyncPgConnection,
        send_queue: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, Uuid)>, ApiError> {
        if !self.emails.is_empty() {
            emails::insert(conn, &self.emails, send_queue).await?;
        }
        runs::record_steps(conn, &self.step_runs, now).await?;
        runs::move_enrollments(conn, &self.moves).await?;
        Ok(self.emails.iter().map(|e| (e.id, e.project_id)).collect())
    }
}
