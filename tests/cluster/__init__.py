"""A real Kubernetes control plane for tests: etcd, kube-apiserver, controllers, a gang
scheduler and kwok-simulated GPU nodes, built from Go modules (see README.md)."""
