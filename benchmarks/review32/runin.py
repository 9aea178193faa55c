"""usage: runin.py ROOT SCRIPT [args...]: run SCRIPT with dpacct imported from ROOT."""

import subprocess
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from benchmarks.checkouts import checkout_env

root, script, *args = sys.argv[1:]
env = checkout_env(root)
env["PYTHONDONTWRITEBYTECODE"] = "1"
r = subprocess.run([sys.executable, script, *args], env=env)
sys.exit(r.returncode)
