"""Sources: NCBI E-utilities and PubTator3 clients, PubMed XML, PubTator and BioC formats."""
