"""The HTTP base both services' apps start from: the app, its errors, ids, health, shared models.
Knows Flask and apiflask, never a route of either service; the Swagger UI's assets live here.

    api_app.py      the APIFlask app: /openapi.json, /docs (static/swagger-ui), the error shape
    http_errors.py  one error shape for every service, and its handlers
    json_only.py    a body read as JSON must say so (415)
    request_id.py   X-Request-Id: taken, made, echoed, sent on
    health.py       the health route and the dependency checks
    schemas.py      the request and answer models both services share
"""
