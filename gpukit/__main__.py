"""``python -m gpukit`` is the ``gpukit`` command."""

import sys

from gpukit.cli import main

sys.exit(main())
