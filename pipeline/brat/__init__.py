"""brat tools: standoff reading and writing, configuration, validation, and the commands on collections.

The commands that work on brat collections: statistics, agreement, evaluation, harmonization, exports.
"""
