"""``discussion-v0``: symmetric agents answer a math problem, discuss, and vote (see :mod:`.env`)."""
