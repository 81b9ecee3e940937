"""The annotation campaign around the built corpus.

Blind phase-1 batches, progress, phase-2 review from both annotators' work, finalization,
homogenization helpers and the citable release.
"""
