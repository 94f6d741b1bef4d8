"""fakepod: a simulated Cloud TPU pod (API server, guest agents, TPU VM hosts as namespaces)."""
