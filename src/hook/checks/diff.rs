//! The commit scan's input: the lines a commit adds, by file and line, read from
//! `git show --format=%H --unified=0`, and cmstore's secret patterns run over them.

use crate::model::queue_line::check::Finding;
use crate::model::redact::Redactor;

/// One added line of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added<'a> {
    /// The file, relative to the repository.
    pub file: &'a str,
    /// The line's number in the new file.
    pub line: u64,
    pub text: &'a str,
}

/// A commit's hash and added lines, from `git show --format=%H --unified=0 <rev>` output.
pub fn added_lines(show: &str) -> (Option<&str>, Vec<Added<'_>>) {
    let mut lines = show.lines();
    let hash = lines
        .next()
        .map(str::trim)
        .filter(|h| h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let mut out = Vec::new();
    let mut file: Option<&str> = None;
    let mut next_line = 0u64;
    // Lines still to come in the current hunk, old and new: inside a hunk, a line is content
    // whatever it starts with (an added `++ x` is not a `+++` header).
    let (mut old_left, mut new_left) = (0u64, 0u64);
    for line in show.lines().skip(usize::from(hash.is_some())) {
        if old_left > 0 || new_left > 0 {
            if let Some(text) = line.strip_prefix('+') {
                if let Some(f) = file {
                    out.push(Added {
                        file: f,
                        line: next_line,
                        text,
                    });
                }
                next_line += 1;
                new_left = new_left.saturating_sub(1);
            } else if line.starts_with('-') {
                old_left = old_left.saturating_sub(1);
            } else if !line.starts_with('\\') {
                // A context line (not sent with --unified=0, but read right if it is).
                next_line += 1;
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
        } else if let Some(path) = line.strip_prefix("+++ ") {
            file = (path != "/dev/null").then(|| path.strip_prefix("b/").unwrap_or(path));
        } else if let Some(hunk) = line.strip_prefix("@@ ") {
            let (start, old, new) = hunk_range(hunk);
            (next_line, old_left, new_left) = (start, old, new);
        }
    }
    (hash, out)
}

/// A hunk header's new start line and its old and new line counts (`-a,b +c,d`; a count
/// left out is 1).
fn hunk_range(hunk: &str) -> (u64, u64, u64) {
    let range = |prefix: char| -> (u64, u64) {
        let Some(part) = hunk.split_whitespace().find(|p| p.starts_with(prefix)) else {
            return (0, 0);
        };
        let mut nums = part[1..].split(',');
        let start = nums.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let count = nums.next().map_or(Some(1), |n| n.parse().ok()).unwrap_or(0);
        (start, count)
    };
    let (_, old) = range('-');
    let (start, new) = range('+');
    (start, old, new)
}

/// The secrets among `added`, by rule, file and line: never the value.
pub fn secrets(added: &[Added<'_>], redactor: &Redactor) -> Vec<Finding> {
    added
        .iter()
        .filter(|a| redactor.may_match(a.text))
        .flat_map(|a| {
            redactor.kinds_in(a.text).into_iter().map(|kind| Finding {
                rule: kind.to_string(),
                file: Some(a.file.to_string()),
                line: Some(a.line),
                message: Some(format!("{kind} added")),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOW: &str = "0123456789abcdef0123456789abcdef01234567\n\
diff --git a/app.py b/app.py\n\
--- a/app.py\n\
+++ b/app.py\n\
@@ -3,0 +4,2 @@ def main():\n\
+KEY = \"AKIAIOSFODNN7EXAMPLE\"\n\
+print(KEY)\n\
diff --git a/new.txt b/new.txt\n\
new file mode 100644\n\
--- /dev/null\n\
+++ b/new.txt\n\
@@ -0,0 +1 @@\n\
+++counter\n\
diff --git a/gone.txt b/gone.txt\n\
--- a/gone.txt\n\
+++ /dev/null\n\
@@ -1 +0,0 @@\n\
-old\n";

    #[test]
    fn added_lines_carry_their_file_and_new_line_number() {
        let (hash, added) = added_lines(SHOW);
        assert_eq!(hash, Some("0123456789abcdef0123456789abcdef01234567"));
        let got: Vec<_> = added.iter().map(|a| (a.file, a.line, a.text)).collect();
        assert_eq!(
            got,
            [
                ("app.py", 4, "KEY = \"AKIAIOSFODNN7EXAMPLE\""),
                ("app.py", 5, "print(KEY)"),
                ("new.txt", 1, "++counter"),
            ]
        );
    }

    #[test]
    fn secrets_are_reported_by_rule_and_place_only() {
        let (_, added) = added_lines(SHOW);
        let found = secrets(&added, &Redactor::new(&[]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, "aws-key");
        assert_eq!(found[0].file.as_deref(), Some("app.py"));
        assert_eq!(found[0].line, Some(4));
        let text = serde_json::to_string(&found).unwrap();
        assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");
    }
}
