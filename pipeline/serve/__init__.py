"""Serving a campaign: brat behind the project's own authentication, authorization and journal."""
