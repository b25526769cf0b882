"""Evaluation: how well IK policies reach and track, measured one way.

- :mod:`~hik_sim.evaluation.metrics`: the accuracy metrics, defined once;
- :mod:`~hik_sim.evaluation.experiments`: the seed papers' experiments (shared with ``benchmarks/``);
- :mod:`~hik_sim.evaluation.report`: ``report.html``;
- :mod:`~hik_sim.evaluation.evaluate`: the evaluator (``python -m hik_sim.evaluate``).
"""
