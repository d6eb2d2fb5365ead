//! The columns of one CSV file of an upload: which file of Mailchimp's audience export its
//! header makes it (subscribed, unsubscribed or cleaned members), or a generic file read
//! through a mapping; and one row as the record it imports.

use csv::StringRecord;
use serde_json::{Map, Value, json};

use super::CsvMapping;
use crate::ops::platforms::migrate::records::{Read, Rejected, RemoteContact, RemoteSuppression};

/// What the rows of a file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Mailchimp's `subscribed_members_export_*.csv`: contacts.
    Subscribed,
    /// Mailchimp's `unsubscribed_members_export_*.csv` (`UNSUB_TIME`…): suppressed, unsubscribed.
    Unsubscribed,
    /// Mailchimp's `cleaned_members_export_*.csv` (`CLEAN_TIME`…): suppressed, bounced.
    Cleaned,
    /// A generic file: each row's `status` column says which.
    Generic,
}

/// Mailchimp's own columns, not merge fields: not kept as properties (`TAGS` becomes tags,
/// `EUID` and `LEID` the attribution's id).
const MAILCHIMP_SYSTEM: &[&str] = &[
    "MEMBER_RATING",
    "OPTIN_TIME",
    "OPTIN_IP",
    "CONFIRM_TIME",
    "CONFIRM_IP",
    "LATITUDE",
    "LONGITUDE",
    "GMTOFF",
    "DSTOFF",
    "TIMEZONE",
    "CC",
    "REGION",
    "LAST_CHANGED",
    "LEID",
    "EUID",
    "NOTES",
    "TAGS",
    "UNSUB_TIME",
    "UNSUB_CAMPAIGN_TITLE",
    "UNSUB_CAMPAIGN_ID",
    "UNSUB_REASON",
    "UNSUB_REASON_OTHER",
    "CLEAN_TIME",
    "CLEAN_CAMPAIGN_TITLE",
    "CLEAN_CAMPAIGN_ID",
];

/// Longest property value kept from a cell (longer ones are cut).
const MAX_VALUE_CHARS: usize = 10_000;

/// Why a header cannot be imported: the request field at fault and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    /// `mapping.<field>` for a mapping naming no column; empty for the file's own field.
    pub field: String,
    pub problem: String,
}

/// How the rows of one file are read.
#[derive(Debug, Clone)]
pub struct Columns {
    pub kind: FileKind,
    email: usize,
    first_name: Option<usize>,
    last_name: Option<usize>,
    tags: Option<usize>,
    status: Option<usize>,
    /// Mailchimp's `EUID` (else `LEID`): the attribution's id.
    remote_id: Option<usize>,
    properties: Vec<(String, usize)>,
}

/// A header cell as compared: trimmed, without a leading byte-order mark.
fn cell(name: &str) -> &str {
    name.trim_start_matches('\u{feff}').trim()
}

fn find(header: &StringRecord, name: &str) -> Option<usize> {
    header.iter().position(|h| cell(h) == name)
}

fn find_ignoring_case(header: &StringRecord, name: &str) -> Option<usize> {
    header
        .iter()
        .position(|h| cell(h).eq_ignore_ascii_case(name))
}

/// A merge field's label as a property name: lowercase, runs of other characters than
/// letters and digits as one `_` (`Phone Number` → `phone_number`).
fn property_name(label: &str) -> String {
    let mut name = String::new();
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('_') {
            name.push('_');
        }
    }
    name.trim_end_matches('_').chars().take(100).collect()
}

impl Columns {
    /// A file of Mailchimp's audience export, its kind told by its columns.
    pub fn mailchimp(header: &StringRecord) -> Result<Self, HeaderError> {
        let email = find_ignoring_case(header, "Email Address").ok_or_else(|| HeaderError {
            field: String::new(),
            problem: "has no \"Email Address\" column (Mailchimp's export layout)".to_owned(),
        })?;
        let kind = if find(header, "UNSUB_TIME").is_some() {
            FileKind::Unsubscribed
        } else if find(header, "CLEAN_TIME").is_some() {
            FileKind::Cleaned
        } else {
            FileKind::Subscribed
        };
        let first_name = find_ignoring_case(header, "First Name");
        let last_name = find_ignoring_case(header, "Last Name");
        let mut properties: Vec<(String, usize)> = Vec::new();
        for (at, label) in header.iter().enumerate() {
            let label = cell(label);
            if [Some(email), first_name, last_name].contains(&Some(at))
                || MAILCHIMP_SYSTEM.contains(&label)
            {
                continue;
            }
            let name = property_name(label);
            if !name.is_empty()
                && name != "imported_from"
                && !properties.iter().any(|(n, _)| *n == name)
            {
                properties.push((name, at));
            }
        }
        Ok(Self {
            kind,
            email,
            first_name,
            last_name,
            tags: find(header, "TAGS"),
            status: None,
            remote_id: find(header, "EUID").or_else(|| find(header, "LEID")),
            properties,
        })
    }

    /// A generic file read through `mapping`: every column it names must be in the header.
    pub fn generic(header: &StringRecord, mapping: &CsvMapping) -> Result<Self, HeaderError> {
        let column = |field: &str, name: &str| {
            find(header, cell(name)).ok_or_else(|| HeaderError {
                field: format!("mapping.{field}"),
                problem: format!("names no column of the file ({:?})", clip(name, 100)),
            })
        };
        let optional = |field: &str, name: &Option<String>| {
            name.as_deref().map(|n| column(field, n)).transpose()
        };
        let mut properties = Vec::new();
        for (name, col) in mapping.properties.iter().flatten() {
            properties.push((name.clone(), column(&format!("properties.{name}"), col)?));
        }
        Ok(Self {
            kind: FileKind::Generic,
            email: column("email", &mapping.email)?,
            first_name: optional("first_name", &mapping.first_name)?,
            last_name: optional("last_name", &mapping.last_name)?,
            tags: optional("tags", &mapping.tags)?,
            status: optional("status", &mapping.status)?,
            remote_id: None,
            properties,
        })
    }

    /// Whether the file has rows of the suppressions stage.
    pub fn has_suppressions(&self) -> bool {
        match self.kind {
            FileKind::Unsubscribed | FileKind::Cleaned => true,
            FileKind::Generic => self.status.is_some(),
            FileKind::Subscribed => false,
        }
    }

    /// Whether the file has rows of the contacts stage.
    pub fn has_contacts(&self) -> bool {
        matches!(self.kind, FileKind::Subscribed | FileKind::Generic)
    }

    fn get<'r>(&self, row: &'r StringRecord, at: Option<usize>) -> Option<&'r str> {
        at.and_then(|i| row.get(i))
            .map(str::trim)
            .filter(|v| !v.is_empty())
    }

    /// The row's status: whether it opted out; a value other than `subscribed`,
    /// `unsubscribed` or empty is an error of the row.
    fn opted_out(&self, row: &StringRecord) -> Result<bool, String> {
        match self.get(row, self.status) {
            None => Ok(false),
            Some(s) if s.eq_ignore_ascii_case("subscribed") => Ok(false),
            Some(s) if s.eq_ignore_ascii_case("unsubscribed") => Ok(true),
            Some(_) => Err("status: neither subscribed nor unsubscribed".to_owned()),
        }
    }

    fn address(&self, row: &StringRecord, at: &str) -> Read<String> {
        self.get(row, Some(self.email))
            .and_then(crate::domain::email::normalize)
            .ok_or_else(|| rejected(at, "not a valid email address"))
    }

    /// The row as a suppression, if it is one (`at`: where it is in the upload).
    pub fn suppression(&self, row: &StringRecord, at: &str) -> Option<Read<RemoteSuppression>> {
        let reason = match self.kind {
            FileKind::Unsubscribed => "unsubscribed",
            FileKind::Cleaned => "bounced",
            FileKind::Generic if self.opted_out(row) == Ok(true) => "unsubscribed",
            FileKind::Generic | FileKind::Subscribed => return None,
        };
        Some(
            self.address(row, at)
                .map(|email| RemoteSuppression { email, reason }),
        )
    }

    /// The row as a contact, if it is one; `source` names the layout and `import_id` the run
    /// in the contact's attribution.
    pub fn contact(
        &self,
        row: &StringRecord,
        at: &str,
        source: &str,
        import_id: uuid::Uuid,
    ) -> Option<Read<RemoteContact>> {
        match self.kind {
            FileKind::Subscribed => {}
            FileKind::Generic => match self.opted_out(row) {
                Ok(false) => {}
                Ok(true) => return None,
                Err(why) => return Some(Err(rejected(at, &why))),
            },
            FileKind::Unsubscribed | FileKind::Cleaned => return None,
        }
        let email = match self.address(row, at) {
            Ok(email) => email,
            Err(rejected) => return Some(Err(rejected)),
        };
        let mut properties = Map::new();
        for (name, col) in &self.properties {
            if let Some(value) = self.get(row, Some(*col)) {
                properties.insert(name.clone(), Value::String(clip(value, MAX_VALUE_CHARS)));
            }
        }
        let remote_id = self
            .get(row, self.remote_id)
            .map_or_else(|| at.to_owned(), |id| clip(id, 200));
        properties.insert(
            "imported_from".to_owned(),
            json!({ "platform": source, "id": remote_id, "import_id": import_id }),
        );
        Some(Ok(RemoteContact {
            email,
            first_name: self.get(row, self.first_name).map(str::to_owned),
            last_name: self.get(row, self.last_name).map(str::to_owned),
            properties,
            tags: self.get(row, self.tags).map(tags).unwrap_or_default(),
            subscribed: true,
        }))
    }
}

fn rejected(at: &str, why: &str) -> Rejected {
    Rejected {
        remote_id: at.to_owned(),
        why: why.to_owned(),
    }
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// A cell of tags: separated by commas, each one possibly quoted (Mailchimp writes
/// `"Tag A","Tag B"`).
pub fn tags(cell: &str) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(cell.as_bytes());
    let mut record = StringRecord::new();
    let mut out = Vec::new();
    while let Ok(true) = reader.read_record(&mut record) {
        out.extend(
            record
                .iter()
                .map(|t| t.trim().trim_matches('"').trim())
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailchimp_tags_and_plain_lists_split() {
        assert_eq!(tags(r#""Tag A","Tag B""#), ["Tag A", "Tag B"]);
        assert_eq!(tags("vip, early bird"), ["vip", "early bird"]);
        assert!(tags("").is_empty());
    }

    #[test]
    fn merge_field_labels_become_property_names() {
        assert_eq!(property_name("Phone Number"), "phone_number");
        assert_eq!(property_name(" Birthday (MM/DD) "), "birthday_mm_dd");
        assert_eq!(property_name("***"), "");
    }

    #[test]
    fn a_mailchimp_header_tells_its_kind() {
        let header =
            |cells: &[&str]| Columns::mailchimp(&StringRecord::from(cells.to_vec())).unwrap();
        assert_eq!(
            header(&["\u{feff}Email Address", "First Name", "TAGS"]).kind,
            FileKind::Subscribed
        );
        assert_eq!(
            header(&["Email Address", "UNSUB_TIME"]).kind,
            FileKind::Unsubscribed
        );
        assert_eq!(
            header(&["Email Address", "CLEAN_TIME"]).kind,
            FileKind::Cleaned
        );
        assert!(Columns::mailchimp(&StringRecord::from(vec!["Email", "Name"])).is_err());
    }
}
