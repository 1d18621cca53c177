"""Where the fixtures are, and which of their files are checkpoints, for the interop tests."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
NOT_CHECKPOINTS = (".json", ".md", ".log", ".py", ".sh", "/latest", "/latest_universal", ".swp")
# Folders of checkpoint fixtures; the others (pickle/, zip/, ...) hold unit-test inputs.
CHECKPOINT_FOLDERS = ("torch", "hf", "deepspeed", "bad")


def checkpoint_files():
    """Every file under fixtures/ except metadata, as sorted paths relative to FIXTURES."""
    out = []
    for dirpath, _, files in os.walk(FIXTURES):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), FIXTURES)
            if rel.split(os.sep)[0] not in CHECKPOINT_FOLDERS:
                continue
            if not rel.endswith(NOT_CHECKPOINTS) and "__pycache__" not in rel:
                out.append(rel)
    return sorted(out)


def fixture(rel):
    return os.path.join(FIXTURES, rel)
