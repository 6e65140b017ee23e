"""The exceptions auxcheck raises; every one derives from :class:`AuxcheckError`, but
:class:`Stopped`, which is a KeyboardInterrupt."""

from auxcheck._core.errors import (
    AuxcheckError,
    ContractViolation,
    CudaGraphAliasError,
    GuardError,
    InvalidArgument,
    MovesTableError,
    SchedulerError,
    Stopped,
)

__all__ = [
    "AuxcheckError",
    "ContractViolation",
    "CudaGraphAliasError",
    "GuardError",
    "InvalidArgument",
    "MovesTableError",
    "SchedulerError",
    "Stopped",
]
