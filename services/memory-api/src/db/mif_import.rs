//! Applying a MIF document to an owner's memory. Call inside a transaction: an import applies
//! all or nothing.
//!
//! - `merge`: the kernel is merge-patched (RFC 7396) with the document's; corpus entries and
//!   decisions are added unless the same id or the same normalized text is already there (in
//!   the account, or earlier in the document); each clash is a line in `conflicts`.
//! - `replace`: the kernel, the corpus and the decisions become the document's (ids and times
//!   kept, so an export imported into an empty account exports the same again). A list the
//!   document does not carry (`user_corpus` or `decisions` absent or null) is left alone, so an
//!   `identity_corpus` export replaces no decisions; an empty list empties it.
//! - `append`: every entry and decision is added as a new item (new id, time kept); kernel
//!   keys are added only where absent (each kept key is a line in `conflicts`).
//!
//! Entries and decisions go into the [`View`]'s workspace (account-wide without one). The
//! text clash check of `merge` looks at what the view sees; ids are unique per owner, so an id
//! held anywhere in the account clashes. In a workspace, `replace` replaces the workspace's
//! own entries and decisions only, and skips (as a clash) a kept id held outside it. The
//! kernel is the account's.
//!
//! Products named by the document (`metadata.products`, and every decision's `product_name`
//! and `affects_products`) that the owner lacks are created; existing products are left as
//! they are. Imported items are stored unembedded; the background pass embeds them.

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ring::digest::{SHA256, digest};
use secrets::Kek;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::free_form::{self, NewEntry};
use super::kernels::{self, NewKernel, UpdateError};
use super::mif::{decision_texts_page, product_records};
use super::owner::Owner;
use super::products::{self as db_products, NewProduct};
use super::schema::decisions;
use super::view::View;
use crate::domain::kernel::{self, TOKEN_BUDGET};
use crate::domain::mif::{self, Document, Invalid};
use crate::domain::{merge_patch, signing, tags, text};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Merge,
    Replace,
    Append,
}

impl Strategy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "merge" => Some(Self::Merge),
            "replace" => Some(Self::Replace),
            "append" => Some(Self::Append),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Replace => "replace",
            Self::Append => "append",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub corpus_imported: usize,
    pub decisions_imported: usize,
    pub conflicts: Vec<String>,
    pub products_created: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{}: {}", .0.path, .0.problem)]
    Invalid(Invalid),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

const PAGE: i64 = 1000;

type TextKey = [u8; 32];

fn text_key(s: &str) -> TextKey {
    let mut key = [0u8; 32];
    key.copy_from_slice(digest(&SHA256, text::normalize(s).as_bytes()).as_ref());
    key
}

/// Applies `doc` (found at `root`, e.g. `mif`) to the memory the view sees.
pub async fn apply(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    doc: &Document,
    strategy: Strategy,
    kek: &Kek,
    root: &str,
) -> Result<Outcome, ImportError> {
    let owner = view.owner;
    // One import at a time per owner: two concurrent `replace`s would otherwise both delete,
    // then both insert the same ids.
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind::<Text, _>(format!(
            "mif-import:{}:{}",
            owner.user_id, owner.environment
        ))
        .execute(conn)
        .await?;
    let mut out = Outcome::default();
    let corpus = corpus_plan(conn, view, doc, strategy, root, &mut out).await?;
    let decisions = decisions_plan(conn, view, doc, strategy, root, &mut out).await?;
    let products = missing_products(conn, owner, doc, &decisions).await?;
    insert_products(conn, owner, &products, kek).await?;
    out.products_created = products.iter().map(|p| p.0.to_owned()).collect();
    if strategy == Strategy::Replace && doc.has_corpus {
        free_form::delete_all(conn, view).await?;
    }
    if strategy == Strategy::Replace && doc.has_decisions {
        let mut target = diesel::delete(decisions::table)
            .filter(decisions::user_id.eq(owner.user_id))
            .filter(decisions::environment.eq(owner.environment))
            .into_boxed();
        if let Some(workspace) = view.workspace {
            target = target.filter(decisions::workspace_id.eq(workspace));
        }
        target.execute(conn).await?;
    }
    free_form::insert_many(conn, view, &corpus).await?;
    insert_decisions(conn, view, &decisions).await?;
    out.corpus_imported = corpus.len();
    out.decisions_imported = decisions.len();
    // Last: the merged kernel's budget is the likeliest late refusal, and everything above
    // is rolled back with it.
    if let Some(kernel) = kernel_plan(conn, owner, doc, strategy, root, &mut out).await? {
        write_kernel(conn, owner, kernel).await?;
    }
    Ok(out)
}

/// What [`apply`] would do now, found by reading alone: nothing is written and no row is
/// locked, so a staging never waits for, nor holds up, the owner's other writes. Call inside a
/// read-only transaction for one consistent snapshot.
pub async fn preview(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    doc: &Document,
    strategy: Strategy,
    root: &str,
) -> Result<Outcome, ImportError> {
    let owner = view.owner;
    let mut out = Outcome::default();
    let corpus = corpus_plan(conn, view, doc, strategy, root, &mut out).await?;
    let decisions = decisions_plan(conn, view, doc, strategy, root, &mut out).await?;
    let products = missing_products(conn, owner, doc, &decisions).await?;
    out.products_created = products.iter().map(|p| p.0.to_owned()).collect();
    out.corpus_imported = corpus.len();
    out.decisions_imported = decisions.len();
    kernel_plan(conn, owner, doc, strategy, root, &mut out).await?;
    Ok(out)
}

/// The kernel the import would leave, checked against the documented types and the token
/// budget; `None` when it would not change.
async fn kernel_plan(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    doc: &Document,
    strategy: Strategy,
    root: &str,
    out: &mut Outcome,
) -> Result<Option<NewKernel>, ImportError> {
    let path = format!("{root}.identity_kernel");
    let current = kernels::find(conn, owner).await?;
    let members: Map<String, Value> = current
        .as_ref()
        .and_then(|c| c.kernel.as_object().cloned())
        .unwrap_or_default();
    let new = match strategy {
        // A null member is an absent one: the kernel becomes the document's other members.
        Strategy::Replace => doc
            .identity_kernel
            .iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        Strategy::Merge => {
            let mut merged = Value::Object(members.clone());
            merge_patch::apply(&mut merged, &Value::Object(doc.identity_kernel.clone()));
            match merged {
                Value::Object(m) => m,
                _ => unreachable!("an object patched by an object stays an object"),
            }
        }
        Strategy::Append => {
            let mut added = members.clone();
            for (key, value) in &doc.identity_kernel {
                if value.is_null() {
                    continue;
                }
                if added.get(key).is_some_and(|v| !v.is_null()) {
                    out.conflicts.push(format!(
                        "{path}.{key}: the kernel already has this key; kept the existing value"
                    ));
                } else {
                    added.insert(key.clone(), value.clone());
                }
            }
            added
        }
    };
    let unchanged = match &current {
        Some(_) => new == members,
        None => new.is_empty(),
    };
    if unchanged {
        return Ok(None);
    }
    mif::check_kernel(&new, &path).map_err(ImportError::Invalid)?;
    let rendered = kernel::render(&new);
    if rendered.token_count > TOKEN_BUDGET {
        return Err(ImportError::Invalid(Invalid {
            path,
            problem: format!(
                "the injection block would be {} tokens, over the budget of {TOKEN_BUDGET}",
                rendered.token_count
            ),
        }));
    }
    Ok(Some(NewKernel {
        kernel: new,
        injection_block: rendered.block,
        token_count: i32::try_from(rendered.token_count).unwrap_or(i32::MAX),
    }))
}

async fn write_kernel(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewKernel,
) -> Result<(), ImportError> {
    kernels::update::<()>(conn, owner, None, |_| {
        Ok(NewKernel {
            kernel: new.kernel.clone(),
            injection_block: new.injection_block.clone(),
            token_count: new.token_count,
        })
    })
    .await
    .map_err(|e| match e {
        UpdateError::Database(e) => ImportError::Database(e),
        UpdateError::Stale { .. } | UpdateError::Rejected(()) => {
            ImportError::Database(diesel::result::Error::RollbackTransaction)
        }
    })?;
    Ok(())
}

/// What already holds an id or a normalized text, for clash lines.
struct Seen {
    ids: HashSet<Uuid>,
    texts: HashMap<TextKey, String>,
    /// How a held id is described (`already exists`, or `exists outside this workspace`).
    held: &'static str,
}

impl Seen {
    /// The clash of an item, if any: `Some(line)`.
    fn clash(&self, path: &str, id: Option<Uuid>, text: &str, what: &str) -> Option<String> {
        if let Some(id) = id
            && self.ids.contains(&id)
        {
            return Some(format!(
                "{path}: {what} with id {id} {}; skipped",
                self.held
            ));
        }
        self.texts
            .get(&text_key(text))
            .map(|holder| format!("{path}: same normalized text as {holder}; skipped"))
    }

    fn add(&mut self, id: Uuid, text: &str, holder: String) {
        self.ids.insert(id);
        self.texts.entry(text_key(text)).or_insert(holder);
    }
}

/// What an import into `view` clashes with: for `merge`, every id of the account and the texts
/// the view sees; for `replace` in a workspace, the ids held outside it (the workspace's own
/// are replaced); nothing otherwise.
async fn seen(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    corpus: bool,
    strategy: Strategy,
) -> Result<Seen, ImportError> {
    let mut seen = Seen {
        ids: HashSet::new(),
        texts: HashMap::new(),
        held: "already exists",
    };
    let replaced = match (strategy, view.workspace) {
        (Strategy::Merge, _) => None,
        (Strategy::Replace, Some(workspace)) => Some(workspace),
        _ => return Ok(seen),
    };
    if replaced.is_some() {
        seen.held = "exists outside this workspace";
    }
    let what = if corpus {
        "existing entry"
    } else {
        "existing decision"
    };
    let mut after = None;
    loop {
        let rows = if corpus {
            free_form::texts_page(conn, view.owner, after, PAGE).await?
        } else {
            decision_texts_page(conn, view.owner, after, PAGE).await?
        };
        let Some(last) = rows.last().map(|r| r.0) else {
            break;
        };
        for (id, text, workspace) in &rows {
            match replaced {
                Some(replaced) if *workspace == Some(replaced) => {}
                Some(_) => {
                    seen.ids.insert(*id);
                }
                None if view.sees(*workspace) => seen.add(*id, text, format!("{what} {id}")),
                None => {
                    seen.ids.insert(*id);
                }
            }
        }
        if (rows.len() as i64) < PAGE {
            break;
        }
        after = Some(last);
    }
    Ok(seen)
}

async fn corpus_plan<'d>(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    doc: &'d Document,
    strategy: Strategy,
    root: &str,
    out: &mut Outcome,
) -> Result<Vec<NewEntry<'d>>, ImportError> {
    let now = Utc::now();
    let new = |id: Uuid, e: &'d mif::CorpusEntry| NewEntry {
        id,
        content: &e.content,
        tags: &e.tags,
        source: e.source.as_deref(),
        metadata: Value::Object(e.metadata.clone()),
        created_at: e.created_at.unwrap_or(now),
    };
    Ok(match strategy {
        Strategy::Append => doc
            .user_corpus
            .iter()
            .map(|e| new(Uuid::now_v7(), e))
            .collect(),
        Strategy::Replace | Strategy::Merge => {
            let mut seen = seen(conn, view, true, strategy).await?;
            let mut planned = Vec::new();
            for (i, e) in doc.user_corpus.iter().enumerate() {
                let path = format!("{root}.user_corpus[{i}]");
                if let Some(line) = seen.clash(&path, e.id, &e.content, "an entry") {
                    out.conflicts.push(line);
                    continue;
                }
                let id = e.id.unwrap_or_else(Uuid::now_v7);
                if strategy == Strategy::Merge {
                    seen.add(id, &e.content, path);
                }
                planned.push(new(id, e));
            }
            planned
        }
    })
}

/// A decision ready to insert.
struct NewDecision<'d> {
    id: Uuid,
    source: &'d mif::Decision,
    tags: Vec<String>,
}

async fn decisions_plan<'d>(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    doc: &'d Document,
    strategy: Strategy,
    root: &str,
    out: &mut Outcome,
) -> Result<Vec<NewDecision<'d>>, ImportError> {
    let new = |id: Uuid, d: &'d mif::Decision| {
        let tags = d.tags.clone().unwrap_or_else(|| {
            let mut named: Vec<&str> = vec![d.product_name.as_str()];
            named.extend(d.affects_products.iter().map(String::as_str));
            tags::derive(&d.decision, d.reasoning.as_deref(), &named)
        });
        NewDecision {
            id,
            source: d,
            tags,
        }
    };
    Ok(match strategy {
        Strategy::Append => doc
            .decisions
            .iter()
            .map(|d| new(Uuid::now_v7(), d))
            .collect(),
        Strategy::Replace | Strategy::Merge => {
            let mut seen = seen(conn, view, false, strategy).await?;
            let mut planned = Vec::new();
            for (i, d) in doc.decisions.iter().enumerate() {
                let path = format!("{root}.decisions[{i}]");
                if let Some(line) = seen.clash(&path, d.id, &d.decision, "a decision") {
                    out.conflicts.push(line);
                    continue;
                }
                let id = d.id.unwrap_or_else(Uuid::now_v7);
                if strategy == Strategy::Merge {
                    seen.add(id, &d.decision, path);
                }
                planned.push(new(id, d));
            }
            planned
        }
    })
}

/// Products named by the document (its records first, then the decisions' names) that the
/// owner lacks, each once, with its record when the document has one.
async fn missing_products<'d>(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    doc: &'d Document,
    decisions: &[NewDecision<'d>],
) -> Result<Vec<(&'d str, Option<&'d mif::Product>)>, ImportError> {
    let existing: HashSet<String> = product_records(conn, owner)
        .await?
        .into_iter()
        .map(|p| p.0)
        .collect();
    let mut wanted: Vec<(&str, Option<&mif::Product>)> = Vec::new();
    let mut named: HashSet<&str> = HashSet::new();
    let described = doc.products.iter().map(|p| (p.name.as_str(), Some(p)));
    let referenced = decisions.iter().flat_map(|d| {
        std::iter::once(d.source.product_name.as_str())
            .chain(d.source.affects_products.iter().map(String::as_str))
            .map(|n| (n, None))
    });
    for (name, record) in described.chain(referenced) {
        if !existing.contains(name) && named.insert(name) {
            wanted.push((name, record));
        }
    }
    Ok(wanted)
}

async fn insert_products(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    wanted: &[(&str, Option<&mif::Product>)],
    kek: &Kek,
) -> Result<(), ImportError> {
    for &(name, record) in wanted {
        let id = Uuid::now_v7();
        // The secret is never shown: rotate it before signing project signals.
        let sealed = signing::seal(kek, id, &signing::new_secret());
        db_products::insert(
            conn,
            NewProduct {
                id,
                user_id: owner.user_id,
                environment: owner.environment,
                name,
                description: record.and_then(|p| p.description.as_deref()),
                status: record.map_or("active", |p| p.status.as_str()),
                signing_secret: &sealed,
            },
        )
        .await?;
    }
    Ok(())
}

async fn insert_decisions(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    planned: &[NewDecision<'_>],
) -> Result<(), ImportError> {
    let owner = view.owner;
    let now = Utc::now();
    for chunk in planned.chunks(500) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|d| {
                (
                    decisions::id.eq(d.id),
                    decisions::user_id.eq(owner.user_id),
                    decisions::environment.eq(owner.environment),
                    decisions::decision.eq(&d.source.decision),
                    decisions::reasoning.eq(d.source.reasoning.as_deref()),
                    decisions::product_name.eq(&d.source.product_name),
                    decisions::affects_products.eq(&d.source.affects_products),
                    decisions::tags.eq(&d.tags),
                    decisions::decided_at.eq(d.source.decided_at.unwrap_or(now)),
                    decisions::workspace_id.eq(view.workspace),
                )
            })
            .collect();
        diesel::insert_into(decisions::table)
            .values(rows)
            .execute(conn)
            .await?;
    }
    Ok(())
}
