"""Deployment: IK networks as ONNX graphs for onnxruntime (C++, C#, Java, the browser), without torch or hik_sim.

:mod:`hik_sim.export` (``python -m hik_sim.export``) writes the file; :mod:`hik_sim.deploy.graph` is the torch module the
graph is traced from and the float64 operators that onnxruntime's CPU kernels lack. docs/deployment.md says how to use one.
"""
