//! robots.txt: whether a path may be read by the watch's user agent (the group naming it,
//! else the `*` group; the longest matching `Allow`/`Disallow` wins, `Allow` on a tie; `*`
//! matches any run of characters and a final `$` anchors the end).

/// The user agent the watch reads pages as, and the robots.txt token that names it.
pub const USER_AGENT: &str = "memory-competitor-watch/1";
pub const ROBOTS_TOKEN: &str = "memory-competitor-watch";

/// The rules of robots.txt that apply to the watch.
#[derive(Debug, Default, Clone)]
pub struct Robots {
    /// (allow, pattern).
    rules: Vec<(bool, String)>,
}

impl Robots {
    /// Everything allowed (no robots.txt, or one that could not be read as such).
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// The rules of the group for [`ROBOTS_TOKEN`], else of the `*` group.
    pub fn parse(text: &str) -> Self {
        let mut ours = Vec::new();
        let mut any = Vec::new();
        let mut named_ours = false;
        // The agents of the group being read, and whether its rules started.
        let mut agents: Vec<String> = Vec::new();
        let mut in_rules = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default().trim();
            let Some((field, value)) = line.split_once(':') else {
                continue;
            };
            let (field, value) = (field.trim().to_ascii_lowercase(), value.trim());
            match field.as_str() {
                "user-agent" => {
                    if in_rules {
                        agents.clear();
                        in_rules = false;
                    }
                    agents.push(value.to_ascii_lowercase());
                }
                "allow" | "disallow" => {
                    in_rules = true;
                    // An empty Disallow allows everything: no rule.
                    if value.is_empty() {
                        continue;
                    }
                    let rule = (field == "allow", value.to_owned());
                    if agents
                        .iter()
                        .any(|a| ROBOTS_TOKEN.starts_with(a.as_str()) && a != "*")
                    {
                        named_ours = true;
                        ours.push(rule.clone());
                    }
                    if agents.iter().any(|a| a == "*") {
                        any.push(rule);
                    }
                }
                _ => {}
            }
        }
        Self {
            rules: if named_ours { ours } else { any },
        }
    }

    /// Whether `path` (with its query) may be read.
    pub fn allows(&self, path: &str) -> bool {
        let best = self
            .rules
            .iter()
            .filter(|(_, pattern)| matches(pattern, path))
            .max_by_key(|(allow, pattern)| (pattern.len(), *allow));
        best.is_none_or(|(allow, _)| *allow)
    }
}

fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if last && anchored {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    !anchored || rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_group_wins_over_the_star_group() {
        let robots = Robots::parse(
            "User-agent: *\nDisallow: /\n\nUser-agent: memory-competitor-watch\nDisallow: /private\nAllow: /private/ok\n",
        );
        assert!(robots.allows("/pricing"));
        assert!(!robots.allows("/private/x"));
        assert!(robots.allows("/private/ok/y"));
    }

    #[test]
    fn the_star_group_applies_otherwise_with_wildcards() {
        let robots = Robots::parse(
            "User-agent: other\nDisallow: /\nUser-agent: *\nDisallow: /blog/*.pdf$\nDisallow: /tmp\n",
        );
        assert!(robots.allows("/blog/post"));
        assert!(!robots.allows("/blog/a/b.pdf"));
        assert!(robots.allows("/blog/a/b.pdf?x"));
        assert!(!robots.allows("/tmp/x"));
        assert!(Robots::parse("User-agent: *\nDisallow:\n").allows("/x"));
        assert!(Robots::allow_all().allows("/"));
    }
}
