"""Tools for env contributors: ``teamgym check``, ``new-env``, the env catalogue and the versioning fingerprints.

=====================  ==================================================================================
module                 what
=====================  ==================================================================================
``checks``             ``teamgym check``: every ``check_env`` check, each with what it expects and the fix
``docstring``          an env module's docstring (the env's docs page) as Markdown sections
``catalogue``          ``teamgym catalogue``: ``docs/envs/<id>.md`` per built-in env, and the index
``versions``           ``teamgym versions``: behaviour fingerprints that make a change without a new ``-vN`` fail
``scaffold``           ``teamgym new-env``: a new env family in this checkout, or a plugin package
=====================  ==================================================================================

CONTRIBUTING.md at the repository root is the guide these tools serve.
"""
