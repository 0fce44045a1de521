"""The notebook side: the Python client (:mod:`.client`), the ``%pai`` magics
(:mod:`.magics`) and notebooks run as jobs. Nothing here imports tornado or IPython at
import time, so ``import jupyter_pai`` stays light."""
