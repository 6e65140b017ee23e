"""With an untyped SGLang installed, the partial stubs defer uncovered modules to it."""

from typing import Any

import sglang
import sglang.srt.server_args  # type: ignore[import-untyped]
from typing_extensions import assert_type

assert_type(sglang.Engine, Any)
