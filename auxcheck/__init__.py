"""auxcheck: prove SGLang plugins honour the auxiliary-output contract.

Importing this package loads neither torch, libcst nor hypothesis: each heavy
dependency is imported by the capability that needs it.
"""

from auxcheck._version import __version__
from auxcheck.errors import (
    AuxcheckError,
    ContractViolation,
    CudaGraphAliasError,
    InvalidArgument,
    MovesTableError,
    SchedulerError,
)
from auxcheck.protocols import (
    CommittedTokens,
    CompositeDeviceAuxiliaryOutput,
    CompositeHostAuxiliaryOutput,
    DeviceAuxiliaryOutput,
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
    check_host_output,
    check_sampling_observer,
)

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
    "check_host_output",
    "check_sampling_observer",
]
