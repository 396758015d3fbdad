"""Running the tools from the end-to-end tests."""
import subprocess
import sys


def run(cmd):
    """Runs |cmd| (a list), echoing it; exits the test with its output when
    it fails. Returns its stdout and stderr, interleaved."""
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: exit status {r.returncode}\n{r.stdout}")
    return r.stdout
