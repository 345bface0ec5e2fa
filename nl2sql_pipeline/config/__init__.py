"""The input kernel for configuration files: one strict YAML loader and one checker.

``yaml_loader`` reads YAML strictly (no duplicate keys) into mappings and lists that remember the line
of every key and item; ``checker`` walks such a value against declared fields and collects every
problem as ``<file>:<line>: <what is wrong> (<how to fix>)``.
"""
