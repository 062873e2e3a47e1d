-- 0018: the safety gate's `risk` and `decision` as columns of `events`, and the indexes the
-- gate's figures read.
--
-- Why: `cmstore gate report`, the dashboard's overview and gate page, and a session's timeline
-- read `json_extract(entry, '$.risk')` and `'$.decision'` out of the JSON of every PreToolUse
-- line: at 1M events (354,000 PreToolUse lines) `gate report` took 2 s, and no index could help
-- (issue 20: every page's data within 100 ms at 1M events). Ingest writes both columns from
-- the line from now on; the rows already stored are filled in here.
--
-- What they hold: the line's `risk` (the rules that matched, comma-separated, or
-- `unreadable`) and `decision` (`allow` or `deny`) when the value is a non-empty JSON string,
-- else NULL: what ingest's parser reads. cmstore's gate writes them only as such strings.
ALTER TABLE events ADD COLUMN risk TEXT;
ALTER TABLE events ADD COLUMN decision TEXT;

-- A substring test first: parsing every line is slow, and a line that names neither key has
-- neither value. `json_valid` before `json_extract`, which stops the migration on a line
-- SQLite's parser refuses (ingest's parser accepted every stored line, but the two differ at
-- the edges).
UPDATE events
SET risk = CASE WHEN json_valid(entry) AND json_type(entry, '$.risk') = 'text'
                THEN nullif(json_extract(entry, '$.risk'), '') END,
    decision = CASE WHEN json_valid(entry) AND json_type(entry, '$.decision') = 'text'
                    THEN nullif(json_extract(entry, '$.decision'), '') END
WHERE instr(entry, '"risk"') > 0 OR instr(entry, '"decision"') > 0;

-- The calls the gate ruled on: cmstore's own PreToolUse lines, by time, with the columns the
-- report filters read (agent, project, session) and the ruling, so `gate report` counts them,
-- and groups the findings of a time range, from this index alone whatever it is asked for.
-- By time first, so ingest appends to its end (it is not set aside during a bulk load, see
-- store/indexes.rs).
CREATE INDEX events_gate_calls ON events(ts, agent, cwd, session_id, risk, decision)
    WHERE hook_type = 'PreToolUse' AND producer = 'cmstore';

-- The gate's findings: the few of those lines with a `risk`, keyed by what `gate report` groups
-- them by, so the groups of all time are read from this index without visiting the rows or
-- every call (`hook_type` and `producer` are in it for that too: SQLite reads a range of `risk`
-- as needing them).
CREATE INDEX events_gate_findings ON events(risk, decision, agent, cwd, ts, hook_type, producer)
    WHERE risk IS NOT NULL AND hook_type = 'PreToolUse' AND producer = 'cmstore';
