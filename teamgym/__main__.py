"""``python -m teamgym`` runs the command line (see ``teamgym.cli``)."""

from teamgym.cli import main

raise SystemExit(main())
