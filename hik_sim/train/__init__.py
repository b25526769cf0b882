"""``python -m hik_sim.train``, kept where the README and docs show it; the command is :mod:`hik_sim.learning.train_cli`,
the trainer :mod:`hik_sim.learning.train`."""
