"""Adapters that put :class:`advcore.Monitor` inside trainers.

* :mod:`advcore.integrations.trl`: a ``transformers.TrainerCallback`` for TRL's ``GRPOTrainer``
  (imports transformers when the callback class is first asked for, never on ``import advcore``).
* :mod:`advcore.integrations.verl`: one function from verl's batch to ``advcore/...`` metrics
  (needs neither verl nor torch to import).
"""
