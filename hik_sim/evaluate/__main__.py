"""``python -m hik_sim.evaluate``: see :mod:`hik_sim.evaluation.evaluate`."""

from hik_sim.evaluation.evaluate import main

raise SystemExit(main())
