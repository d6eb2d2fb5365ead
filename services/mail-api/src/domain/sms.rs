//! SMS rules without I/O: segments counted as carriers count them (GSM 03.38 with its
//! extension table, else UCS-2), the per-country price table, E.164 numbers, the consent
//! keywords and their TwiML answers, quiet hours, and Twilio's request signature.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, NaiveTime, TimeZone as _, Utc};
use chrono_tz::Tz;

/// GSM 03.38's default alphabet (one septet each; the escape 0x1B itself is not a character).
const GSM7_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?\
¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
/// Its extension table: each is the escape and a septet (two septets).
const GSM7_EXTENSION: &str = "^{}\\[~]|€\u{0C}";

/// Septets or UTF-16 units in one message alone, and per part of a concatenated one (the
/// User Data Header of a concatenated message takes 6 octets: 7 septets, 3 UTF-16 units).
pub const GSM7_SINGLE: usize = 160;
pub const GSM7_PART: usize = 153;
pub const UCS2_SINGLE: usize = 70;
pub const UCS2_PART: usize = 67;

/// How a body is encoded on the air.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gsm7,
    Ucs2,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gsm7 => "gsm7",
            Self::Ucs2 => "ucs2",
        }
    }
}

/// A body's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segments {
    pub encoding: Encoding,
    /// Characters (Unicode scalar values).
    pub characters: usize,
    /// Septets (GSM-7) or UTF-16 code units (UCS-2).
    pub units: usize,
    pub segments: usize,
    /// Units that fit in one segment as the body is split (160/153 or 70/67).
    pub units_per_segment: usize,
}

fn gsm7_width(c: char) -> Option<usize> {
    if GSM7_BASIC.contains(c) {
        Some(1)
    } else if GSM7_EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// Counts `body`'s segments. A character is never split across two parts (an escaped GSM-7
/// character keeps its two septets together, a surrogate pair its two units), as handsets and
/// carriers split.
pub fn count_segments(body: &str) -> Segments {
    let characters = body.chars().count();
    let gsm: Option<Vec<usize>> = body.chars().map(gsm7_width).collect();
    let (encoding, widths, single, part) = match gsm {
        Some(widths) => (Encoding::Gsm7, widths, GSM7_SINGLE, GSM7_PART),
        None => (
            Encoding::Ucs2,
            body.chars().map(char::len_utf16).collect(),
            UCS2_SINGLE,
            UCS2_PART,
        ),
    };
    let units: usize = widths.iter().sum();
    if units <= single {
        return Segments {
            encoding,
            characters,
            units,
            segments: 1,
            units_per_segment: single,
        };
    }
    let mut segments = 1;
    let mut used = 0;
    for width in widths {
        if used + width > part {
            segments += 1;
            used = 0;
        }
        used += width;
    }
    Segments {
        encoding,
        characters,
        units,
        segments,
        units_per_segment: part,
    }
}

/// The price table of the configuration: `US=0.0083,GB=0.0524,*=0.05` (ISO 3166 alpha-2
/// country codes, price per segment; `*` for any other country).
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    prices: Vec<(String, f64)>,
    fallback: Option<f64>,
}

impl PriceTable {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut table = Self::default();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (country, price) = entry
                .split_once('=')
                .ok_or_else(|| format!("{entry:?} is not COUNTRY=PRICE"))?;
            let price: f64 = price
                .trim()
                .parse()
                .ok()
                .filter(|p: &f64| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| format!("{entry:?}: the price is not a number >= 0"))?;
            let country = country.trim().to_ascii_uppercase();
            if country == "*" {
                table.fallback = Some(price);
            } else if country.len() == 2 && country.chars().all(|c| c.is_ascii_uppercase()) {
                table.prices.push((country, price));
            } else {
                return Err(format!("{entry:?}: not an ISO 3166 alpha-2 country code"));
            }
        }
        Ok(table)
    }

    /// The price of one segment to `country` (alpha-2), if the table has one.
    pub fn per_segment(&self, country: &str) -> Option<f64> {
        self.prices
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(country))
            .map(|(_, p)| *p)
            .or(self.fallback)
    }
}

/// A valid number as E.164 (`+14155550123`) with its country (alpha-2), or why not.
pub fn parse_e164(raw: &str) -> Result<(String, Option<String>), &'static str> {
    let number = phonenumber::parse(None, raw.trim())
        .map_err(|_| "is not a phone number in international format (+ and the country code)")?;
    if !phonenumber::is_valid(&number) {
        return Err("is not a valid phone number");
    }
    let e164 = number.format().mode(phonenumber::Mode::E164).to_string();
    let country = number.country().id().map(|id| id.as_ref().to_owned());
    Ok((e164, country))
}

/// What an inbound text asks for, by its keyword (the whole text, case and surrounding
/// punctuation ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Stop,
    Start,
    Help,
}

impl Keyword {
    pub fn of(body: &str) -> Option<Self> {
        let word: String = body
            .trim()
            .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
            .to_uppercase();
        match word.as_str() {
            "STOP" | "STOPALL" | "STOP ALL" | "UNSUBSCRIBE" | "CANCEL" | "END" | "QUIT"
            | "OPTOUT" | "REVOKE" => Some(Self::Stop),
            "START" | "YES" | "UNSTOP" | "OPTIN" => Some(Self::Start),
            "HELP" | "INFO" => Some(Self::Help),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Start => "start",
            Self::Help => "help",
        }
    }

    /// The reply carriers require (CTIA): the opt-out confirmed, the opt-in confirmed, or
    /// how to stop.
    pub fn reply(self) -> &'static str {
        match self {
            Self::Stop => {
                "You are unsubscribed and will receive no more messages. Reply START to resubscribe."
            }
            Self::Start => {
                "You are subscribed again. Msg&data rates may apply. Reply HELP for help, STOP to unsubscribe."
            }
            Self::Help => {
                "Msg&data rates may apply. Reply STOP to unsubscribe, START to resubscribe."
            }
        }
    }
}

/// A TwiML answer: one `<Message>`, or an empty `<Response/>` (no reply).
pub fn twiml(reply: Option<&str>) -> String {
    let head = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
    match reply {
        Some(text) => format!(
            "{head}<Response><Message>{}</Message></Response>",
            xml_escape(text)
        ),
        None => format!("{head}<Response/>"),
    }
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Quiet hours: from `start` to `end` local time (across midnight when `end` is earlier).
#[derive(Debug, Clone, Copy)]
pub struct QuietHours {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl QuietHours {
    pub fn parse(start: &str, end: &str) -> Result<Self, String> {
        let time = |s: &str| {
            NaiveTime::parse_from_str(s.trim(), "%H:%M").map_err(|_| format!("{s:?} is not HH:MM"))
        };
        Ok(Self {
            start: time(start)?,
            end: time(end)?,
        })
    }

    fn quiet_at(&self, t: NaiveTime) -> bool {
        if self.start == self.end {
            false
        } else if self.start < self.end {
            t >= self.start && t < self.end
        } else {
            t >= self.start || t < self.end
        }
    }

    /// When a text due `now` may go to someone in `tz`: `now`, or the end of the quiet hours
    /// it falls in.
    pub fn release_at(&self, now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
        let local = now.with_timezone(&tz);
        if !self.quiet_at(local.time()) {
            return now;
        }
        let mut day = local.date_naive();
        if local.time() >= self.end && self.start > self.end {
            day = day.succ_opt().unwrap_or(day);
        }
        // The first instant at or after the end (a gap in the local clock moves it on).
        for minutes in 0..=180 {
            let t = day.and_time(self.end) + chrono::TimeDelta::minutes(minutes);
            if let Some(at) = tz.from_local_datetime(&t).earliest() {
                return at.with_timezone(&Utc).max(now);
            }
        }
        now
    }
}

/// Twilio's request signature: base64(HMAC-SHA1(auth token, the full URL Twilio requested
/// followed by each POST parameter's name and value, sorted by name)).
pub fn twilio_signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let key = ring::hmac::Key::new(
        ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        auth_token.as_bytes(),
    );
    STANDARD.encode(ring::hmac::sign(&key, &signed_data(url, params)).as_ref())
}

fn signed_data(url: &str, params: &[(String, String)]) -> Vec<u8> {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut data = url.as_bytes().to_vec();
    for (name, value) in sorted {
        data.extend_from_slice(name.as_bytes());
        data.extend_from_slice(value.as_bytes());
    }
    data
}

/// Whether `signature` (the `X-Twilio-Signature` header) is the request's, compared in
/// constant time.
pub fn twilio_signature_valid(
    auth_token: &str,
    url: &str,
    params: &[(String, String)],
    signature: &str,
) -> bool {
    let Ok(tag) = STANDARD.decode(signature.trim()) else {
        return false;
    };
    let key = ring::hmac::Key::new(
        ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        auth_token.as_bytes(),
    );
    ring::hmac::verify(&key, &signed_data(url, params), &tag).is_ok()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    fn count(body: &str) -> (Encoding, usize, usize) {
        let s = count_segments(body);
        (s.encoding, s.units, s.segments)
    }

    #[test]
    fn gsm7_bodies_are_counted_in_septets() {
        assert_eq!(count("Hello"), (Encoding::Gsm7, 5, 1));
        assert_eq!(count(&"a".repeat(160)), (Encoding::Gsm7, 160, 1));
        // 161 septets: two parts of at most 153.
        assert_eq!(count(&"a".repeat(161)), (Encoding::Gsm7, 161, 2));
        assert_eq!(count(&"a".repeat(306)), (Encoding::Gsm7, 306, 2));
        assert_eq!(count(&"a".repeat(307)), (Encoding::Gsm7, 307, 3));
        // Accented letters of the default alphabet stay GSM-7.
        assert_eq!(count("Café à Malmö ÆØÅ"), (Encoding::Gsm7, 16, 1));
    }

    #[test]
    fn extension_characters_take_two_septets_and_are_never_split() {
        // "€" and "{" are escaped: 2 septets each.
        assert_eq!(count("Price: 5€ {promo}"), (Encoding::Gsm7, 20, 1));
        assert_eq!(count(&"€".repeat(80)), (Encoding::Gsm7, 160, 1));
        // 81 euro signs: 162 septets; 76 per part (152 septets, the 153rd would split one).
        assert_eq!(count(&"€".repeat(81)), (Encoding::Gsm7, 162, 2));
        // 159 letters then "€": 161 septets, two parts.
        let body = format!("{}€", "a".repeat(159));
        assert_eq!(count(&body), (Encoding::Gsm7, 161, 2));
        // 152 letters + "€" (2) straddles 153: the escape moves to the second part.
        let body = format!("{}€{}", "a".repeat(152), "b".repeat(10));
        assert_eq!(count(&body), (Encoding::Gsm7, 164, 2));
    }

    #[test]
    fn other_bodies_are_ucs2_and_emoji_count_two_units() {
        assert_eq!(count("Привет"), (Encoding::Ucs2, 6, 1));
        assert_eq!(count(&"я".repeat(70)), (Encoding::Ucs2, 70, 1));
        assert_eq!(count(&"я".repeat(71)), (Encoding::Ucs2, 71, 2));
        assert_eq!(count(&"я".repeat(134)), (Encoding::Ucs2, 134, 2));
        assert_eq!(count(&"я".repeat(135)), (Encoding::Ucs2, 135, 3));
        // One emoji makes the whole body UCS-2; outside the BMP it takes a surrogate pair.
        assert_eq!(count("Hi 👋"), (Encoding::Ucs2, 5, 1));
        assert_eq!(count(&"😀".repeat(35)), (Encoding::Ucs2, 70, 1));
        // 36 emoji: 72 units; 33 per part (66 units; the 67th would split a pair).
        assert_eq!(count(&"😀".repeat(36)), (Encoding::Ucs2, 72, 2));
        assert_eq!(count(&"😀".repeat(67)), (Encoding::Ucs2, 134, 3));
        // A character outside both GSM-7 tables forces UCS-2 ("ł" is not in them).
        assert_eq!(count("Łódź"), (Encoding::Ucs2, 4, 1));
    }

    #[test]
    fn numbers_are_stored_as_e164_with_their_country() {
        assert_eq!(
            parse_e164("+1 (415) 555-2671").unwrap(),
            ("+14155552671".to_owned(), Some("US".to_owned()))
        );
        assert_eq!(
            parse_e164("+44 7400 123456").unwrap(),
            ("+447400123456".to_owned(), Some("GB".to_owned()))
        );
        assert!(parse_e164("4155552671").is_err());
        assert!(parse_e164("+1 555").is_err());
    }

    #[test]
    fn keywords_and_their_replies() {
        for stop in [
            "STOP",
            "stop",
            " Stop. ",
            "STOPALL",
            "unsubscribe",
            "Cancel",
            "END",
            "quit",
        ] {
            assert_eq!(Keyword::of(stop), Some(Keyword::Stop), "{stop}");
        }
        for start in ["START", "yes", "Unstop"] {
            assert_eq!(Keyword::of(start), Some(Keyword::Start), "{start}");
        }
        assert_eq!(Keyword::of("help"), Some(Keyword::Help));
        assert_eq!(Keyword::of("please stop texting me"), None);
        assert_eq!(
            twiml(Some("A & B")),
            r#"<?xml version="1.0" encoding="UTF-8"?><Response><Message>A &amp; B</Message></Response>"#
        );
        assert_eq!(
            twiml(None),
            r#"<?xml version="1.0" encoding="UTF-8"?><Response/>"#
        );
    }

    #[test]
    fn the_price_table_has_a_fallback() {
        let table = PriceTable::parse("US=0.0083, gb=0.05,*=0.1").unwrap();
        assert_eq!(table.per_segment("US"), Some(0.0083));
        assert_eq!(table.per_segment("GB"), Some(0.05));
        assert_eq!(table.per_segment("FR"), Some(0.1));
        assert!(PriceTable::parse("USA=1").is_err());
        assert!(PriceTable::parse("US=-1").is_err());
    }

    #[test]
    fn quiet_hours_hold_until_their_end_in_the_contacts_zone() {
        let quiet = QuietHours::parse("21:00", "08:00").unwrap();
        let ny: Tz = "America/New_York".parse().unwrap();
        // 03:00 UTC is 22:00 in New York (EST): held until 08:00 EST, 13:00 UTC.
        let now = Utc.with_ymd_and_hms(2027, 1, 8, 3, 0, 0).unwrap();
        assert_eq!(
            quiet.release_at(now, ny),
            Utc.with_ymd_and_hms(2027, 1, 8, 13, 0, 0).unwrap()
        );
        // 11:00 UTC is 06:00 in New York: the same morning's 08:00.
        let now = Utc.with_ymd_and_hms(2027, 1, 8, 11, 0, 0).unwrap();
        assert_eq!(
            quiet.release_at(now, ny),
            Utc.with_ymd_and_hms(2027, 1, 8, 13, 0, 0).unwrap()
        );
        // 17:00 UTC is noon: now.
        let now = Utc.with_ymd_and_hms(2027, 1, 8, 17, 0, 0).unwrap();
        assert_eq!(quiet.release_at(now, ny), now);
    }

    #[test]
    fn twilio_signatures_match_twilios_documented_example() {
        // Twilio's documentation example (auth token 12345).
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let params: Vec<(String, String)> = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let signature = twilio_signature("12345", url, &params);
        assert_eq!(signature, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
        assert!(twilio_signature_valid("12345", url, &params, &signature));
        assert!(!twilio_signature_valid("12346", url, &params, &signature));
        assert!(!twilio_signature_valid(
            "12345",
            url,
            &params,
            "not base64!"
        ));
    }
}
