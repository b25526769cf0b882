"""``python -m hik_sim.train``: see :mod:`hik_sim.learning.train_cli` (torch is imported once the arguments are read)."""

from hik_sim.learning.train_cli import main

raise SystemExit(main())
