"""The HTTP service of distributed runs: enqueue batches, follow them, read runs and results.

``uvicorn --factory structured_agents.api.app:create_app`` serves it; database and broker come from
``SA_DATABASE_URL`` and ``SA_REDIS_URL``, who may call it and what batches may read from
``SA_API__*`` (:class:`~structured_agents.settings.ApiSettings`): it does not start without
``SA_API__TOKEN``. The OpenAPI document is at ``/openapi.json``.
"""
