"""NLP stages: sentences, pre-annotation (PubTator, local lexicon), alignment, composite extension, type mapping."""
