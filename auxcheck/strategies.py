"""Hypothesis strategies for the auxiliary-output contract, and the settings profiles.

Every strategy is a plural noun returning a ``SearchStrategy`` with keyword-only
options. The leaf outputs are :class:`RecordingDeviceOutput` objects, which record
their copies and consumes; pass ``leaves=`` (a strategy of your own device outputs)
to mix your outputs in, wrapped so that they are recorded too.

This module imports torch and hypothesis; ``import auxcheck`` does not import it.
"""

from auxcheck._properties.strategies import (
    PROFILES,
    CommitStep,
    CommitStream,
    Growth,
    advance,
    append_sequences,
    auxiliary_outputs,
    batches,
    commit_streams,
    committed_tokens,
    device_outputs,
    growths,
    host_outputs,
    load_profile,
    register_profiles,
    resolve_profile,
    settings_for,
    tensors,
)
from auxcheck._runtime.recording import (
    Appended,
    ConsumeRecord,
    CopyRecord,
    Operand,
    RecordingDeviceOutput,
    RecordingHostOutput,
    build_operand,
    count_leaves,
    operand_leaves,
)
from auxcheck._runtime.scheduler import FakeBatch as FakeBatch  # noqa: PLC0414

# FakeBatch is public outside __all__, as it was (tests import it from here); ``as`` marks the
# re-export for mypy --strict.
__all__ = [
    "PROFILES",
    "Appended",
    "CommitStep",
    "CommitStream",
    "ConsumeRecord",
    "CopyRecord",
    "Growth",
    "Operand",
    "RecordingDeviceOutput",
    "RecordingHostOutput",
    "advance",
    "append_sequences",
    "auxiliary_outputs",
    "batches",
    "build_operand",
    "commit_streams",
    "committed_tokens",
    "count_leaves",
    "device_outputs",
    "growths",
    "host_outputs",
    "load_profile",
    "operand_leaves",
    "register_profiles",
    "resolve_profile",
    "settings_for",
    "tensors",
]
