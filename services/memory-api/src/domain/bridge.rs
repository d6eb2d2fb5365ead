//! The agent context file (such as `AGENTS.md`) the agent bridge writes: the identity
//! kernel, the product states and the newest decisions, in that order of priority, cut to a
//! token budget counted with o200k_base (the tokenizer of the kernel's `token_count`).
//!
//! The file is made of units (a kernel line, a product's state, a decision), each ending with
//! a newline. Units are taken in priority order while they fit; the first that does not fit
//! ends the file, so the same memory and budget always give the same file, and what is kept
//! is always the most important part. A cut file ends with a note saying what was left out.
//! The file holds no clock time, so it changes only when the memory does.

use chrono::{DateTime, Utc};
use ring::digest::{Context, SHA256};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{state_text, tokens};

/// The tokenizer budgets are counted with.
pub const TOKENIZER: &str = "o200k_base";
/// Budgets allowed and the default.
pub const MIN_BUDGET: u32 = 128;
pub const MAX_BUDGET: u32 = 32_000;
pub const DEFAULT_BUDGET: u32 = 4_000;
/// Decisions read (newest first) unless asked otherwise, and at most.
pub const DEFAULT_DECISIONS: u32 = 50;
pub const MAX_DECISIONS: u32 = 200;
/// The file written unless another is named.
pub const DEFAULT_FILE: &str = "AGENTS.md";

const HEADER: &str = "# Agent context\n\nWritten by the memory service from the identity kernel, \
    the product states and the newest decisions. Edit the memory rather than this file: a \
    workspace snapshot that changes it is reported as drift.\n";

/// The kernel as the file shows it.
pub struct KernelSource<'a> {
    pub version: i32,
    /// The kernel's injection block (`## Section` headings, `- item` lines).
    pub block: &'a str,
}

pub struct StateSource<'a> {
    pub product: &'a str,
    /// The product state version's id (it changes with every new version).
    pub id: Uuid,
    pub state: &'a Map<String, Value>,
}

pub struct DecisionSource<'a> {
    pub id: Uuid,
    pub decision: &'a str,
    pub reasoning: Option<&'a str>,
    pub product: &'a str,
    pub decided_at: DateTime<Utc>,
}

/// What the file is written from.
pub struct Sources<'a> {
    pub kernel: Option<KernelSource<'a>>,
    /// By product name.
    pub states: Vec<StateSource<'a>>,
    /// Newest first.
    pub decisions: Vec<DecisionSource<'a>>,
}

/// How many units of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Counts {
    /// Lines of the identity kernel (an item, or a section's text).
    pub kernel_lines: u32,
    pub product_states: u32,
    pub decisions: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub content: String,
    /// o200k_base tokens of `content`, at most the budget.
    pub token_count: usize,
    pub truncated: bool,
    pub included: Counts,
    pub omitted: Counts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Kernel,
    States,
    Decisions,
}

impl Section {
    fn heading(self) -> &'static str {
        match self {
            Self::Kernel => "\n## Identity kernel\n",
            Self::States => "\n## Product states\n",
            Self::Decisions => "\n## Recent decisions\n\n",
        }
    }
}

struct Unit {
    section: Section,
    text: String,
}

/// The file for `sources` within `budget` tokens (at least [`MIN_BUDGET`]).
pub fn render(sources: &Sources<'_>, budget: usize) -> Rendered {
    let units = units(sources);
    let total = count(&units, units.len());
    // Each unit's cost, with its section's heading when it opens one. Summed costs can differ
    // from the count of the whole text by a token here and there; the exact count decides.
    let costs: Vec<usize> = (0..units.len())
        .map(|i| tokens::count(&piece(&units, i)))
        .collect();
    let header = tokens::count(HEADER);
    let fitting = |room: usize| {
        let mut used = header;
        costs
            .iter()
            .take_while(|cost| {
                used += **cost;
                used <= room
            })
            .count()
    };
    let mut taken = fitting(budget);
    let mut note = None;
    if taken < units.len() {
        // Room for the note, as long as it can be (every unit left out).
        let longest = note_text(budget, total);
        taken = fitting(budget.saturating_sub(tokens::count(&longest)));
    }
    loop {
        if taken < units.len() {
            note = Some(note_text(budget, omitted(&total, &count(&units, taken))));
        }
        let content = assemble(&units, taken, note.as_deref());
        let token_count = tokens::count(&content);
        if token_count <= budget || taken == 0 {
            let included = count(&units, taken);
            return Rendered {
                content,
                token_count,
                truncated: taken < units.len(),
                omitted: omitted(&total, &included),
                included,
            };
        }
        taken -= 1;
    }
}

/// A fingerprint of the memory a file is written from (kernel version, state versions,
/// decisions): equal fingerprints give equal files for equal budgets.
pub fn fingerprint(sources: &Sources<'_>) -> String {
    let mut hash = Context::new(&SHA256);
    if let Some(kernel) = &sources.kernel {
        hash.update(format!("kernel:{}\n", kernel.version).as_bytes());
    }
    for state in &sources.states {
        hash.update(format!("state:{}:{}\n", state.product, state.id).as_bytes());
    }
    for decision in &sources.decisions {
        hash.update(format!("decision:{}\n", decision.id).as_bytes());
    }
    hex::encode(hash.finish().as_ref())
}

fn units(sources: &Sources<'_>) -> Vec<Unit> {
    let mut units = Vec::new();
    if let Some(kernel) = &sources.kernel {
        // A subsection's heading goes with its first line, so no heading ends the file alone.
        let mut heading = String::new();
        for line in kernel.block.lines().filter(|l| !l.trim().is_empty()) {
            if let Some(title) = line.strip_prefix("## ") {
                heading = format!("\n### {}\n", one_line(title));
                continue;
            }
            units.push(Unit {
                section: Section::Kernel,
                text: format!("{}{}\n", std::mem::take(&mut heading), line.trim_end()),
            });
        }
    }
    for state in &sources.states {
        let mut text = format!("\n### {}\n", one_line(state.product));
        let members = state_text::members(state.state);
        if members.is_empty() {
            text.push_str("- (no state recorded)\n");
        }
        for (key, value) in members {
            text.push_str(&format!("- {key}: {}\n", one_line(&value)));
        }
        units.push(Unit {
            section: Section::States,
            text,
        });
    }
    for d in &sources.decisions {
        let mut text = format!(
            "- {} [{}] {}",
            d.decided_at.format("%Y-%m-%d"),
            one_line(d.product),
            one_line(d.decision)
        );
        if let Some(reasoning) = d.reasoning.map(one_line).filter(|r| !r.is_empty()) {
            text.push_str(&format!(" (why: {reasoning})"));
        }
        text.push('\n');
        units.push(Unit {
            section: Section::Decisions,
            text,
        });
    }
    units
}

/// Unit `i` as it appears in the file: with its section's heading when it opens the section.
fn piece(units: &[Unit], i: usize) -> String {
    let opens = i == 0 || units[i - 1].section != units[i].section;
    if opens {
        format!("{}{}", units[i].section.heading(), units[i].text)
    } else {
        units[i].text.clone()
    }
}

fn assemble(units: &[Unit], taken: usize, note: Option<&str>) -> String {
    let mut out = HEADER.to_owned();
    for i in 0..taken {
        out.push_str(&piece(units, i));
    }
    if let Some(note) = note {
        out.push_str(note);
    }
    out
}

fn count(units: &[Unit], taken: usize) -> Counts {
    let mut counts = Counts::default();
    for unit in &units[..taken] {
        match unit.section {
            Section::Kernel => counts.kernel_lines += 1,
            Section::States => counts.product_states += 1,
            Section::Decisions => counts.decisions += 1,
        }
    }
    counts
}

fn omitted(total: &Counts, included: &Counts) -> Counts {
    Counts {
        kernel_lines: total.kernel_lines - included.kernel_lines,
        product_states: total.product_states - included.product_states,
        decisions: total.decisions - included.decisions,
    }
}

fn note_text(budget: usize, left_out: Counts) -> String {
    format!(
        "\n_Cut to fit {budget} tokens: {} kernel lines, {} product states and {} decisions \
         left out._\n",
        left_out.kernel_lines, left_out.product_states, left_out.decisions
    )
}

/// `text` on one line: runs of white space (new lines included) as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sources<'a>(
        block: &'a str,
        state: &'a Map<String, Value>,
        decisions: &'a [(Uuid, String)],
    ) -> Sources<'a> {
        let at = DateTime::parse_from_rfc3339("2026-11-27T10:00:00Z")
            .unwrap()
            .to_utc();
        Sources {
            kernel: Some(KernelSource { version: 3, block }),
            states: vec![StateSource {
                product: "atlas",
                id: Uuid::nil(),
                state,
            }],
            decisions: decisions
                .iter()
                .map(|(id, text)| DecisionSource {
                    id: *id,
                    decision: text,
                    reasoning: Some("because\nreasons"),
                    product: "atlas",
                    decided_at: at,
                })
                .collect(),
        }
    }

    fn state() -> Map<String, Value> {
        json!({"status": "beta", "what_works": ["search", "export"], "open_questions": "pricing?"})
            .as_object()
            .unwrap()
            .clone()
    }

    fn decisions(n: usize) -> Vec<(Uuid, String)> {
        (0..n)
            .map(|i| {
                (
                    Uuid::now_v7(),
                    format!("Decision number {i} about the storage layer"),
                )
            })
            .collect()
    }

    const BLOCK: &str = "## Identity\n- name: Ada\n- role: engineer\n\n## Constraints\n- be brief";

    #[test]
    fn everything_fits_in_priority_order() {
        let state = state();
        let decisions = decisions(3);
        let rendered = render(&sources(BLOCK, &state, &decisions), 4000);
        assert!(!rendered.truncated);
        assert_eq!(
            rendered.included,
            Counts {
                kernel_lines: 3,
                product_states: 1,
                decisions: 3
            }
        );
        assert_eq!(rendered.omitted, Counts::default());
        let c = &rendered.content;
        assert!(c.starts_with(HEADER));
        assert!(c.contains("## Identity kernel\n\n### Identity\n- name: Ada\n- role: engineer\n"));
        assert!(c.contains("\n### Constraints\n- be brief\n"));
        assert!(c.contains(
            "## Product states\n\n### atlas\n- status: beta\n- what works: search; export\n- open questions: pricing?\n"
        ));
        assert!(c.contains(
            "## Recent decisions\n\n- 2026-11-27 [atlas] Decision number 0 about the storage layer (why: because reasons)\n"
        ));
        let kernel = c.find("name: Ada").unwrap();
        let states = c.find("### atlas").unwrap();
        let decision = c.find("Decision number 0").unwrap();
        assert!(kernel < states && states < decision);
        assert_eq!(rendered.token_count, tokens::count(c));
    }

    #[test]
    fn a_small_budget_cuts_deterministically_and_says_so() {
        let state = state();
        let decisions = decisions(40);
        let sources = sources(BLOCK, &state, &decisions);
        let full = render(&sources, MAX_BUDGET as usize);
        for budget in [128, 150, 200, 300, 500] {
            let cut = render(&sources, budget);
            assert!(cut.token_count <= budget, "{budget}: {}", cut.token_count);
            assert_eq!(cut.token_count, tokens::count(&cut.content));
            assert!(cut.truncated, "{budget}");
            assert_eq!(cut, render(&sources, budget), "the same file every time");
            assert!(
                cut.content
                    .contains(&format!("_Cut to fit {budget} tokens: "))
            );
            let total = full.included;
            assert_eq!(
                cut.included.kernel_lines + cut.omitted.kernel_lines,
                total.kernel_lines
            );
            assert_eq!(
                cut.included.decisions + cut.omitted.decisions,
                total.decisions
            );
            // What is kept is a prefix of the whole, in priority order.
            let kept = cut.content.split("\n_Cut to fit").next().unwrap();
            assert!(full.content.starts_with(kept), "{budget}");
        }
        let bigger = render(&sources, 500);
        let smaller = render(&sources, 300);
        assert!(bigger.included.decisions >= smaller.included.decisions);
    }

    #[test]
    fn fingerprints_follow_the_memory() {
        let state = state();
        let decisions = decisions(2);
        let a = fingerprint(&sources(BLOCK, &state, &decisions));
        assert_eq!(a, fingerprint(&sources(BLOCK, &state, &decisions)));
        let other = decisions_with_one_more(&decisions);
        assert_ne!(a, fingerprint(&sources(BLOCK, &state, &other)));
    }

    fn decisions_with_one_more(d: &[(Uuid, String)]) -> Vec<(Uuid, String)> {
        let mut more = vec![(Uuid::now_v7(), "newer".to_owned())];
        more.extend(d.iter().cloned());
        more
    }

    #[test]
    fn an_empty_memory_is_the_header() {
        let empty = Sources {
            kernel: None,
            states: Vec::new(),
            decisions: Vec::new(),
        };
        let rendered = render(&empty, 128);
        assert_eq!(rendered.content, HEADER);
        assert!(!rendered.truncated);
    }
}
