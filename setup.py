"""hik_sim: neural inverse kinematics for any URDF robot, in MuJoCo and Gymnasium."""

from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="hik_sim",
    version="0.1.0",
    description="Neural inverse kinematics (HarmoAtt-IK, hybrid learning + optimisation) for URDF robots in MuJoCo/Gymnasium",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=find_packages(include=["hik_sim", "hik_sim.*"]),
    # the networks the controllers and the evaluator's defaults use; the papers' baselines stay in benchmarks/checkpoints
    package_data={"hik_sim": ["py.typed", "robots/*/*.urdf", "policies/pretrained/*/*.safetensors", "policies/pretrained/*/*.json",
                              "policies/pretrained/index.json"]},
    include_package_data=False,  # package_data lists every data file; the sdist takes them from there too
    install_requires=[
        # torch: on these machines install torch==2.13.0 first (a CPU wheel); a bare "torch" pulls CUDA.
        "torch>=2.3,<2.14",
        "safetensors>=0.4,<1",  # checkpoints (hik_sim.learning.checkpoint): tensors and strings, no pickle
        "mujoco>=3.3,<4.0",  # dm-control 1.0.50 breaks on mujoco 4.0
        "dm-control>=1.0.30,<1.1",
        "gymnasium>=1.0,<1.5",
        "pytorch-kinematics>=0.7,<0.11",
        "numpy>=1.26,<2.5",
        "scipy>=1.11,<1.18",
        "imageio>=2.34,<2.39",
        "imageio-ffmpeg>=0.5,<0.9",
        "moviepy>=1.0.3",  # gymnasium.wrappers.RecordVideo writes through it
        "matplotlib>=3.7",  # the evaluator's plots
        "tqdm>=4.66",
        "trimesh>=4.0,<6",
        "pycollada>=0.8,<0.10",
        # robot descriptions pinned: the shipped checkpoints are checked against these URDFs' hashes
        "example-robot-data==6.0.0",
        "icub-models==3.2.0",
        "jvrc-description==1.1.1",
    ],
    extras_require={
        # numba: the tests cover fast_network's compiled backend too; viser: the viewer's tests (tests/test_viewer.py);
        # mypy: tests/test_conventions.py checks that it passes (pinned to a minor release: new ones find new things)
        "test": ["pytest>=8", "hypothesis>=6.100", "numba>=0.59", "viser>=1.1,<2", "tensorboard>=2.14", "mypy>=2.4,<2.5", "onnx>=1.16", "onnxruntime>=1.18",
                 "stable-baselines3>=2.3"],
        # examples/sb3_reach.py and benchmarks/rl_reach.py (SAC + HER); with torch 2.13.0 installed it adds no other torch
        "rl": ["stable-baselines3>=2.3"],
        # peers measured by benchmarks/ik_bench.py
        "bench": ["pytracik>=0.0.3", "optik-py>=0.5"],
        # python -m hik_sim.viewer's web page (viser ships its browser client: works offline)
        "viewer": ["viser>=1.1,<2"],
        # python -m hik_sim.train --tensorboard DIR
        "tensorboard": ["tensorboard>=2.14"],
        # hik_sim.learning.fast_network's compiled backend (one pose through a network in tens of µs); NumPy is the fallback
        "fast": ["numba>=0.59"],
        # python -m hik_sim.export: a network as one ONNX graph, checked with onnxruntime (docs/deployment.md)
        "onnx": ["onnx>=1.16", "onnxruntime>=1.18"],
    },
    entry_points={"console_scripts": [  # the same commands as python -m hik_sim.train / .evaluate / .viewer
        "hik-sim-train = hik_sim.learning.train_cli:main",
        "hik-sim-evaluate = hik_sim.evaluation.evaluate:main",
        "hik-sim-viewer = hik_sim.viewer.__main__:main",
    ]},
    classifiers=["Programming Language :: Python :: 3", "Topic :: Scientific/Engineering :: Artificial Intelligence"],
)
