-- 0024: a blocking hook's feedback belongs to the turn it continues, never a prompt.
--
-- Why: when a Stop hook blocks (exit 2, `decision: "block"`), Claude Code writes its reason as
-- a user line (`Stop hook feedback: - [make test]: 2 tests fail`) and the model answers it in
-- the same turn; the Stop fires again with `stop_hook_active`. The transcript reader took that
-- line for a prompt, so the store kept a second turn whose "prompt" nobody typed, and `show`
-- presented it as the user's words. A blocking PostToolUse hook's reason is written alike
-- (`Bash operation feedback: …`). Capture now keeps the feedback in the turn
-- (`hookFeedback` on the Stop line; the turn's row is updated by the later Stop) and ingest
-- stores it here.
--
-- Existing rows whose prompt is such feedback keep their row (which turn they continued is not
-- recorded), but the text moves here: it no longer reads as typed.
ALTER TABLE turns ADD COLUMN feedback TEXT;

-- One word, then ` hook feedback:` or ` operation feedback:`: the first space is the head's.
UPDATE turns SET feedback = prompt, prompt = NULL
WHERE instr(prompt, ' ') > 1
  AND instr(prompt, ' ') IN (instr(prompt, ' hook feedback:'),
                             instr(prompt, ' operation feedback:'));
