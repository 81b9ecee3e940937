"""The project's shipped configuration files, installed as the package data of ``pipeline.config``.

This file only marks the directory as a package for ``pyproject.toml``'s ``package-dir`` mapping;
``pipeline.resources`` gives the files' paths.
"""
