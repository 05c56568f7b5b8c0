"""What a process sees of itself, as JSON (tests/test_forkhz.py runs it forked and exec'd)."""

import atexit
import json
import os
import sys
import threading

data = sys.stdin.read()
if os.environ.get("PROBE_LATE"):  # what runs after the script ends: a thread, then atexit
    atexit.register(print, "atexit ran")
    main = threading.main_thread()  # joined when the interpreter starts to leave
    threading.Thread(target=lambda: (main.join(), print("thread ran", flush=True))).start()
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
code = os.environ.get("PROBE_EXIT", "0")
sys.exit(int(code) if code.isdigit() else code)
