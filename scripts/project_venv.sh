# Sourced by the scripts that test an integration in a virtual environment of its own (a library that pins versions
# the project's environment cannot hold): `project_venv DIR` creates DIR (once) as a venv that sees, behind its own
# packages, those of the Python that runs the script: the project's virtual environment when one is active (else
# `python` on PATH, or $PYTHON), with torch==2.13.0+cpu, teamgym and pytest from the README's test install. A .pth
# file adds the project's site directories after the venv's own (site.addsitedir also runs their .pth files, e.g.
# editable installs); `venv --system-site-packages` would add the *base* interpreter's instead, which in CI (the
# project in .venv) holds nothing.
project_venv() {
    local venv="$1"
    local python="${PYTHON:-python}"
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    local sites
    sites="$("$python" -c 'import json, site; print(json.dumps(site.getsitepackages()))')"
    "$venv/bin/python" - "$sites" <<'EOF'
import json
import pathlib
import sys
import sysconfig

lines = [f"import site; site.addsitedir({path!r})\n" for path in json.loads(sys.argv[1])]
pathlib.Path(sysconfig.get_path("purelib"), "teamgym-project-sites.pth").write_text("".join(lines))
EOF
    "$venv/bin/python" -c 'import pytest, teamgym, torch' || {
        echo "$0: $python lacks the project's packages: run the README's test install first" >&2
        exit 2
    }
    echo "torch==2.13.0" > "$venv/constraints.txt"
}
