"""Live-cluster side of Mirage: the queue history, the decision service, the HTTP endpoint.

Shared by the user's chain watcher (:mod:`mirage.chain`) and the site daemon
(:mod:`mirage.agentd`).
"""
