-- Team schema 0010: the content profile each event row was pushed under. Why: `verify
-- --store` checks a row by its digest where the server has its whole line (`full`), by its
-- presence where it has none (`none`), and a `redacted` line by its digest unless redaction
-- changed it; the machine's profile now (`machines.content`) says nothing of a row an earlier
-- push sent under another. NULL for rows an older cmstore pushed.
ALTER TABLE events ADD COLUMN content text;
