"""``python -m advcore`` is the ``advcore`` command."""

from advcore.cli import main

raise SystemExit(main())
