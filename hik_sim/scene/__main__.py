"""``python -m hik_sim.scene``: see :mod:`hik_sim.sim.cli`."""

from hik_sim.sim.cli import main

raise SystemExit(main())
