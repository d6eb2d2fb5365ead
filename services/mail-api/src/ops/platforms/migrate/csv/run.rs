//! A CSV run's delivery of `platform.migrate`: the stored file read from the run's cursor
//! ([`source::Pages`]), each page written with the cursor after it
//! ([`Migrator::write_page`]), so a redelivered job resumes at the first page not written.

use std::sync::Arc;

use super::source::Pages;
use super::{CsvLayout, stored_upload};
use crate::db::platform_imports::{self, ImportRun};
use crate::ops::platforms::migrate::records::{Cursor, Stage};
use crate::ops::platforms::migrate::runner::{Migrator, Stop};

impl Migrator {
    pub(in crate::ops::platforms::migrate) async fn run_csv(
        &self,
        run: ImportRun,
    ) -> Result<(), Stop> {
        let file = {
            let mut conn = store::conn(&self.pool)
                .await
                .map_err(|e| Stop::Transient(e.to_string()))?;
            platform_imports::get_file(&mut conn, run.project_id, run.id)
                .await?
                .ok_or_else(|| Stop::Fatal("the uploaded file is gone".to_owned()))?
        };
        let upload = Arc::new(stored_upload(file).map_err(Stop::Fatal)?);
        let source = match upload.layout {
            CsvLayout::Mailchimp => "mailchimp",
            CsvLayout::Generic => "csv",
        };
        let parts = {
            let upload = Arc::clone(&upload);
            tokio::task::spawn_blocking(move || upload.parts())
                .await
                .map_err(|e| Stop::Transient(e.to_string()))?
                .map_err(|e| Stop::Fatal(format!("the uploaded file: {}", e.problem)))?
        };
        let pages = Arc::new(Pages {
            upload,
            parts: Arc::new(parts),
            import_id: run.id,
            source,
            page_size: self.api.settings.page_size.clamp(1, 1000) as usize,
        });
        let mut cursor: Cursor = serde_json::from_value(run.cursor.clone()).unwrap_or_default();
        let mut reader = Arc::clone(&pages).spawn(cursor.clone());
        while cursor.stage != Stage::Done {
            let fetched = reader
                .recv()
                .await
                .ok_or_else(|| Stop::Transient("the file's reader stopped".to_owned()))?
                .map_err(Stop::Fatal)?;
            let read_to = fetched.next.clone();
            let next = self.write_page(&run, source, &cursor, fetched).await?;
            if next != read_to {
                // Another delivery wrote ahead: read on from where it is.
                reader = Arc::clone(&pages).spawn(next.clone());
            }
            cursor = next;
        }
        drop(reader);
        self.complete(&run).await
    }
}
