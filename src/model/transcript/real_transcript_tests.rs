//! Tests over real transcripts in `../shared/fixtures/real` (skipped when that folder is
//! absent, e.g. in a standalone checkout).

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{assemble, ParseOptions, Turn};
use crate::files::transcript::Tracker;

fn fixtures() -> Option<PathBuf> {
    shared_fixtures("real")
}

/// `../shared/fixtures/<sub>` when it is there; else `None`, said on stderr, for the test to
/// skip (every test over the real files goes through here).
pub(super) fn shared_fixtures(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        // Straight to stderr: libtest hides what a passing test prints with println!.
        let test = std::thread::current()
            .name()
            .unwrap_or("a test")
            .to_string();
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED {test}: {} is absent (real fixtures)",
            dir.display()
        );
        None
    }
}

/// Complete turns of a one-shot parse.
fn one_shot(bytes: &[u8], options: ParseOptions) -> Vec<Turn> {
    assemble(bytes, options)
        .into_iter()
        .filter(|t| t.complete)
        .collect()
}

/// One hook on `key`: open, run `call`, save.
fn hook<T>(state: &Path, key: &str, transcript: &Path, call: impl FnOnce(&mut Tracker) -> T) -> T {
    let mut tracker = Tracker::open(state, key, transcript)
        .unwrap()
        .expect("lock is free");
    let out = call(&mut tracker);
    tracker.save().unwrap();
    out
}

/// Replays `bytes` as a growing transcript, in batches of whole lines (sometimes ending in
/// half a line), running a harvest hook after each batch and a compaction every few batches.
/// Returns (harvested turns, compacted turns, total bytes read by the harvests).
fn replay(bytes: &[u8]) -> (Vec<Turn>, Vec<Turn>, u64) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let path = dir.path().join("session.jsonl");
    let mut file = fs::File::create(&path).unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let (mut harvested, mut compacted, mut bytes_read) = (Vec::new(), Vec::new(), 0);
    let (mut next, mut pending_tail): (usize, &[u8]) = (0, &[]);
    for round in 0.. {
        if next >= lines.len() && pending_tail.is_empty() {
            break;
        }
        file.write_all(pending_tail).unwrap();
        pending_tail = &[];
        let batch = [1, 3, 7, 2, 13][round % 5];
        for line in lines.iter().skip(next).take(batch) {
            file.write_all(line).unwrap();
        }
        next += batch;
        if round % 3 == 1 && next < lines.len() {
            let (head, tail) = lines[next].split_at(lines[next].len() / 2);
            file.write_all(head).unwrap();
            pending_tail = tail;
            next += 1;
        }
        file.flush().unwrap();
        harvested.extend(hook(&state, "s", &path, |t| {
            let turns = t.harvest().unwrap();
            bytes_read += t.stats().bytes_read;
            turns
        }));
        if round % 4 == 3 {
            compacted.extend(hook(&state, "s-compact", &path, |t| {
                t.compact(false).unwrap()
            }));
        }
    }
    compacted.extend(hook(&state, "s-compact", &path, |t| {
        t.compact(false).unwrap()
    }));
    (harvested, compacted, bytes_read)
}

#[test]
fn harvest_in_growing_chunks_equals_a_one_shot_parse() {
    let Some(dir) = fixtures() else { return };
    for name in [
        "transcript-3",
        "transcript-5",
        "transcript-7",
        "transcript-8",
    ] {
        let bytes = fs::read(dir.join(format!("claude-code/{name}.jsonl"))).unwrap();
        let expected = one_shot(&bytes, ParseOptions::default());
        println!("{name}: {} complete turns", expected.len());
        assert!(expected.len() >= 2, "{name}");
        let (harvested, compacted, bytes_read) = replay(&bytes);
        assert_eq!(harvested, expected, "{name}: harvest");
        assert_eq!(compacted, expected, "{name}: compact");
        let ids: HashSet<_> = harvested.iter().map(|t| t.turn_id.clone()).collect();
        assert_eq!(ids.len(), harvested.len(), "{name}: duplicate turn ids");
        assert!(harvested.iter().all(|t| t.turn_id.is_some()));
        // Each byte is read about once (half lines are read twice).
        assert!(
            bytes_read < bytes.len() as u64 * 3 / 2,
            "{name}: read {bytes_read}"
        );
    }
}

#[test]
fn synthetic_assistant_lines_are_never_a_turns_response() {
    let Some(dir) = fixtures() else { return };
    // transcript-11 has "No response requested." (without `isApiErrorMessage`), transcript-4
    // rate-limit and provider errors, transcript-2, -7 and -8 flagged API errors.
    for name in [
        "transcript-2",
        "transcript-4",
        "transcript-7",
        "transcript-8",
        "transcript-11",
    ] {
        let bytes = fs::read(dir.join(format!("claude-code/{name}.jsonl"))).unwrap();
        let mut synthetic = HashSet::new();
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(value) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if value["message"]["model"] == "<synthetic>" {
                for block in value["message"]["content"].as_array().into_iter().flatten() {
                    if let Some(text) = block["text"].as_str() {
                        synthetic.insert(text.to_string());
                    }
                }
            }
        }
        assert!(!synthetic.is_empty(), "{name}");
        for turn in assemble(&bytes, ParseOptions::default()) {
            assert!(
                !synthetic.contains(&turn.assistant),
                "{name}: {:?}",
                turn.assistant
            );
        }
    }
}

#[test]
fn sidechain_records_stay_out_of_main_turns() {
    let Some(dir) = fixtures() else { return };
    let bytes = fs::read(dir.join("claude-code/transcript-1.jsonl")).unwrap();
    let mut side_texts = HashSet::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if value["isSidechain"] == Value::Bool(true) {
            match &value["message"]["content"] {
                Value::String(text) => {
                    side_texts.insert(text.clone());
                }
                Value::Array(blocks) => {
                    for block in blocks {
                        if let Some(text) = block["text"].as_str() {
                            side_texts.insert(text.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert!(!side_texts.is_empty());
    let turns = assemble(&bytes, ParseOptions::default());
    assert!(!turns.is_empty());
    for turn in &turns {
        assert!(!side_texts.contains(&turn.user), "{:?}", turn.user);
        assert!(
            !side_texts.contains(&turn.assistant),
            "{:?}",
            turn.assistant
        );
    }
}

#[test]
fn subagent_transcripts_are_read_as_sidechains() {
    let Some(dir) = fixtures() else { return };
    let state = tempfile::tempdir().unwrap();
    let agents = dir.join("claude-code/transcript-10.subagents");
    let mut seen = 0;
    for entry in fs::read_dir(&agents).unwrap() {
        let path = entry.unwrap().path();
        let key = format!("main-{}", path.file_stem().unwrap().to_string_lossy());
        let (earlier, last) = hook(state.path(), &key, &path, |t| {
            t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap()
        });
        assert!(earlier.is_empty(), "{}", path.display());
        let last = last.expect("the subagent's turn");
        assert!(
            !last.user.is_empty() && !last.assistant.is_empty(),
            "{last:?}"
        );
        assert_eq!(last.tool_calls.len(), 1);
        seen += 1;
    }
    assert_eq!(seen, 4);
}

#[test]
fn copilot_cli_skill_expansion_does_not_split_the_turn() {
    let Some(dir) = fixtures() else { return };
    let state = tempfile::tempdir().unwrap();
    let path = dir.join("copilot-cli/output-json-1.jsonl");
    let (earlier, last) = hook(state.path(), "copilot", &path, |t| {
        t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap()
    });
    // The second `user.message` is the skill's text (`source: skill-…`), not the person's.
    assert!(earlier.is_empty(), "{earlier:?}");
    let turn = last.expect("final turn");
    assert!(turn.user.starts_with("Invoke skill"), "{:?}", turn.user);
    assert_eq!(turn.tool_calls.len(), 9);
    assert_eq!(turn.tool_calls[0].tool_name, "skill");
    assert!(
        turn.assistant.starts_with("No CI checks exist"),
        "{:?}",
        turn.assistant
    );
    assert!(turn.thinking().is_some());
    for call in &turn.tool_calls {
        serde_json::from_str::<Value>(&call.input).unwrap();
        assert!(!call.output.is_empty(), "{call:?}");
        assert!(call.output.chars().count() <= super::MAX_TOOL_OUTPUT_CHARS);
    }
    assert!(turn.tool_calls[0].output.starts_with("Skill \""));
}

/// Every `tool_result` text of a Claude transcript's main chain.
fn claude_results(bytes: &[u8]) -> HashSet<String> {
    let mut results = HashSet::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if value["isSidechain"] == Value::Bool(true) {
            continue;
        }
        for block in value["message"]["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            results.insert(crate::model::shorten::cut_text(
                &text,
                super::MAX_TOOL_OUTPUT_CHARS,
            ));
        }
    }
    results
}

#[test]
fn harvested_claude_tool_calls_carry_their_results() {
    let Some(dir) = fixtures() else { return };
    for name in [
        "transcript-4",
        "transcript-5",
        "transcript-8",
        "transcript-12",
    ] {
        let bytes = fs::read(dir.join(format!("claude-code/{name}.jsonl"))).unwrap();
        let results = claude_results(&bytes);
        let (harvested, _, _) = replay(&bytes);
        let calls: Vec<_> = harvested.iter().flat_map(|t| &t.tool_calls).collect();
        let with_output = calls.iter().filter(|c| !c.output.is_empty()).count();
        println!("{name}: {with_output} of {} calls with output", calls.len());
        assert!(with_output * 2 > calls.len(), "{name}: {with_output}");
        for call in calls.iter().filter(|c| !c.output.is_empty()) {
            assert!(results.contains(&call.output), "{name}: {:?}", call.output);
        }
    }
}

#[test]
fn claude_thinking_is_never_a_turns_response() {
    let Some(dir) = fixtures() else { return };
    let bytes = fs::read(dir.join("claude-code/transcript-5.jsonl")).unwrap();
    let mut thoughts = HashSet::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        for block in value["message"]["content"].as_array().into_iter().flatten() {
            if let Some(text) = block["thinking"].as_str() {
                thoughts.insert(text.to_string());
            }
        }
    }
    assert!(thoughts.len() > 10);
    let turns = assemble(&bytes, ParseOptions::default());
    let thinking_only = turns
        .iter()
        .filter(|t| t.response().is_none() && t.thinking().is_some())
        .count();
    assert!(
        thinking_only >= 1,
        "the fixture has a turn that only thought"
    );
    for turn in &turns {
        if let Some(response) = turn.response() {
            assert!(!thoughts.contains(response), "{response:?}");
        }
        let record = turn.to_record();
        assert!(
            !thoughts.contains(&record.assistant),
            "{:?}",
            record.assistant
        );
    }
}

#[test]
fn only_typed_prompts_begin_claude_turns() {
    let Some(dir) = fixtures() else { return };
    let mut names: Vec<_> = fs::read_dir(dir.join("claude-code"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    names.sort();
    assert!(names.len() >= 12);
    for path in names {
        let bytes = fs::read(&path).unwrap();
        for turn in assemble(&bytes, ParseOptions::default()) {
            for tag in ["<local-command", "<command-", "<system-reminder>", "<bash-"] {
                assert!(
                    !turn.user.trim_start().starts_with(tag),
                    "{}: {:?}",
                    path.display(),
                    turn.user
                );
            }
        }
    }
}

#[test]
fn a_stop_after_a_local_command_is_not_the_commands_turn() {
    let Some(dir) = fixtures() else { return };
    let bytes = fs::read(dir.join("claude-code/transcript-8.jsonl")).unwrap();
    // Up to the first `/model` and its `<local-command-stdout>` (lines 250 and 251).
    let upto: usize = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(251)
        .map(<[u8]>::len)
        .sum();
    let prefix = &bytes[..upto];
    let last_line = prefix[..upto - 1].rsplit(|&b| b == b'\n').next().unwrap();
    assert!(String::from_utf8_lossy(last_line).contains("<local-command-stdout>"));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("session.jsonl");
    fs::write(&path, prefix).unwrap();
    let (_, last) = hook(&tmp.path().join("state"), "s", &path, |t| {
        t.finish_turn().unwrap()
    });
    let turn = last.into_turn().expect("the last answered turn");
    assert!(!turn.user.starts_with('<'), "{:?}", turn.user);
    assert!(turn.response().is_some(), "{turn:?}");
}

/// transcript-4 has 20 `Stop hook feedback` user lines (a Stop hook that failed to start,
/// blocking every Stop) and 2 `Bash operation feedback` ones (a PostToolUse hook's): each
/// stays in the turn it continued, none is a prompt.
#[test]
fn a_stop_hooks_feedback_is_never_a_turns_prompt() {
    let Some(dir) = fixtures() else { return };
    let bytes = fs::read(dir.join("claude-code/transcript-4.jsonl")).unwrap();
    let turns = assemble(&bytes, ParseOptions::default());
    assert!(!turns.is_empty());
    assert!(turns.iter().all(|t| {
        let user = t.user.trim_start();
        !user.starts_with("Stop hook feedback") && !user.starts_with("Bash operation feedback")
    }));
    let with_feedback = turns.iter().filter(|t| t.feedback.is_some()).count();
    assert!(with_feedback > 0, "the feedback is kept with its turn");
}

/// Qwen Code's real chats (0.14.2, `real-more/other/qwen-code`): every tool call of a
/// one-shot parse carries the output of the `tool_result` line that answers it.
#[test]
fn qwen_code_tool_calls_carry_their_results() {
    let Some(real) = fixtures() else { return };
    let dir = real.join("../real-more/other/qwen-code/cloudschool/projects");
    let mut chats = Vec::new();
    for project in fs::read_dir(&dir).unwrap() {
        let chats_dir = project.unwrap().path().join("chats");
        for chat in fs::read_dir(chats_dir).into_iter().flatten() {
            chats.push(chat.unwrap().path());
        }
    }
    assert!(!chats.is_empty(), "{}", dir.display());
    let mut checked = 0;
    for chat in chats {
        let bytes = fs::read(&chat).unwrap();
        let answered: HashSet<String> = bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
            .filter(|v| v["type"] == "tool_result")
            .flat_map(|v| {
                v["message"]["parts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|p| {
                p["functionResponse"]["response"]["output"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        let turns = assemble(&bytes, ParseOptions::default());
        for call in turns.iter().flat_map(|t| &t.tool_calls) {
            assert!(
                !call.output.is_empty(),
                "{}: {} has no output",
                chat.display(),
                call.tool_name
            );
            assert!(
                answered
                    .iter()
                    .any(|a| a.starts_with(call.output.trim_end_matches('…'))
                        || call.output.starts_with(a.as_str())),
                "{}: {:?}",
                chat.display(),
                call.output
            );
            checked += 1;
        }
    }
    assert!(checked > 10, "{checked} calls");
}
