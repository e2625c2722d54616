"""The HTTP service of distributed runs: enqueue batches, follow them, read runs and results.

``uvicorn --factory structured_agents.api.app:create_app`` serves it; database and broker come from
``SA_DATABASE_URL`` and ``SA_REDIS_URL``. The OpenAPI document is at ``/openapi.json``.
"""
