"""``python -m hik_sim.scene``: see :mod:`hik_sim.scene.cli`."""

from hik_sim.scene.cli import main

raise SystemExit(main())
