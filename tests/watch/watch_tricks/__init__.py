"""Gaming designers of the tests' own, unlike the benchmark's (``spadegym.designers.gaming``): the watch must
catch the mechanism, not recognise one set of levels."""
