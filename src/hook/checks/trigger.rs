//! Which checks an event asks for, with no I/O: the edited files of a file-editing tool call,
//! or a successful shell call that ran `git commit` (or `git push`).

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::{glob, Job, Kind};
use crate::config::checks::Checks;
use crate::config::Mode;
use crate::model::queue_line::{HookType, QueueEntry};

/// Keys under which a tool input names the file it edits.
const PATH_KEYS: &[&str] = &["file_path", "filePath", "path", "notebook_path", "filename"];

/// Keys under which a tool input holds a patch (`apply_patch`).
const PATCH_KEYS: &[&str] = &["input", "patch", "command", "diff"];

/// Keys of lists of edits or files, each naming a file.
const LIST_KEYS: &[&str] = &["files", "replacements", "edits", "changes"];

/// The checks a PostToolUse `entry` (with its tool input) asks for; empty for any other event,
/// and whenever no check is configured.
pub fn jobs(
    checks: &Checks,
    redact: &[String],
    hook_type: Option<HookType>,
    input: Option<&Value>,
    entry: &QueueEntry,
) -> Vec<Job> {
    if checks.is_empty() || hook_type != Some(HookType::PostToolUse) {
        return Vec::new();
    }
    let (Some(tool), Some(cwd)) = (entry.tool_name.as_deref(), entry.cwd.as_deref()) else {
        return Vec::new();
    };
    let base = base_entry(entry);
    let job = |kind: Kind, mode: Mode, timeout_ms: u64, files: Vec<String>| Job {
        kind,
        mode: mode_name(mode).to_string(),
        timeout_ms,
        cwd: cwd.to_string(),
        files,
        command: None,
        max_line_length: None,
        redact: redact.to_vec(),
        // An id of its own: two checks of one event are two results.
        entry: QueueEntry {
            id: crate::model::queue_line::new_id(),
            ..base.clone()
        },
        queue: None,
    };
    let mut jobs = Vec::new();
    if crate::model::safety::is_edit_tool(tool) {
        let files = input.map(edited_files).unwrap_or_default();
        if files.is_empty() {
            return jobs;
        }
        if let Some(format) = &checks.format {
            for c in &format.commands {
                let matching = matching(&files, &c.patterns);
                if !matching.is_empty() {
                    let mut j = job(Kind::Format, format.mode, format.timeout_ms, matching);
                    j.command = Some(c.command.clone());
                    jobs.push(j);
                }
            }
        }
        if let Some(md) = &checks.markdown {
            let matching = matching(&files, &md.patterns);
            if !matching.is_empty() {
                let mut j = job(Kind::Markdown, md.mode, md.timeout_ms, matching);
                j.command.clone_from(&md.command);
                j.max_line_length = md.max_line_length;
                jobs.push(j);
            }
        }
    } else if let Some(sec) = &checks.security {
        let command = input.and_then(crate::model::safety::shell_command);
        let ran = crate::model::safety::is_shell_tool(tool)
            && succeeded(entry)
            && command
                .as_deref()
                .is_some_and(|c| runs_git(c, "commit") || (sec.on_push && runs_git(c, "push")));
        if ran {
            let mut j = job(Kind::Security, sec.mode, sec.timeout_ms, Vec::new());
            j.command.clone_from(&sec.command);
            jobs.push(j);
        }
    }
    jobs
}

/// `audit` or `enforce`.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Audit => "audit",
        Mode::Enforce => "enforce",
    }
}

/// The `CheckResult` entry's fields that come from the triggering event.
fn base_entry(trigger: &QueueEntry) -> QueueEntry {
    let mut e = QueueEntry::new(HookType::CheckResult.as_str(), trigger.timestamp);
    e.session_id.clone_from(&trigger.session_id);
    e.participant.clone_from(&trigger.participant);
    e.cwd.clone_from(&trigger.cwd);
    e.root_hint.clone_from(&trigger.root_hint);
    e.origin.clone_from(&trigger.origin);
    e.agent.clone_from(&trigger.agent);
    e.event = Some("check".to_string());
    e.tool_call_id.clone_from(&trigger.tool_call_id);
    e.turn_id.clone_from(&trigger.turn_id);
    e.model.clone_from(&trigger.model);
    e
}

/// True unless the agent said the call failed.
fn succeeded(entry: &QueueEntry) -> bool {
    entry.tool_failed != Some(true)
        && entry.exit_code.is_none_or(|c| c == 0)
        && entry.tool_result_type.as_deref() != Some("failure")
}

/// True when the command line runs `git <sub>` (`git commit -m …`, `git -C dir commit`,
/// `cd x && git commit`), in any of its `&&`/`;`/`|` parts.
pub fn runs_git(command: &str, sub: &str) -> bool {
    static GIT: OnceLock<Regex> = OnceLock::new();
    let re = GIT.get_or_init(|| {
        Regex::new(
            r"(?:^|[;&|(\s])git(?:\s+(?:-[Cc]\s+\S+|--[\w-]+=\S+|--?[\w-]+))*\s+(commit|push)(?:$|[\s;&|)])",
        )
        .expect("git pattern compiles")
    });
    re.captures_iter(command).any(|c| &c[1] == sub)
}

/// The files of `files` matching any of `patterns`.
fn matching(files: &[String], patterns: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| patterns.iter().any(|p| glob::matches(p, f)))
        .cloned()
        .collect()
}

/// The files a file-editing tool's input names, in order, each once: a path under the usual
/// keys, the entries of a list of edits, or the file headers of a patch (`apply_patch`).
pub fn edited_files(input: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_paths(input, 0, &mut out);
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| !p.trim().is_empty() && seen.insert(p.clone()));
    out
}

fn collect_paths(value: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > 3 {
        return;
    }
    match value {
        Value::String(s) if depth > 0 && !s.contains('\n') => out.push(s.clone()),
        Value::String(s) => out.extend(patch_files(s)),
        Value::Array(items) => items.iter().for_each(|v| collect_paths(v, depth + 1, out)),
        Value::Object(map) => {
            for key in PATH_KEYS {
                if let Some(Value::String(s)) = map.get(*key) {
                    out.push(s.clone());
                }
            }
            for key in LIST_KEYS {
                if let Some(v @ Value::Array(_)) = map.get(*key) {
                    collect_paths(v, depth + 1, out);
                }
            }
            for key in PATCH_KEYS {
                if let Some(Value::String(s)) = map.get(*key) {
                    out.extend(patch_files(s));
                }
            }
        }
        _ => {}
    }
}

/// The files a patch adds, updates or moves to (not those it deletes): the `*** Add File:`,
/// `*** Update File:` and `*** Move to:` headers of Codex's format, or unified diff `+++`.
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end();
        let path = ["*** Add File: ", "*** Update File: ", "*** Move to: "]
            .iter()
            .find_map(|h| line.strip_prefix(h))
            .or_else(|| {
                let p = line.strip_prefix("+++ ")?;
                let p = p.split('\t').next().unwrap_or(p);
                (p != "/dev/null").then(|| p.strip_prefix("b/").unwrap_or(p))
            });
        if let Some(p) = path.map(str::trim).filter(|p| !p.is_empty()) {
            out.push(p.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::checks::{FormatCheck, FormatCommand, MarkdownCheck, SecurityCheck};
    use serde_json::json;

    #[test]
    fn every_agents_edit_input_names_its_files() {
        let cases = [
            (
                json!({"file_path": "/a/x.rs", "old_string": "a"}),
                vec!["/a/x.rs"],
            ),
            (json!({"filePath": "x.md"}), vec!["x.md"]),
            (json!({"notebook_path": "n.ipynb"}), vec!["n.ipynb"]),
            (
                json!({"path": "src/y.ts", "file_text": "…"}),
                vec!["src/y.ts"],
            ),
            (
                json!({"replacements": [{"filePath": "a.rs"}, {"filePath": "b.rs"}, {"filePath": "a.rs"}]}),
                vec!["a.rs", "b.rs"],
            ),
            (json!({"files": ["c.md", "d.md"]}), vec!["c.md", "d.md"]),
            (
                json!({"input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** Delete File: old.rs\n*** End Patch\n"}),
                vec!["src/lib.rs", "docs/new.md"],
            ),
            (
                json!("*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n*** End Patch"),
                vec!["a.rs", "b.rs"],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(edited_files(&input), want, "{input}");
        }
        assert_eq!(
            patch_files("--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n--- a/y\n+++ /dev/null\n"),
            vec!["x.rs"]
        );
    }

    #[test]
    fn git_commit_and_push_are_told_apart_from_other_commands() {
        for c in [
            "git commit -m x",
            "git -C repo commit --amend",
            "cd app && git add . && git commit -qm 'msg'",
            "git --no-pager commit",
        ] {
            assert!(runs_git(c, "commit"), "{c}");
            assert!(!runs_git(c, "push"), "{c}");
        }
        assert!(runs_git("git push origin main", "push"));
        for c in [
            "echo git commit-tree",
            "legit commit",
            "git log --grep commit",
            "git status",
        ] {
            assert!(!runs_git(c, "commit"), "{c}");
        }
    }

    fn entry(tool: &str) -> QueueEntry {
        let mut e = QueueEntry::new("PostToolUse", 1);
        e.tool_name = Some(tool.into());
        e.cwd = Some("/repo".into());
        e.session_id = Some("s".into());
        e
    }

    fn all_checks() -> Checks {
        Checks {
            format: Some(FormatCheck {
                mode: Mode::Enforce,
                timeout_ms: 100,
                commands: vec![FormatCommand {
                    patterns: vec!["*.rs".into()],
                    command: "rustfmt --check {files}".into(),
                }],
            }),
            markdown: Some(MarkdownCheck {
                mode: Mode::Audit,
                timeout_ms: 100,
                patterns: vec!["*.md".into()],
                command: None,
                max_line_length: None,
            }),
            security: Some(SecurityCheck {
                mode: Mode::Audit,
                timeout_ms: 100,
                on_push: false,
                command: None,
            }),
        }
    }

    #[test]
    fn edits_ask_for_the_checks_of_their_files_and_commits_for_the_scan() {
        let checks = all_checks();
        let post = Some(HookType::PostToolUse);
        let input = json!({"files": ["a.rs", "b.md", "c.txt"]});
        let jobs = jobs(&checks, &[], post, Some(&input), &entry("editFiles"));
        let got: Vec<_> = jobs.iter().map(|j| (j.kind, j.files.clone())).collect();
        assert_eq!(
            got,
            [
                (Kind::Format, vec!["a.rs".to_string()]),
                (Kind::Markdown, vec!["b.md".to_string()])
            ]
        );
        assert_eq!(jobs[0].mode, "enforce");
        assert_eq!(jobs[0].entry.hook_type, "CheckResult");
        assert_eq!(jobs[0].entry.session_id.as_deref(), Some("s"));
        // The store keeps one event per id: two results need two.
        assert_ne!(jobs[0].entry.id, jobs[1].entry.id);

        let commit = json!({"command": "git commit -m wip"});
        let bash = entry("Bash");
        assert_eq!(jobs_kinds(&checks, post, &commit, &bash), [Kind::Security]);
        let mut failed = bash.clone();
        failed.exit_code = Some(1);
        assert!(jobs_kinds(&checks, post, &commit, &failed).is_empty());
        let push = json!({"command": "git push"});
        assert!(jobs_kinds(&checks, post, &push, &bash).is_empty());
        let pre = Some(HookType::PreToolUse);
        assert!(jobs_kinds(&checks, pre, &input, &entry("Edit")).is_empty());
        assert!(jobs_kinds(&Checks::default(), post, &input, &entry("Edit")).is_empty());
    }

    fn jobs_kinds(
        checks: &Checks,
        t: Option<HookType>,
        input: &Value,
        e: &QueueEntry,
    ) -> Vec<Kind> {
        jobs(checks, &[], t, Some(input), e)
            .iter()
            .map(|j| j.kind)
            .collect()
    }
}
