#!/usr/bin/python3
"""`zerofold inspect --json` agrees with real torch on every checkpoint fixture.

Runs inspect_check.py (names, paths, dtypes, shapes, strides, offsets, nbytes, storage
sharing and referenced bytes against tests/torch_oracle.py) with the binary in $ZEROFOLD.
"""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ZEROFOLD = os.environ.get("ZEROFOLD", os.path.join(HERE, "..", "..", "build", "zerofold"))


class InspectAgreesWithTorch(unittest.TestCase):
    def test_every_fixture(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "inspect_check.py"), ZEROFOLD],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-2000:])
        self.assertRegex(r.stdout, r"\d+ files checked, 0 disagree")
        checked = int(r.stdout.strip().splitlines()[-1].split()[0])
        self.assertGreaterEqual(checked, 40)


if __name__ == "__main__":
    unittest.main()
