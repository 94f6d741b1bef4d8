# The Python stack doctor reports (doctor_probe.sh runs it with the worker's
# python3): one line, "versions PYTHON JAX JAXLIB LIBTPU", "-" for what is
# not installed.
import sys
from importlib import metadata


def v(*names):
    for n in names:
        try:
            return metadata.version(n)
        except Exception:
            pass
    return "-"


print("versions", sys.version.split()[0], v("jax"), v("jaxlib"), v("libtpu", "libtpu-nightly"))
