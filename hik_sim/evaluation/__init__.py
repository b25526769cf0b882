"""Evaluation: how well IK policies reach and track, measured one way.

- :mod:`~hik_sim.evaluation.rollout`: ``rollout(env, policy) -> Episode``, the one episode loop;
- :mod:`~hik_sim.evaluation.metrics`: the metrics, defined once: open-loop accuracy (and a
  network's on an evaluation set, ``evaluate_network``), Reach and Track episodes;
- :mod:`~hik_sim.evaluation.experiments`: the seed papers' experiments (shared with ``benchmarks/``);
- :mod:`~hik_sim.evaluation.report`: ``report.html``;
- :mod:`~hik_sim.evaluation.evaluate`: the evaluator (``python -m hik_sim.evaluate``; its command line in
  :mod:`~hik_sim.evaluation.cli`), with :mod:`~hik_sim.evaluation.config` (what it runs),
  :mod:`~hik_sim.evaluation.policy` (policies, first calls timed apart), :mod:`~hik_sim.evaluation.episodes`
  (the measuring phase), :mod:`~hik_sim.evaluation.tables` (tables and plots), :mod:`~hik_sim.evaluation.videos`
  and :mod:`~hik_sim.evaluation.run_folder` (one run per folder, clean-up of failed and interrupted runs).
"""
