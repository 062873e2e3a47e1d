-- Team schema 0005: who or what decided each tool call (`decided_by`, as the local
-- `v_tool_call_decisions` says it: gate, classifier, user, mode, auto, settings, unknown), so
-- that `show --store` and the dashboard tell it as they do on the machine. Why: it is read
-- there from the chain of a call's lines (its PreToolUse, a PermissionRequest matched by
-- time and input, a PermissionDenied), which the `none` profile does not send and which the
-- server could only pair again at great cost; the pusher reads it where the lines are and
-- sends it with the call, under every profile (it is a verdict, not content). NULL on the
-- rows of an older cmstore's pushes: not told.
ALTER TABLE tool_calls ADD COLUMN decided_by text;
