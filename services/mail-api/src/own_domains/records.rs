//! The records a domain publishes, and whether what DNS answers for each matches.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Publishing;

/// What a record is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// TXT at the domain: `v=spf1 include:<the deployment's SPF> ~all` (another SPF record of
    /// the domain passes if it has the include).
    Spf,
    /// TXT at `<selector>._domainkey.<domain>`: the domain's public key.
    Dkim,
    /// TXT at `_dmarc.<domain>`: any DMARC policy.
    Dmarc,
    /// CNAME at `bounces.<domain>` to the deployment's bounce domain.
    ReturnPath,
}

impl Purpose {
    pub const ALL: [Self; 4] = [Self::Spf, Self::Dkim, Self::Dmarc, Self::ReturnPath];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Spf => "spf",
            Self::Dkim => "dkim",
            Self::Dmarc => "dmarc",
            Self::ReturnPath => "return_path",
        }
    }
}

/// What the last check found of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    /// Not checked yet.
    Unchecked,
    /// Published as required.
    Found,
    /// The name has no such record, or none that matches.
    Missing,
    /// The resolver did not answer (time-out, server failure): nothing concluded.
    Error,
}

/// The DNS record type of a record to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub enum RecordType {
    #[serde(rename = "TXT")]
    Txt,
    #[serde(rename = "CNAME")]
    Cname,
}

/// A record to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub purpose: Purpose,
    pub record_type: RecordType,
    /// Fully qualified, without the final dot.
    pub name: String,
    pub value: String,
}

/// The label of the return-path name under the domain.
pub const RETURN_PATH_LABEL: &str = "bounces";

/// The records `domain` must publish, with its DKIM `selector` and public key.
pub fn expected(
    publishing: &Publishing,
    domain: &str,
    selector: &str,
    public_key: &str,
) -> Vec<Expected> {
    Purpose::ALL
        .into_iter()
        .map(|purpose| {
            let (record_type, name, value) = match purpose {
                Purpose::Spf => (
                    RecordType::Txt,
                    domain.to_owned(),
                    format!("v=spf1 include:{} ~all", publishing.spf_include),
                ),
                Purpose::Dkim => (
                    RecordType::Txt,
                    format!("{selector}._domainkey.{domain}"),
                    delivery::dkim::record_text(public_key),
                ),
                Purpose::Dmarc => (
                    RecordType::Txt,
                    format!("_dmarc.{domain}"),
                    "v=DMARC1; p=none".to_owned(),
                ),
                Purpose::ReturnPath => (
                    RecordType::Cname,
                    format!("{RETURN_PATH_LABEL}.{domain}"),
                    publishing.return_path_target.clone(),
                ),
            };
            Expected {
                purpose,
                record_type,
                name,
                value,
            }
        })
        .collect()
}

/// Whether one of the `answers` at the record's name (TXT: each record's strings joined; CNAME:
/// the target) satisfies it.
pub fn satisfied(expected: &Expected, publishing: &Publishing, answers: &[String]) -> bool {
    answers.iter().any(|answer| match expected.purpose {
        Purpose::Spf => {
            let lower = answer.to_ascii_lowercase();
            let include = format!("include:{}", publishing.spf_include);
            lower.starts_with("v=spf1") && lower.split_ascii_whitespace().any(|t| t == include)
        }
        Purpose::Dkim => {
            let compact: String = answer.chars().filter(|c| !c.is_whitespace()).collect();
            let wanted: String = expected
                .value
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let key = |text: &str| {
                text.split(';')
                    .find_map(|tag| tag.strip_prefix("p=").map(str::to_owned))
            };
            key(&compact).is_some() && key(&compact) == key(&wanted)
        }
        Purpose::Dmarc => answer
            .trim_start()
            .to_ascii_uppercase()
            .starts_with("V=DMARC1"),
        Purpose::ReturnPath => answer
            .trim_end_matches('.')
            .eq_ignore_ascii_case(&expected.value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publishing() -> Publishing {
        Publishing {
            spf_include: "_spf.send.example".into(),
            return_path_target: "bounces.send.example".into(),
        }
    }

    #[test]
    fn records_and_their_checks() {
        let p = publishing();
        let records = expected(&p, "acme.test", "mk1", "QUJD");
        let by = |purpose| records.iter().find(|r| r.purpose == purpose).unwrap();
        let spf = by(Purpose::Spf);
        assert_eq!(spf.value, "v=spf1 include:_spf.send.example ~all");
        assert!(satisfied(
            spf,
            &p,
            &["v=spf1 mx include:_spf.send.example -all".into()]
        ));
        assert!(!satisfied(
            spf,
            &p,
            &["v=spf1 include:other.example ~all".into()]
        ));
        let dkim = by(Purpose::Dkim);
        assert_eq!(dkim.name, "mk1._domainkey.acme.test");
        assert!(satisfied(dkim, &p, &["v=DKIM1; k=rsa; p=QUJD".into()]));
        assert!(satisfied(dkim, &p, &["v=DKIM1;k=rsa;p=QU JD".into()]));
        assert!(!satisfied(dkim, &p, &["v=DKIM1; k=rsa; p=".into()]));
        assert!(!satisfied(dkim, &p, &[]));
        let dmarc = by(Purpose::Dmarc);
        assert!(satisfied(dmarc, &p, &["v=DMARC1; p=reject".into()]));
        let rp = by(Purpose::ReturnPath);
        assert_eq!(rp.name, "bounces.acme.test");
        assert!(satisfied(rp, &p, &["Bounces.Send.Example.".into()]));
        assert!(!satisfied(rp, &p, &["elsewhere.example.".into()]));
    }
}
