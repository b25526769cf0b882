"""IK solvers: every solver answers ``solve(pos, quat, q_init=None) -> IKResult``.

- :mod:`~hik_sim.solvers.ik`: the ``IKSolver`` protocol, ``IKResult`` and the solvers (``NeuralIK``,
  ``LMRefiner``, ``MultistartIK``, ``TableSeededIK``, ``HybridIK``, ``SingleTargetIK``, ``DmControlIK``);
- :mod:`~hik_sim.solvers.pose_table`: ``PoseTable``, random configurations and their poses searched by pose
  (the hybrid's seeds where its networks miss);
- :mod:`~hik_sim.solvers.single_target`: one configuration per call on MuJoCo's C kinematics
  (``SingleTargetKinematics``, ``SingleTargetLM``); :mod:`~hik_sim.solvers._lm_numba`: the compiled LM;
- :mod:`~hik_sim.solvers.registry`: ``make_solver(name, robot)``, the one map from a name to a solver.

The package imports nothing itself.
"""
