"""nl2sql-eval core library: cases, databases, sandboxed execution, policy, comparison, scoring.

The core never imports Dagster. Importing this package makes litellm use its bundled price map
so that nothing ever waits on the network at import time.
"""

import os as _os

_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("LITELLM_LOG", "ERROR")

__version__ = "0.1.0"
HARNESS_VERSION = "1"
