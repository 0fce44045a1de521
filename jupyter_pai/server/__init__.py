"""The Jupyter server extension (REST API); a thin shell over jupyter_pai.backends."""
