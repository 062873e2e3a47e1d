-- Team schema 0011: whether a turn was read from a transcript by `cmstore import` and by no
-- hook (local migration 0036). Why: a machine's imported history reaches the team store
-- with its turns, and `show --store` marks them as the machine's own `show` does. 0 for
-- rows an older cmstore pushed (it imported no turns).
ALTER TABLE turns ADD COLUMN imported integer NOT NULL DEFAULT 0;
