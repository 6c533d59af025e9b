"""The glossary: the terms the chapters use, each with the number an experiment measured for it.

The page is ``docs/glossary.md``; its measured numbers come from the views in :mod:`.views`,
drawn from the other chapters' results files on the reference machine. The glossary measures
nothing itself and has no public API.
"""
