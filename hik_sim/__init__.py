"""hik_sim: neural inverse kinematics for any URDF robot, in MuJoCo and Gymnasium.

Importing the package has no side effects and does not import torch or MuJoCo.
"""

from hik_sim.errors import ChainError, HikError, MeshError, UnknownRobotError, UrdfError

__version__ = "0.1.0"
__all__ = ["ChainError", "HikError", "MeshError", "UnknownRobotError", "UrdfError", "__version__"]
