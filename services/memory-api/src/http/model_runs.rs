//! What the model-run routes share (`/content/brief`, `/marketing/autonomous/run`,
//! `/marketing/competitor-watch/run`): the answer of a run accepted.

use actix_web::HttpResponse;
use actix_web::http::header;

use crate::ops::model_runs::ModelRun;

/// 202 with the run, and `Location` where it is polled.
pub fn accepted(run: ModelRun, location: String) -> HttpResponse {
    HttpResponse::Accepted()
        .insert_header((header::LOCATION, location))
        .json(run)
}
