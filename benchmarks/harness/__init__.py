"""The benchmark harness: arms (tuners and fixed configs) measured side by side, interleaved
trial by trial through one shared ``Evaluator``, with the statistics and the report."""
