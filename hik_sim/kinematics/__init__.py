"""Kinematics of a robot's chain, after :mod:`hik_sim.robots` and before everything that moves it.

- :mod:`~hik_sim.kinematics.geometry`: ``ChainGeometry``, the URDF chain folded into one constant
  transform per joint (numpy, no torch);
- :mod:`~hik_sim.kinematics.chain`: ``Chain``, batched FK and Jacobian in torch;
- :mod:`~hik_sim.kinematics.rotations`: quaternions, rotation matrices, position and rotation errors (torch);
- :mod:`~hik_sim.kinematics.tolerances`: the success criteria and the one-pose rotation error (no torch);
- :mod:`~hik_sim.kinematics.symmetry`: ``FirstJointSymmetry``, the rigid motion of the end-effector
  pose when the first joint moves (torch and NumPy).

The package imports nothing itself, so the torch-free modules stay torch-free.
"""
