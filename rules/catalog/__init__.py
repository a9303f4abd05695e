"""One rule per file, named by its id: ``PMxxx_what_it_does.py`` with ``RULE`` and its YAML
test cases ``PMxxx_what_it_does.yaml`` beside it."""
