//! How many exports may stream at once, per project and per process, and how long a stream
//! waits for its client: each export holds a database connection and a snapshot transaction
//! for its whole life, so a client that stops reading must not hold them for ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use uuid::Uuid;

use crate::config::ExportSettings;

pub struct ExportLimits {
    max_per_project: usize,
    max_per_process: usize,
    send_timeout: Duration,
    running: Mutex<Running>,
}

#[derive(Default)]
struct Running {
    total: usize,
    per_project: HashMap<Uuid, usize>,
}

/// Why an export may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    Project,
    Process,
}

impl ExportLimits {
    pub fn new(settings: &ExportSettings) -> Arc<Self> {
        Arc::new(Self {
            max_per_project: settings.max_per_project.max(1),
            max_per_process: settings.max_per_process.max(1),
            send_timeout: Duration::from_secs(settings.send_timeout_secs.max(1)),
            running: Mutex::default(),
        })
    }

    /// How long a stream waits for its client to take the next chunk before it ends.
    pub fn send_timeout(&self) -> Duration {
        self.send_timeout
    }

    /// The export's transaction is ended by the server after this long without a query: a
    /// backstop behind [`Self::send_timeout`], which ends a stalled stream first (a page can
    /// take a few sends, hence the margin).
    pub fn idle_in_transaction_timeout(&self) -> Duration {
        self.send_timeout * 2 + Duration::from_secs(10)
    }

    /// A slot for one export of `project`, released when the permit is dropped.
    pub fn try_start(self: &Arc<Self>, project: Uuid) -> Result<ExportPermit, Busy> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if running.total >= self.max_per_process {
            return Err(Busy::Process);
        }
        let count = running.per_project.entry(project).or_default();
        if *count >= self.max_per_project {
            return Err(Busy::Project);
        }
        *count += 1;
        running.total += 1;
        Ok(ExportPermit {
            limits: Arc::clone(self),
            project,
        })
    }
}

/// One running export's slot.
pub struct ExportPermit {
    limits: Arc<ExportLimits>,
    project: Uuid,
}

impl ExportPermit {
    pub fn send_timeout(&self) -> Duration {
        self.limits.send_timeout
    }

    pub fn idle_in_transaction_timeout(&self) -> Duration {
        self.limits.idle_in_transaction_timeout()
    }
}

impl Drop for ExportPermit {
    fn drop(&mut self) {
        let mut running = self
            .limits
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        running.total = running.total.saturating_sub(1);
        if let Some(count) = running.per_project.get_mut(&self.project) {
            *count -= 1;
            if *count == 0 {
                running.per_project.remove(&self.project);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_project: usize, per_process: usize) -> Arc<ExportLimits> {
        ExportLimits::new(&ExportSettings {
            max_per_project: per_project,
            max_per_process: per_process,
            send_timeout_secs: 30,
        })
    }

    #[test]
    fn slots_are_bounded_per_project_and_per_process_and_freed_on_drop() {
        let limits = limits(2, 3);
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let a1 = limits.try_start(a).unwrap();
        let _a2 = limits.try_start(a).unwrap();
        assert_eq!(limits.try_start(a).err(), Some(Busy::Project));
        let _b1 = limits.try_start(b).unwrap();
        assert_eq!(limits.try_start(c).err(), Some(Busy::Process));
        drop(a1);
        assert!(limits.try_start(c).is_ok());
        let _a3 = limits.try_start(a).unwrap();
    }
}
