"""The collapse lab (SPEC section 8): reproduce each collapse regime in a small, inspectable setting.

A linear softmax policy over short action sequences (:mod:`advcore.lab.policy`) is trained on a
CPU in about a second by real policy-gradient updates (:mod:`advcore.lab.run`) with a chosen
estimator (:mod:`advcore.lab.estimators`: GRPO, Dr. GRPO, RLOO, REINFORCE++, DAPO, PPO with GAE),
with at most one fault switched on (:mod:`advcore.lab.faults`), and recorded in the formats real
trainers write, with its ground truth (:mod:`advcore.lab.record`). A mitigation
(:mod:`advcore.lab.mitigations`) is a hypothesis about a fault's cause; :func:`compare` tests it
against the fault alone at matched budgets over several seeds.
"""

from __future__ import annotations

from advcore.lab.compare import Comparison, compare
from advcore.lab.estimators import ESTIMATORS, Estimator
from advcore.lab.faults import FAULTS, SLICE_FAULTS, Fault, Setting
from advcore.lab.mitigations import MITIGATIONS, Mitigation
from advcore.lab.record import FORMATS, write
from advcore.lab.run import LabConfig, LabResult, run

__all__ = ["ESTIMATORS", "FAULTS", "FORMATS", "SLICE_FAULTS", "MITIGATIONS", "Comparison", "Estimator", "Fault", "LabConfig",
           "LabResult", "Mitigation", "Setting", "compare", "run", "write"]
