//! The built-in markdown checks, needing no external tool: unclosed code fences, heading
//! levels that skip, relative links to files that do not exist, trailing whitespace, and
//! over-long lines when a limit is set. Pure: the caller says which link targets exist.

use std::sync::OnceLock;

use regex::Regex;

use crate::model::queue_line::check::Finding;

/// What the checks are told.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Longest line allowed (characters), outside code blocks; `None`: no limit.
    pub max_line_length: Option<usize>,
}

/// The findings in `text`, the markdown file `file`; `exists` says whether a relative link's
/// target (as written, anchor and query removed) exists next to the file.
pub fn check(
    file: &str,
    text: &str,
    options: Options,
    exists: &dyn Fn(&str) -> bool,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut add = |rule: &str, line: usize, message: String| {
        findings.push(Finding {
            rule: rule.to_string(),
            file: Some(file.to_string()),
            line: Some(line as u64),
            message: Some(message),
        })
    };
    let mut fence: Option<(usize, String)> = None;
    let mut last_level = 0usize;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim_start();
        if let Some(marker) = fence_marker(trimmed) {
            match &fence {
                None => fence = Some((n, marker)),
                Some((_, open))
                    if marker.starts_with(&open[..1])
                        && marker.len() >= open.len()
                        && trimmed[marker.len()..].trim().is_empty() =>
                {
                    fence = None
                }
                Some(_) => {}
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if line.ends_with([' ', '\t']) && !is_hard_break(line) {
            add("trailing-whitespace", n, "trailing whitespace".into());
        }
        if let Some(max) = options.max_line_length {
            let len = line.chars().count();
            if len > max && !is_bare_link(trimmed) {
                add(
                    "line-too-long",
                    n,
                    format!("{len} characters, more than {max}"),
                );
            }
        }
        if let Some(level) = heading_level(trimmed) {
            if last_level > 0 && level > last_level + 1 {
                add(
                    "heading-skip",
                    n,
                    format!("heading level {level} after level {last_level}"),
                );
            }
            last_level = level;
        }
        for target in link_targets(line) {
            if is_relative_file(&target) && !exists(&clean_target(&target)) {
                add(
                    "broken-link",
                    n,
                    format!("link target {target} does not exist"),
                );
            }
        }
    }
    if let Some((n, marker)) = fence {
        add(
            "unclosed-fence",
            n,
            format!("code fence {marker} is never closed"),
        );
    }
    findings
}

/// Exactly two trailing spaces after text: markdown's hard line break.
fn is_hard_break(line: &str) -> bool {
    line.ends_with("  ") && !line.ends_with("   ") && !line.trim().is_empty()
}

/// The fence marker a line opens or closes with (three or more backticks or tildes).
fn fence_marker(trimmed: &str) -> Option<String> {
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|x| *x == c).count();
    (run >= 3).then(|| c.to_string().repeat(run))
}

/// The level of an ATX heading (`## Title`), if the line is one.
fn heading_level(trimmed: &str) -> Option<usize> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    let rest = &trimmed[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with([' ', '\t'])))
        .then_some(level)
}

/// A line that is only a link or URL cannot be made shorter.
fn is_bare_link(trimmed: &str) -> bool {
    !trimmed.contains(' ') || trimmed.starts_with('[') && trimmed.ends_with(')')
}

/// The targets of inline links and images on a line, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    static LINK: OnceLock<Regex> = OnceLock::new();
    let re = LINK.get_or_init(|| {
        Regex::new(r#"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#)
            .expect("link pattern compiles")
    });
    let without_code = strip_code_spans(line);
    re.captures_iter(&without_code)
        .map(|c| c[1].to_string())
        .collect()
}

fn strip_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// A link to a file of the repository: no scheme, not an anchor, not absolute.
fn is_relative_file(target: &str) -> bool {
    !(target.starts_with('#')
        || target.starts_with('/')
        || target.starts_with("//")
        || target.contains("://")
        || target.starts_with("mailto:")
        || target.starts_with("tel:")
        || target.starts_with("data:"))
}

/// The path part of a link target: anchor and query removed, `%20` decoded.
fn clean_target(target: &str) -> String {
    let path = target.split(['#', '?']).next().unwrap_or(target);
    path.replace("%20", " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str, max: Option<usize>) -> Vec<(String, u64)> {
        let exists = |p: &str| p == "exists.md" || p == "dir/other file.md";
        check(
            "doc.md",
            text,
            Options {
                max_line_length: max,
            },
            &exists,
        )
        .into_iter()
        .map(|f| (f.rule, f.line.unwrap()))
        .collect()
    }

    #[test]
    fn a_clean_file_has_no_findings() {
        let text = "# Title\n\nText with a [link](exists.md#part), [web](https://x.y),\n\
                    an [anchor](#title) and a hard break  \nhere.\n\n## Part\n\n```sh\n# not a heading\n   \n```\n\n### Sub\n\n[spaced](dir/other%20file.md)\n";
        assert_eq!(rules(text, Some(80)), []);
    }

    #[test]
    fn each_problem_is_found_at_its_line() {
        let text = "# Title\n### Skipped\ntrailing \nsee [gone](missing.md) and `[x](code.md)`\n\
                    a very long line indeed\n~~~\nnever closed\n";
        assert_eq!(
            rules(text, Some(20)),
            [
                ("heading-skip".to_string(), 2),
                ("trailing-whitespace".to_string(), 3),
                ("line-too-long".to_string(), 4),
                ("broken-link".to_string(), 4),
                ("line-too-long".to_string(), 5),
                ("unclosed-fence".to_string(), 6),
            ]
        );
        assert_eq!(rules("a long line of words here", None), []);
    }

    #[test]
    fn a_longer_fence_is_closed_only_by_as_long_a_one() {
        assert_eq!(rules("````\n```\n````\n", None), []);
        assert_eq!(
            rules("````md\n```\n", None),
            [("unclosed-fence".to_string(), 1)]
        );
    }
}
