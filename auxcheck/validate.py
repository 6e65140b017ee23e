"""Runtime validators: ``check_*`` functions returning a Report of every violation at once.

Objects are judged the way SGLang 0.5.23 runs them (see :mod:`auxcheck._runtime.loop`): methods
are called positionally (``copy_to_host(copy_tensor)``, ``consume(batch, commits)``), so
parameter names are free while arity is not; ``copy_to_host`` gets a ``copy_tensor``
that copies as SGLang's asynchronous copy does; each host output is consumed exactly
once, with the batch its device output was built for and commits built as the
scheduler builds them. Composites are judged per child. Plugin code that raises
becomes a finding with a short traceback, never a crash of the checker. torch is
imported only when a check runs.
"""

from auxcheck._core.report import (
    Finding,
    Report,
)
from auxcheck._runtime.validators import (
    check_commits,
    check_device_output,
    check_device_outputs,
    check_forward_observer,
    check_host_output,
    check_sampling_observer,
)

__all__ = [
    "Finding",
    "Report",
    "check_commits",
    "check_device_output",
    "check_device_outputs",
    "check_forward_observer",
    "check_host_output",
    "check_sampling_observer",
]
