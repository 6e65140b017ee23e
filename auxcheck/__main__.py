"""``python -m auxcheck`` runs the ``auxcheck`` command."""

from auxcheck.cli import main

raise SystemExit(main())
