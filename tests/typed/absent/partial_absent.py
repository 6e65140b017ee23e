"""With SGLang absent, modules the stubs do not cover are missing; the top level stays open."""

from typing import Any

import sglang
import sglang.srt.server_args  # type: ignore[import-not-found]
from typing_extensions import assert_type

assert_type(sglang.Engine, Any)
