"""Learning IK: FK samples, the networks, their losses, training, checkpoints and cards.

- :mod:`~hik_sim.learning.data`: the FK sample stream, evaluation sets, joint selection, input normalisation;
- :mod:`~hik_sim.learning.models`: the network architectures (HarmoAtt-IK, the MLP, the papers' baselines);
- :mod:`~hik_sim.learning.losses`: the composite loss (and CycleIK's, the regression loss);
- :mod:`~hik_sim.learning.network`: ``IKNetwork``, a model with its normalisation and fixed joints;
- :mod:`~hik_sim.learning.checkpoint`: checkpoints (``.safetensors``; pickled ``.pt`` read with a warning) and their cards (``.json``);
- :mod:`~hik_sim.learning.pretrained`: the shipped networks and the papers' baselines, by robot and name (``load_pretrained``),
  and each robot's choice of seed, fallback and closed-loop networks;
- :mod:`~hik_sim.learning.accuracy`: a network's open-loop accuracy on an evaluation set (``evaluate_network``);
- :mod:`~hik_sim.learning.train`: the trainer (``python -m hik_sim.train``);
  :mod:`~hik_sim.learning.training_log`: its validation curve;
- :mod:`~hik_sim.learning.fast_network`: ``FastIKNetwork``, one pose through a trained network without torch.

The package imports nothing itself.
"""
