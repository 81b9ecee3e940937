"""``campaign serve``: the campaign in brat's own web client, behind the project's authentication and policy.

* [`brat_adapter`][pipeline.serve.brat_adapter]: brat's server code imported and patched (one module);
* [`policy`][pipeline.serve.policy]: who may do which brat action on which collection and document;
* [`sessions`][pipeline.serve.sessions]: logins, cookies, expiry, throttling;
* [`app`][pipeline.serve.app]: the WSGI application; [`server`][pipeline.serve.server]: waitress around
  it;
* [`users`][pipeline.serve.users]: people, roles and hashed passwords;
  [`journal`][pipeline.serve.journal]: every write, append-only and content-addressed;
  [`history`][pipeline.serve.history] and [`backup`][pipeline.serve.backup].
"""
