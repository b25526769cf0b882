"""``python -m hik_sim.train``: see :mod:`hik_sim.learning.train`."""

from hik_sim.learning.train import main

raise SystemExit(main())
