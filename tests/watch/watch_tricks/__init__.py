"""Gaming designers of the tests' own, unlike the benchmark's (``spadegym_testing.gaming``): the watch must
catch the mechanism, not recognise one set of levels."""
