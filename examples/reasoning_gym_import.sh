# Two levels of a reasoning-gym task as environment files, then the gate over them.
spadegym import reasoning-gym:basic_arithmetic --levels 0,1 --out pool-rg/
spadegym validate pool-rg/
