//! AWS Signature Version 4 (header form) for the requests of the Amazon SES provider: the
//! canonical request, the string to sign and the derived signing key, as AWS documents them.

use ring::{digest, hmac};

/// An access key pair.
pub struct Credentials<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
}

/// What is signed: the method, the URL's host, path and query, the headers to sign besides
/// `host` and `x-amz-date`, and the body.
pub struct Request<'a> {
    pub method: &'a str,
    pub host: &'a str,
    /// Already percent-encoded as sent (`/v2/email/outbound-emails`).
    pub path: &'a str,
    /// `(name, value)` pairs, not encoded.
    pub query: &'a [(&'a str, &'a str)],
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
}

/// The scope of a signature: the region and the service (`ses`).
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// RFC 3986 unreserved characters stay; everything else is `%XX` (upper-case hex).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn canonical_request(request: &Request<'_>, amz_date: &str) -> (String, String) {
    let mut query: Vec<(String, String)> = request
        .query
        .iter()
        .map(|(k, v)| (encode(k), encode(v)))
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .chain([
            ("host".to_owned(), request.host.to_owned()),
            ("x-amz-date".to_owned(), amz_date.to_owned()),
        ])
        .collect();
    headers.sort();
    let signed = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let path = if request.path.is_empty() {
        "/"
    } else {
        request.path
    };
    let canonical = format!(
        "{}\n{path}\n{query}\n{canonical_headers}\n{signed}\n{}",
        request.method,
        sha256_hex(request.body)
    );
    (canonical, signed)
}

fn signing_key(secret: &str, date: &str, scope: &Scope<'_>) -> Vec<u8> {
    let k_date = mac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = mac(&k_date, scope.region.as_bytes());
    let k_service = mac(&k_region, scope.service.as_bytes());
    mac(&k_service, b"aws4_request")
}

/// The `Authorization` header of `request` made at `amz_date` (`YYYYMMDDTHHMMSSZ`, also sent
/// as `X-Amz-Date`).
pub fn authorization(
    credentials: &Credentials<'_>,
    scope: &Scope<'_>,
    request: &Request<'_>,
    amz_date: &str,
) -> String {
    let date = &amz_date[..amz_date.len().min(8)];
    let (canonical, signed) = canonical_request(request, amz_date);
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let key = signing_key(credentials.secret_access_key, date, scope);
    let signature = hex(&mac(&key, string_to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}",
        credentials.access_key_id
    )
}

/// Now as `X-Amz-Date` writes it.
pub fn amz_date_now() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: Credentials<'static> = Credentials {
        access_key_id: "AKIDEXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    };

    /// AWS's worked example ("Create a signed AWS API request"): IAM's ListUsers.
    #[test]
    fn the_documented_iam_example_signs_as_documented() {
        let scope = Scope {
            region: "us-east-1",
            service: "iam",
        };
        let request = Request {
            method: "GET",
            host: "iam.amazonaws.com",
            path: "/",
            query: &[("Action", "ListUsers"), ("Version", "2010-05-08")],
            headers: &[(
                "Content-Type",
                "application/x-www-form-urlencoded; charset=utf-8",
            )],
            body: b"",
        };
        let (canonical, signed) = canonical_request(&request, "20150830T123600Z");
        assert_eq!(signed, "content-type;host;x-amz-date");
        assert_eq!(
            sha256_hex(canonical.as_bytes()),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59",
            "{canonical}"
        );
        assert_eq!(
            hex(&signing_key(EXAMPLE.secret_access_key, "20150830", &scope)),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        assert_eq!(
            authorization(&EXAMPLE, &scope, &request, "20150830T123600Z"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn query_values_are_encoded_and_sorted() {
        let request = Request {
            method: "GET",
            host: "example.amazonaws.com",
            path: "/",
            query: &[("b", "x y"), ("a", "é/")],
            headers: &[],
            body: b"",
        };
        let (canonical, _) = canonical_request(&request, "20150830T123600Z");
        assert!(canonical.contains("\na=%C3%A9%2F&b=x%20y\n"), "{canonical}");
    }
}
