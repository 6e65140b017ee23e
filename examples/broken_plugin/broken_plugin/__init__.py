"""broken_plugin: one deliberate contract bug per class, each named with the code it triggers.

    auxcheck validate --path examples/broken_plugin broken_plugin.outputs:DoubleCopyOutput
"""

from broken_plugin.outputs import PLANTED_BUGS

__all__ = ["PLANTED_BUGS"]
