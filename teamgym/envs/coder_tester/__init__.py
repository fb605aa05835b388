"""``coder_tester-v0``: a coder and a tester solve coding problems together (docs: :mod:`.env`)."""
