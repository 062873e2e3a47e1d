-- 0010: the model of each turn. Why: a session's model was taken from the payloads alone, and
-- `claude -p` sessions send none (their SessionStart has no `model`), so `sessions.model` stayed
-- NULL; and a session can change model between turns (`/model`), which one column per session
-- cannot say. Capture now takes the model from the transcript (`message.model` of the turn's
-- assistant lines, never `<synthetic>`) when the payload lacks it and writes it on the turn's
-- Stop line; ingest keeps it here, and in `sessions.model` as for any line's model. Existing
-- rows keep NULL: their lines did not carry it. Numbered 0010 because 0008 and 0009 are taken
-- by work on other branches.

ALTER TABLE turns ADD COLUMN model TEXT;
