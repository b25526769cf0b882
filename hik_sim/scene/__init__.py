"""``python -m hik_sim.scene``, kept where the README and docs show it; the command is :mod:`hik_sim.sim.cli`."""
