"""capture_plugin: publishes each request's last hidden-state row as streaming metadata.

A worked example of SGLang's auxiliary-output contract that auxcheck validates clean:

    auxcheck validate --path examples/capture_plugin capture_plugin.outputs:make_device_output
"""

from capture_plugin.outputs import (
    HiddenStateDeviceOutput,
    HiddenStateHostOutput,
    HiddenStateObserver,
    make_device_output,
    make_host_output,
    make_observer,
)

__all__ = [
    "HiddenStateDeviceOutput",
    "HiddenStateHostOutput",
    "HiddenStateObserver",
    "make_device_output",
    "make_host_output",
    "make_observer",
]
