"""auxcheck: prove SGLang plugins honour the auxiliary-output contract.

Importing this package loads neither torch, libcst nor hypothesis, and the names
below are imported on first use (PEP 562), so ``auxcheck migrate`` and the pytest
plugin pay only for what they touch.
"""

import typing as _typing

from auxcheck._core import lazy as _lazy
from auxcheck._core.version import __version__

if _typing.TYPE_CHECKING:
    from auxcheck.errors import (
        AuxcheckError,
        ContractViolation,
        CudaGraphAliasError,
        GuardError,
        InvalidArgument,
        MovesTableError,
        SchedulerError,
    )
    from auxcheck.protocols import (
        CommittedTokens,
        CompositeDeviceAuxiliaryOutput,
        CompositeHostAuxiliaryOutput,
        DeviceAuxiliaryOutput,
        ForwardObserver,
        HostAuxiliaryOutput,
        PipelineParallelAuxiliaryOutput,
        PipelineParallelSamplingObserver,
        SamplingObserver,
        append_auxiliary_output,
    )
    from auxcheck.report import Finding, Report
    from auxcheck.rules import RULES, Rule
    from auxcheck.validate import (
        check_commits,
        check_device_output,
        check_device_outputs,
        check_forward_observer,
        check_host_output,
        check_sampling_observer,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "auxcheck.errors": ("AuxcheckError", "ContractViolation", "CudaGraphAliasError",
                        "GuardError", "InvalidArgument", "MovesTableError", "SchedulerError"),
    "auxcheck.protocols": ("CommittedTokens", "CompositeDeviceAuxiliaryOutput",
                           "CompositeHostAuxiliaryOutput", "DeviceAuxiliaryOutput",
                           "ForwardObserver", "HostAuxiliaryOutput", "PipelineParallelAuxiliaryOutput",
                           "PipelineParallelSamplingObserver", "SamplingObserver",
                           "append_auxiliary_output"),
    "auxcheck.report": ("Finding", "Report"),
    "auxcheck.rules": ("RULES", "Rule"),
    "auxcheck.validate": ("check_commits", "check_device_output", "check_device_outputs",
                          "check_forward_observer", "check_host_output",
                          "check_sampling_observer"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "RULES",
    "AuxcheckError",
    "CommittedTokens",
    "CompositeDeviceAuxiliaryOutput",
    "CompositeHostAuxiliaryOutput",
    "ContractViolation",
    "CudaGraphAliasError",
    "DeviceAuxiliaryOutput",
    "Finding",
    "ForwardObserver",
    "GuardError",
    "HostAuxiliaryOutput",
    "InvalidArgument",
    "MovesTableError",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "Report",
    "Rule",
    "SamplingObserver",
    "SchedulerError",
    "__version__",
    "append_auxiliary_output",
    "check_commits",
    "check_device_output",
    "check_device_outputs",
    "check_forward_observer",
    "check_host_output",
    "check_sampling_observer",
]


# Hidden from type checkers so that a misspelt name stays an error rather than Any.
if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy.exports(__name__, globals(), _HOME_OF, __all__)
