-- 0012: who wrote a line, and turns that did not finish.
--
-- `events.producer`: lines now name the session origin as the ContextManager extension knows it
-- (`origin`: `claude-code-plugin`, `vscode-extension`, `copilot-cli-plugin`, else `unknown`) and
-- cmstore as their producer (`producer: "cmstore"`). Lines written before named cmstore in
-- `origin`; ingest sets `producer = 'cmstore'` for those, and existing rows get it here, so
-- `WHERE producer = 'cmstore'` finds every line cmstore wrote, old or new.
--
-- `turns.outcome`: `interrupted` for a prompt whose turn never finished (Codex's `Interrupt`;
-- a Gemini CLI prompt with no `AfterAgent` before the session's next prompt or its end), NULL
-- for a turn that ended normally. Existing rows keep NULL. Numbered 0012 because 0011 is taken
-- by work on another branch.

ALTER TABLE events ADD COLUMN producer TEXT;
UPDATE events SET producer = 'cmstore' WHERE origin = 'cmstore';

ALTER TABLE turns ADD COLUMN outcome TEXT;
