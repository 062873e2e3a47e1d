-- 0013: a turn's reasoning in a column of its own, and the prompt of a turn whose Stop has none.
--
-- Why `thinking`: when a turn had no text, its reasoning (Claude `thinking`, VS Code
-- `reasoningText`) was written as the response, so private reasoning read as the answer.
-- Capture now writes it in the line's own `thinking` field (redacted, and dropped with
-- `store_text = false`, like the other text) and never as `response`; ingest keeps it here.
-- Existing rows keep NULL: their lines did not carry it apart.
--
-- Why the index: Codex's Stop payload carries no prompt, while its UserPromptSubmit of the same
-- `turn_id` does. Ingest takes a turn's missing prompt from that event (and fills a turn row
-- stored before its prompt came); the partial index keeps that lookup to Codex's few rows with
-- a turn id. Existing Codex turns get their prompt below.

ALTER TABLE turns ADD COLUMN thinking TEXT;

CREATE INDEX events_turn_prompt ON events(session_id, turn_id)
  WHERE hook_type = 'UserPromptSubmit' AND turn_id IS NOT NULL;

UPDATE turns SET prompt = (
    SELECT e.prompt FROM events e
    WHERE e.hook_type = 'UserPromptSubmit' AND e.turn_id IS NOT NULL
      AND e.session_id = turns.session_id AND e.turn_id = turns.turn_id
      AND e.prompt IS NOT NULL
    ORDER BY e.ts DESC LIMIT 1)
WHERE prompt IS NULL AND turn_id IS NOT NULL;
