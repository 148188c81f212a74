"""Infrastructure both services use: web/, database/, config/, and the modules beside them.
It knows nothing of orders or stock; each service and the tooling import it, it imports neither.
"""
