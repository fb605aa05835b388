"""``math_tool-v0``: a tool agent and a reasoner solve exact-answer math problems (see :mod:`.env`)."""
