"""Remote GPU kernels: a kernel provisioner that runs the kernel as a job of kind
``kernel`` on the configured backend (``provisioner``), the launcher inside that job
(``launcher``), and kernelspecs that select it (``kernelspec``)."""
