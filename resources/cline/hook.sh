#!/bin/sh
# cmstore: hooks-v3
# Hands this Cline hook's event (its JSON on stdin) to cmstore, whose reply Cline reads.
# Written by `cmstore hooks install --agent cline`, one such file per event; `cmstore hooks
# uninstall --agent cline` removes them.
exec {{sh}} capture --agent cline
