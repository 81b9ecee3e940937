"""``campaign serve``: the campaign in brat's own web client, behind the project's authentication and policy.

* :mod:`~pipeline.serve.brat_adapter`: brat's server code imported and patched (one module);
* :mod:`~pipeline.serve.policy`: who may do which brat action on which collection and document;
* :mod:`~pipeline.serve.sessions`: logins, cookies, expiry, throttling;
* :mod:`~pipeline.serve.app`: the WSGI application; :mod:`~pipeline.serve.server`: waitress around it;
* :mod:`~pipeline.campaign.users`: people, roles and hashed passwords; :mod:`~pipeline.campaign.journal`: every
  write, append-only and content-addressed; :mod:`~pipeline.serve.history` and :mod:`~pipeline.serve.backup`.
"""
