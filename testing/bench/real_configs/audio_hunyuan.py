"""Families at real size. Values are from each model's published config.json (source in the comment)."""

REAL: dict = {}
PARAMS: dict = {}
