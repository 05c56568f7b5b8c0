"""What a process sees of itself, as JSON (tests/test_forkhz.py runs it forked and exec'd)."""

import json
import os
import sys

data = sys.stdin.read()
umask = os.umask(0)
os.umask(umask)
print(
    json.dumps(
        {
            "argv": sys.argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "path0": sys.path[0],
            "ppid": os.getppid(),
            "stdin": data,
            "umask": umask,
        }
    )
)
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
