"""E15: Python's subprocess runs /bin/sh (the most common thing LLM code
tries): the exec policy allows only the interpreter and a few helpers."""
import subprocess, sys

try:
    subprocess.run(["/bin/sh", "-c", "echo won > marker"], check=False)
    print("RESULT ok", flush=True)
except PermissionError:
    print("RESULT EACCES", flush=True)
except OSError as e:
    print("RESULT", e.__class__.__name__, e.errno, flush=True)
print("AFTER", flush=True)
