"""``python -m hik_sim.evaluate``, kept where the README and docs show it; the command is :mod:`hik_sim.evaluation.evaluate`."""
