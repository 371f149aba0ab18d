"""Rendering a session of the common model (histmig/core/model.py) for people and other programs:
Markdown (``show --format markdown`` and ``export --to markdown``), self-contained HTML, ATIF
trajectories, and the secrets redaction a shared export applies first (docs/export.md). Names no tool:
every tool's sessions arrive through its adapter already in the common model."""
