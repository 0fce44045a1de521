"""The notebook side: the Python client (:mod:`.client`) and the jobs it hands back
(:mod:`.job`), the ``%pai`` magics (:mod:`.magics`) and the text tables they share with the
CLI (:mod:`.tables`). Nothing here imports tornado or IPython at import time, so
``import jupyter_pai`` stays light."""
