"""``campaign serve``: the campaign in brat's own web client, behind the project's authentication and policy.

* [`brat_adapter`][pipeline.serve.brat_adapter]: brat's server code imported and patched (one module);
* [`policy`][pipeline.serve.policy]: who may do which brat action on which collection and document;
* [`sessions`][pipeline.serve.sessions]: logins, cookies, expiry, throttling;
* [`logtext`][pipeline.serve.logtext]: request values escaped and capped for log lines;
* [`app`][pipeline.serve.app]: the WSGI application; [`server`][pipeline.serve.server]: waitress around
  it;
* [`pages`][pipeline.serve.pages]: brat's page without inline code, the project's script for it
  (``client/campaign.js``), the guides rendered;
* [`suggest`][pipeline.serve.suggest]: the "Suggest relations" button (brat's ``tag``), answered in-process;
* [`history`][pipeline.serve.history] and [`backup`][pipeline.serve.backup]: versions of a document from the
  journal, and a consistent copy of the campaign.

The campaign's people, roles and hashed passwords ([`pipeline.campaign.users`][pipeline.campaign.users]) and
its journal of every write ([`pipeline.campaign.journal`][pipeline.campaign.journal]) belong to the campaign
layer: the team commands write them too, and a lower layer cannot import this one.
"""
