"""Corpus assembly: filtering, sampling, brat export, annotation batches, run manifests."""
