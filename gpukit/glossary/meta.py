"""What the glossary's views take from other chapters, through those chapters' public APIs.

Every name here comes from a chapter's ``meta`` module (plain data and arithmetic), so importing
this imports no GPU library and no kernel.
"""

from gpukit.gpu_anatomy import READ_VARIANTS, littles_law

NAME = "glossary"

__all__ = ["NAME", "READ_VARIANTS", "littles_law"]
