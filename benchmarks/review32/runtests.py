"""usage: runtests.py ROOT [pytest args...]: pytest in checkout ROOT, dpacct imported from ROOT."""

import subprocess
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from benchmarks.checkouts import checkout_env

root, *args = sys.argv[1:]
env = checkout_env(root)
env["PYTHONDONTWRITEBYTECODE"] = "1"
r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], env=env,
                   cwd=root)
sys.exit(r.returncode)
