"""Submitting jobs, written once for every surface — ``jupyter pai submit``, the Python
client on this machine and the server's REST API — so a job gets the same warnings and a
refused one the same error fields whoever submits it: a job file with its parameters
(:mod:`.jobs`) and a notebook run as a job (:mod:`.notebooks`).

Free of tornado and IPython, so the server, the notebook side and the CLI all use it.
Import the modules themselves: :mod:`.notebooks` loads nbformat, which only notebook jobs
need."""
